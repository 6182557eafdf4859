"""Task functions for the executor tests (module-level, so that Ray workers import them)."""

from __future__ import annotations

import os
from pathlib import Path


def square(x: int) -> int:
    """``x * x``."""
    return x * x


def threads_seen() -> int:
    """Torch's intra-op threads inside the task."""
    import torch

    return torch.get_num_threads()


def crash_once(marker: str, value: int) -> int:
    """Kill the worker process the first time (no marker yet), return ``value`` after."""
    path = Path(marker)
    if not path.exists():
        path.write_text("crashed")
        os._exit(1)
    return value


def oserror_once(marker: str, value: int) -> int:
    """Raise ``OSError`` the first time (a transient error), return ``value`` after."""
    path = Path(marker)
    if not path.exists():
        path.write_text("failed")
        raise OSError("the shared folder went away for a moment")
    return value


def always_fails(value: int) -> int:
    """Raise ``ValueError`` naming ``value``: a deterministic failure."""
    raise ValueError(f"no good value: {value}\nsecond line of the message")


def count_calls(marker: str) -> int:
    """Append a line to ``marker`` per call and return how many calls there were."""
    path = Path(marker)
    with open(path, "a") as handle:
        handle.write("call\n")
    return len(path.read_text().splitlines())


def fails_counting(marker: str, value: int) -> int:
    """Count the call in ``marker``, then fail as :func:`always_fails` does."""
    count_calls(marker)
    return always_fails(value)


def crash_always(marker: str) -> int:
    """Count the call in ``marker``, then kill the worker process."""
    count_calls(marker)
    os._exit(1)
