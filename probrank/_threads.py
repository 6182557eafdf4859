"""One place that sizes every thread pool of a ``probrank`` process.

A process has several pools that each default to "every core": torch's intra-op (OpenMP) and
inter-op pools, the BLAS of numpy and scipy (OpenBLAS or MKL), scikit-learn's OpenMP loops, and
the Rust pool of Hugging Face tokenizers. Left alone, each of them sizes itself from the
machine, not from the CPUs this process may use (``taskset``, cgroup quotas), and OpenMP
workers spin while they wait for each other: on a small machine shared with other jobs, a
spinning worker takes the core from the worker it waits for, and tiny matrix operations run many
times slower (the issue that added this module measured the demo at 143-244 s instead of 11 s on
a busy 2-core machine; ``benchmarks/demo_load.py`` measures it).

:func:`configure_threads` gives every pool the same size and makes idle OpenMP workers sleep
instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, ``KMP_BLOCKTIME=0``, unless the user set
them). The CLI calls it before importing numpy or torch, so that the environment variables the
libraries read at start-up take effect; :func:`configure_torch` then sizes torch's pools, for
the commands that use torch. The default is :func:`default_threads`: ``$PROBRANK_THREADS`` or
``$OMP_NUM_THREADS`` when set, else the CPUs this process may run on (:func:`usable_cpus`).
:func:`thread_scope` does the same for a block and puts the previous settings back after it.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

__all__ = [
    "THREAD_ENV_VARS",
    "configure_threads",
    "configure_torch",
    "default_threads",
    "parse_threads",
    "thread_scope",
    "torch_threads",
    "usable_cpus",
]

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
)
"""Variables the native libraries read once, when they load: OpenMP (torch, scikit-learn),
MKL, OpenBLAS, BLIS, Accelerate, numexpr and Rayon (the tokenizers' pool)."""

WAIT_POLICY_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
"""Idle OpenMP workers (GNU and Intel runtimes) sleep instead of spinning; set only where the
user has not set them."""

_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup v2 CPU quota.

    ``os.cpu_count()`` counts the machine's CPUs, which a container or ``taskset`` may not
    give this process.
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    try:
        quota, period = _CGROUP_CPU_MAX.read_text(encoding="ascii").split()[:2]
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def parse_threads(value: object, source: str = "threads") -> int:
    """``value`` as a positive thread count (an int, or a string of ASCII digits).

    Raises:
        InputDataError: anything else; the message names ``source``.
    """
    if isinstance(value, bool):
        raise InputDataError(f"{source} must be a positive integer, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            raise InputDataError(f"{source} must be a positive integer, got {value!r}")
        value = int(text)
    if not isinstance(value, int) or value < 1:
        raise InputDataError(f"{source} must be a positive integer, got {value!r}")
    return value


def default_threads() -> int:
    """The thread count a command uses without ``--threads``.

    ``$PROBRANK_THREADS``, else ``$OMP_NUM_THREADS`` (a user's explicit choice for OpenMP
    programs), else :func:`usable_cpus`.

    Raises:
        InputDataError: ``$PROBRANK_THREADS`` is set but not a positive integer.
    """
    if os.environ.get("PROBRANK_THREADS"):
        return parse_threads(os.environ["PROBRANK_THREADS"], "$PROBRANK_THREADS")
    try:
        return parse_threads(os.environ.get("OMP_NUM_THREADS", ""), "$OMP_NUM_THREADS")
    except InputDataError:  # unset, or a value such as "4,2" that is not ours to judge
        return usable_cpus()


def configure_threads(threads: int | None = None) -> int:
    """Size every thread pool of this process to ``threads`` (default :func:`default_threads`).

    Sets :data:`THREAD_ENV_VARS` (read by the native libraries when they load, so call this
    before numpy or torch is imported) and, where unset, :data:`WAIT_POLICY_ENV`; turns off
    the tokenizers' own parallelism and, for the
    libraries already loaded, resizes their pools now (torch through :func:`configure_torch`,
    BLAS and OpenMP through threadpoolctl).

    Args:
        threads: Threads per pool; ``None`` for :func:`default_threads`.

    Returns:
        The thread count set.

    Raises:
        InputDataError: ``threads`` is not a positive integer.
    """
    count = default_threads() if threads is None else parse_threads(threads)
    _configure(count)
    return count


def _configure(count: int) -> Any:
    """Set the environment and resize the loaded pools; returns threadpoolctl's limiter (its
    ``restore_original_limits`` undoes the BLAS/OpenMP part) or None."""
    for name in THREAD_ENV_VARS:
        os.environ[name] = str(count)
    for name, value in WAIT_POLICY_ENV.items():
        os.environ.setdefault(name, value)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    if "torch" in sys.modules:
        configure_torch(count)
    if "numpy" not in sys.modules:
        return None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - installed with scikit-learn
        return None
    return threadpool_limits(count)


def configure_torch(threads: int) -> None:
    """Set torch's intra-op and inter-op pools to ``threads``.

    The inter-op pool can be sized only before its first use; later calls leave it as it is.
    """
    import torch

    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != threads:
        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:  # already started: torch allows setting it once
            pass


_SCOPED_ENV = (*THREAD_ENV_VARS, *WAIT_POLICY_ENV, "TOKENIZERS_PARALLELISM")


@contextmanager
def thread_scope(threads: int | None = None, *, torch: bool = False) -> Iterator[int]:
    """:func:`configure_threads` for a block; the environment and torch's intra-op threads are
    put back afterwards (so that calling the CLI's ``main`` in a test leaves no trace).

    Args:
        threads: Threads per pool; ``None`` for :func:`default_threads`.
        torch: Also size torch's pools (:func:`configure_torch`), importing torch.

    Yields:
        The thread count set.
    """
    saved_env = {name: os.environ.get(name) for name in _SCOPED_ENV}
    saved_torch = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
    limiter = None
    try:
        count = default_threads() if threads is None else parse_threads(threads)
        limiter = _configure(count)
        if torch:
            configure_torch(count)
        yield count
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if saved_torch is not None:
            sys.modules["torch"].set_num_threads(saved_torch)


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Set torch's intra-op threads for a block and restore the caller's setting after.

    On a small machine shared with other jobs, one thread is several times faster for small
    models than two (OpenMP workers wait for each other on contended cores).

    Raises:
        InputDataError: ``threads`` is not a positive integer.
    """
    import torch as _torch

    count = parse_threads(threads)
    previous = _torch.get_num_threads()
    _torch.set_num_threads(count)
    try:
        yield
    finally:
        _torch.set_num_threads(previous)
