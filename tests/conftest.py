"""Shared fixtures: per-test seeding and the location of ../shared/data."""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from probrank.data.paths import shared_data_dir


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread in every test: pytest-xdist already runs one worker per core, and
    oversubscribed cores made small linear algebra (``cholesky``, small ``matmul``) up to 80x
    slower on a busy machine. Set per test, so that a test whose code changes the thread count
    (an experiment's ``threads`` option) does not slow down the ones after it."""
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed() -> None:
    """Seed every RNG before each test (never at import)."""
    random.seed(0)
    np.random.seed(0)  # noqa: NPY002 -- libraries (e.g. PairwiseGP) use the legacy global RNG
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$PROBRANK_DATA``): fails under ``CI=true`` when missing,
    skips elsewhere."""
    path = shared_data_dir(must_exist=False)
    if not path.is_dir():
        message = f"shared data missing at {path} (set PROBRANK_DATA)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


# -- a closed capture file must not fail every later test --------------------------------------


def _capture_closed(config: pytest.Config) -> bool:
    """Whether pytest's global capture file (what ``sys.stdout`` / ``sys.stderr`` are between
    fixtures) has been closed."""
    capman = config.pluginmanager.getplugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None)
    if multi is None:
        return False
    streams = [getattr(multi, name, None) for name in ("out", "err")]
    return any(getattr(getattr(s, "tmpfile", None), "closed", False) for s in streams)


def _holders(files: list[object], exclude: list[object]) -> str:
    """What refers to ``files`` besides pytest's capture objects (types and a short repr)."""
    import gc

    skip = {id(x) for x in exclude}
    found = []
    for f in files:
        for ref in gc.get_referrers(f):
            if id(ref) in skip or type(ref).__module__.startswith("_pytest"):
                continue
            owner = ref
            if isinstance(ref, dict):  # an instance's __dict__: name its owner
                owners = [o for o in gc.get_referrers(ref) if getattr(o, "__dict__", None) is ref]
                owner = owners[0] if owners else ref
            found.append(f"{type(owner).__module__}.{type(owner).__qualname__}: {repr(owner)[:80]}")
    return "; ".join(found[:8]) or "none"


def _restart_capture_if_closed(item: pytest.Item) -> None:
    """Start a fresh global capture when the old one's file was closed, and say so.

    CI once saw every test after one on a pytest-xdist worker error with "I/O operation on
    closed file" when capturing resumed: the worker's global capture file had been closed
    between two test phases (by a finaliser or a thread; no test closes ``sys.stdout``, and
    it recurred once in seven full local runs, at the same test). One closed file then failed
    700 unrelated tests and hid the real results. Checked before and after every phase
    (:func:`_phase`), so the phase runs with a fresh capture; the warning names the test,
    what still holds the closed file and the live threads, to find the cause.
    """
    if not _capture_closed(item.config):
        return
    capman = item.config.pluginmanager.getplugin("capturemanager")
    old = capman._global_capturing
    holders = _holders([old.out.tmpfile, old.err.tmpfile], exclude=[old.out, old.err])
    for name, capture in (("stdout", old.out), ("stderr", old.err)):
        saved = getattr(getattr(capture, "syscapture", None), "_old", None)
        if saved is not None and not getattr(saved, "closed", True):
            setattr(sys, name, saved)  # what pytest found before it captured
        if getattr(capture, "targetfd_save", None) is not None:
            os.dup2(capture.targetfd_save, capture.targetfd)
    capman._global_capturing = None
    capman.start_global_capturing()
    capman.suspend_global_capture()
    item.warn(
        pytest.PytestWarning(
            "pytest's global capture file was found closed at this test phase (by a finaliser "
            "or a thread; its captured output is lost); capturing was restarted; objects that "
            f"still hold it: {holders}; live threads: "
            + ", ".join(sorted(t.name for t in threading.enumerate()))
        )
    )


def _phase(item: pytest.Item) -> Iterator[None]:
    """Run one test phase with a working global capture (see
    :func:`_restart_capture_if_closed`). A closure *during* the phase breaks only pytest's
    reading of the captured output after the test code ran: the phase keeps its own outcome
    (the test's exception, if it raised one), the lost output is reported in a warning."""
    _restart_capture_if_closed(item)
    try:
        return (yield)
    except ValueError as exc:
        if "closed file" not in str(exc) or not _capture_closed(item.config):
            raise
        _restart_capture_if_closed(item)
        if exc.__context__ is not None:  # the phase's own error, raised before the capture's
            raise exc.__context__ from None
        return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> object:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    return (yield from _phase(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    return (yield from _phase(item))
