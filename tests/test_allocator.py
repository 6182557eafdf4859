"""glibc's malloc keeps freed memory for the short commands (:mod:`probrank._allocator`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from probrank import _allocator

PROBE = """
import ctypes, sys
from probrank._allocator import _glibc, keep_freed_memory
if not _glibc():
    print("not glibc"); sys.exit(0)
big = 64 << 20

class Info(ctypes.Structure):  # glibc's struct mallinfo2 (2.33+)
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)
info = getattr(libc, "mallinfo2", None)
if info is None:
    print("no mallinfo2"); sys.exit(0)
info.restype = Info
print(sys.argv[1] == "tuned" and keep_freed_memory())
mapped = info().hblks
block = libc.malloc(big)
print(info().hblks - mapped)  # served by its own mmap?
libc.free(block)
print(info().arena >= big)  # kept in the heap after free
"""


def _probe(mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_a_tuned_process_keeps_a_large_freed_block_in_its_heap() -> None:
    plain = _probe("plain")
    if plain[0] in ("not", "no"):
        pytest.skip(" ".join(plain))
    # glibc's default: a 64 MiB block is mmapped, and unmapped when freed
    assert plain == ["False", "1", "False"]
    # tuned: it comes from the heap, which keeps it for the next allocation
    assert _probe("tuned") == ["True", "0", "True"]


def test_nothing_is_done_without_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_allocator, "_glibc", lambda: False)
    assert _allocator.keep_freed_memory() is False
