"""The trec_eval 10.0 reference binaries, built once per test session from
``../shared/reference`` (released, and with round-trip ``%.17g`` printing) into pytest's cache.

Without a C compiler or the source tarball the tests that need them skip with a message;
under ``CI=true`` (where ``make test`` runs with gcc and make) they fail instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from probrank.evaluation.trec_eval.reference import build_reference
from probrank.exceptions import InputDataError


def _binary(request: pytest.FixtureRequest, precise: bool) -> Path:
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    folder = (
        cache.mkdir("probrank-trec_eval")
        if cache is not None
        else Path.home() / ".cache" / "probrank-trec_eval"
    )
    try:
        return build_reference(folder, precise=precise)
    except InputDataError as exc:
        message = f"trec_eval 10.0 reference not available: {exc}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def trec_eval(request: pytest.FixtureRequest) -> Path:
    """The trec_eval 10.0 binary as released (prints ``%6.4f``)."""
    return _binary(request, precise=False)


@pytest.fixture(scope="session")
def trec_eval_precise(request: pytest.FixtureRequest) -> Path:
    """trec_eval 10.0 printing every value with ``%.17g`` (compared bit for bit)."""
    return _binary(request, precise=True)
