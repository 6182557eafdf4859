"""Limits of ``probrank serve`` shared by the server, its preparation and the judging service
(a module of its own, importing nothing, so that the light server module and the heavy judging
module both read it without importing each other)."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_SESSIONS"]

DEFAULT_MAX_SESSIONS = 100
"""Annotator sessions kept in memory (``--max-sessions``; see :mod:`~probrank.serve.judging`):
about 4 MB each at 45 candidates with the Laplace posterior (``benchmarks/serve_latency.py
--scale``), so about 400 MB; enough for 50 annotators on two questions each at a time. The
least recently used one beyond it is dropped and rebuilt from the database when asked for."""
