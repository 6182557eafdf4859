"""Keep the cyclic garbage collector off the objects a server builds once at start-up.

A prepared ``probrank serve`` holds a few hundred thousand long-lived objects (torch,
GPyTorch, BoTorch and their modules, the ranker, the questions' features). CPython's full
collection walks all of them, inside whichever judgement round happened to allocate at that
moment, while every other annotator's round waited behind it: in
``benchmarks/serve_latency.py`` one came in each run's 200 ``service`` rounds, whose max was
138-146 ms against a p99 under 10 ms. :func:`freeze_startup_objects` does what Python's
documentation of ``gc.freeze()`` advises for a long start-up: one collection, then every
survivor moves to the permanent generation, which no collection walks (the ``service`` max
fell to 6-29 ms in five runs; docs/guide/serve.md). Objects made later (sessions, requests)
are collected as before.

The server owns its process only while it runs: :func:`heap_thawed_on_exit` gives the frozen
objects back to the collector when it stops, unless the process had frozen objects of its own
before (then they stay as they were).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["freeze_startup_objects", "heap_thawed_on_exit"]


def freeze_startup_objects() -> None:
    """Collect once, then move every object alive now out of the collector's sight
    (``gc.freeze()``)."""
    gc.collect()
    gc.freeze()


@contextmanager
def heap_thawed_on_exit() -> Iterator[None]:
    """Within: a server may call :func:`freeze_startup_objects`; on exit the permanent
    generation goes back to the collector (``gc.unfreeze()``) if it was empty on entry."""
    frozen_before = gc.get_freeze_count()
    try:
        yield
    finally:
        if frozen_before == 0:
            gc.unfreeze()
