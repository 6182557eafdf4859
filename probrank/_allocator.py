"""Let a short batch command keep the memory it frees: glibc malloc options for ``probrank eval``.

numpy takes its arrays from the C library's ``malloc``. glibc serves a large block by ``mmap``
and gives it back to the kernel when it is freed (and trims the heap's top above a threshold),
so the next temporary of the same size is page-faulted in again, each 4 kB page zeroed by the
kernel: reading and evaluating many runs makes and drops hundreds of such arrays. For the 63
TREC DL 2021 runs one ``probrank eval`` took 30,900 minor page faults, 23,300 with the options
below, and about 0.1 s of its 0.3-0.5 s was system time (``benchmarks/eval_speed.py`` prints
both processes' faults). :func:`keep_freed_memory` raises the ``mmap`` threshold and the trim
threshold to 1 GiB, so freed blocks stay in the heap for the next allocation, and pads the
heap's growth by 64 MiB. The memory a command frees is then kept until it exits: fine for a
command of seconds, not for a library in someone else's process, so only
:func:`probrank.cli.console` calls it, for the short commands of
:data:`probrank.cli.QUICK_EXIT`. No Python library exposes ``mallopt``; it is one ``ctypes``
call per option. Elsewhere than glibc (musl, macOS, Windows) nothing is done.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["keep_freed_memory"]

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
"""``mallopt`` parameters (glibc's ``malloc.h``)."""

KEPT = 1 << 30
PAD = 64 << 20


def keep_freed_memory() -> bool:
    """Tune glibc's malloc to keep freed memory for reuse (see the module docstring).

    Returns:
        True when every option was set (glibc), False elsewhere.
    """
    if not _glibc():
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    options = ((M_MMAP_THRESHOLD, KEPT), (M_TRIM_THRESHOLD, KEPT), (M_TOP_PAD, PAD))
    return all(mallopt(option, value) == 1 for option, value in options)


def _glibc() -> bool:
    """Whether the C library is glibc (``confstr``: no scan of the executable, unlike
    ``platform.libc_ver``)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False
