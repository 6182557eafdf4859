"""The Ray executor: every task a Ray task, gathered in task order, with retries.

Each :class:`~probrank.executors.base.Task` becomes one remote call of
:func:`~probrank.executors.base.run_task` that requests ``task.threads`` CPUs (and one GPU when
``task.gpu`` and the cluster has GPUs). A task whose worker or node dies, or that raises
``OSError`` or ``MemoryError``, is retried up to ``max_retries`` times (Ray's ``max_retries``
and ``retry_exceptions``); any other exception, or a retried failure that persists, fails the
job with :class:`~probrank.executors.base.TaskFailedError` naming the task and its error in one
line, and the tasks still pending are cancelled. A progress bar counts finished tasks
(tqdm over completed futures, ``ray.wait``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from probrank._progress import progress_bar
from probrank.executors.base import (
    DEFAULT_MAX_RETRIES,
    ExecutorKind,
    Task,
    TaskFailedError,
    run_task,
)
from probrank.executors.ray_cluster import cluster_gpus, import_ray

__all__ = ["RETRIED_EXCEPTIONS", "RayExecutor"]

RETRIED_EXCEPTIONS: tuple[type[BaseException], ...] = (OSError, MemoryError)
"""Exceptions raised by a task that count as transient (a file system or memory hiccup) and
are retried like a dead worker; any other exception fails the job at once."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _describe(error: BaseException) -> str:
    """What went wrong in a task, in one line (the task's own exception where Ray has it)."""
    ray = import_ray()
    cause = error
    if isinstance(error, ray.exceptions.RayTaskError):
        cause = error.cause if error.cause is not None else error
    if isinstance(cause, ray.exceptions.RayTaskError):  # no cause to unwrap
        lines = [ln for ln in str(cause).splitlines() if ln.strip()]
        return _one_line(lines[-1]) if lines else type(cause).__name__
    message = _one_line(str(cause))
    if isinstance(cause, ray.exceptions.RayError):
        message = message.split(". ")[0]  # Ray's system errors run to a paragraph
    return f"{type(cause).__name__}: {message}" if message else type(cause).__name__


class RayExecutor:
    """Runs tasks as Ray tasks on the connected cluster (see the module doc).

    Args:
        max_retries: Retries of a task whose worker died or that raised a transient error.
    """

    kind = ExecutorKind.RAY

    def __init__(self, max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        self.ray = import_ray()
        self.max_retries = max_retries
        self._gpus = cluster_gpus() > 0

    def share(self, value: Any) -> Any:
        """``ray.put(value)``: stored once in the object store, fetched once per node."""
        return self.ray.put(value)

    def map(
        self,
        tasks: Sequence[Task],
        *,
        desc: str = "tasks",
        progress: bool = True,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """Run ``tasks`` on the cluster (see :meth:`~probrank.executors.base.Executor.map`)."""
        ray = self.ray
        remote = ray.remote(run_task)
        refs = []
        for task in tasks:
            options = remote.options(
                num_cpus=task.threads,
                num_gpus=1 if task.gpu and self._gpus else 0,
                max_retries=self.max_retries,
                retry_exceptions=list(RETRIED_EXCEPTIONS),
                name=task.name,
            )
            refs.append(options.remote(task.fn, task.threads, *task.args, **dict(task.kwargs)))
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(tasks)
        pending = list(refs)
        bar = progress_bar(total=len(tasks), desc=desc, unit="task", disable=not progress)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    i = index[ref]
                    try:
                        results[i] = ray.get(ref)
                    except ray.exceptions.RayError as error:
                        raise TaskFailedError(
                            f"task {tasks[i].name!r} failed: {_describe(error)}"
                        ) from error
                    if on_result is not None:
                        on_result(i, results[i])
                    bar.set_postfix_str(tasks[i].name, refresh=False)
                    bar.update()
        except BaseException:
            for ref in pending:  # nothing left running for a job that has failed
                ray.cancel(ref)
            raise
        finally:
            bar.close()
        return results
