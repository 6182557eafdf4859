"""Turns at the CPU for the judging service's threads: one at a time, first come first served.

A judgement round is mostly Python and small tensor operations that hold the GIL; threads
that compute rounds at the same time only take turns at random (the GIL is handed over every
few milliseconds to whichever thread the system wakes), so every round is stretched and the
unlucky ones wait longest: the long tail of many annotators judging at once. :class:`Turns`
gives the CPU-bound part of a round to one thread at a time (or ``width``), in the order the
threads asked; a thread waiting for its commit's fsync holds no turn, so commits overlap
the computing and group together (:meth:`~probrank.serve.store.JudgementStore.record`).

Lock order: a thread takes a session's lock before its turn, never the other way round, and
holds no turn while it waits for a commit.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType

__all__ = ["Turns"]


class Turns:
    """A lock that up to ``width`` threads hold at once, granted in the order asked.

    Use ``with turns:``; a waiting thread is woken only when its turn is handed to it (no
    stampede, no overtaking).

    Args:
        width: Threads that may hold a turn at the same time.

    Raises:
        ValueError: ``width`` is not a positive integer.
    """

    def __init__(self, width: int = 1) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, got {width!r}")
        self.width = width
        self._mutex = threading.Lock()
        self._holders = 0
        self._waiting: deque[threading.Lock] = deque()

    @property
    def waiting(self) -> int:
        """Threads waiting for a turn now."""
        return len(self._waiting)

    def acquire(self) -> None:
        """Wait for a turn (behind every thread that asked before)."""
        with self._mutex:
            if self._holders < self.width and not self._waiting:
                self._holders += 1
                return
            gate = threading.Lock()
            gate.acquire()
            self._waiting.append(gate)
        gate.acquire()  # released by the thread that hands its turn over

    def release(self) -> None:
        """End this thread's turn: the first waiting thread gets it."""
        with self._mutex:
            if self._waiting:
                self._waiting.popleft().release()  # handed over: the count stays
            elif self._holders > 0:
                self._holders -= 1
            else:
                raise RuntimeError("Turns.release() without a turn held")

    def __enter__(self) -> Turns:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
