"""Opening the executor an :class:`~probrank.executors.base.ExecutorSettings` describes.

Apart from :mod:`probrank.executors.base` so that the executors, which import the interface,
are not imported by it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from probrank.executors.base import Executor, ExecutorKind, ExecutorSettings

__all__ = ["open_executor"]


@contextmanager
def open_executor(settings: ExecutorSettings | None = None) -> Iterator[Executor]:
    """The executor ``settings`` describe, for the block (a Ray instance it started is shut
    down at the end).

    Raises:
        MissingExtraError: Ray is asked for but not installed (names ``probrank[ray]``).
        InputDataError: the Ray cluster at the address cannot be reached.
    """
    settings = settings or ExecutorSettings()
    if settings.kind is ExecutorKind.LOCAL:
        from probrank.executors.local import LocalExecutor

        yield LocalExecutor()
        return
    from probrank.executors.ray_cluster import ray_session
    from probrank.executors.ray_tasks import RayExecutor

    with ray_session(settings.address, num_cpus=settings.num_cpus):
        yield RayExecutor(max_retries=settings.max_retries)
