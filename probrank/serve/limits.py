"""Limits of ``probrank serve`` shared by the server, its preparation and the judging service
(a module of its own, importing nothing, so that the light server module and the heavy judging
module both read it without importing each other)."""

from __future__ import annotations

__all__ = ["CPU_TURNS", "DEFAULT_MAX_SESSIONS", "ROUND_WORKERS"]

DEFAULT_MAX_SESSIONS = 100
"""Annotator sessions kept in memory (``--max-sessions``; see :mod:`~probrank.serve.judging`):
about 4 MB each at 45 candidates with the Laplace posterior (``benchmarks/serve_latency.py
--scale``), so about 400 MB; enough for 50 annotators on two questions each at a time. The
least recently used one beyond it is dropped and rebuilt from the database when asked for."""

ROUND_WORKERS = 16
"""Worker threads that may be inside the judging service at once (judgement rounds, states,
rankings); further requests wait their turn in arrival order (first in, first out). Most of
them wait: for their commit's fsync (several commit together) or for their turn at the CPU
(:data:`CPU_TURNS`)."""

CPU_TURNS = 1
"""Threads that compute (posterior updates, next pairs, states) at the same time, in the order
they asked (:class:`~probrank.serve.turns.Turns`). The work is CPU-bound and holds the GIL
most of the time: more threads computing at once only take turns at random, which made the
tail of 20 annotators judging at once long (``benchmarks/serve_latency.py --annotators 1
20``)."""
