"""A local Ray instance with 2 CPUs for the whole session (skipped, with a message, where Ray
is missing or cannot start; under ``CI=true`` that is a failure instead)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def skip_or_fail(message: str) -> None:
    """Skip the test, or fail it under ``CI=true`` (where the Ray tests must run)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[Any]:
    """``ray``, initialised with 2 CPUs and no dashboard; shut down after the session.

    The workers get the repository on their ``PYTHONPATH`` so that tasks may be functions of the
    test modules. Executors find the instance running and use it as it is.
    """
    try:
        import ray
    except ImportError:
        skip_or_fail("Ray is not installed: pip install 'probrank[ray]'")
    if ray.is_initialized():  # pragma: no cover - another fixture or a notebook started it
        yield ray
        return
    # Ray's session files in a folder of the test's own (short: Ray's socket paths are
    # limited), removed after, not in /tmp/ray beside other Ray instances of the machine
    root = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = root
    try:
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
                runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
            )
        except Exception as error:  # pragma: no cover - depends on the machine
            skip_or_fail(f"Ray cannot start here: {type(error).__name__}: {error}")
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if previous is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = previous
        shutil.rmtree(root, ignore_errors=True)
