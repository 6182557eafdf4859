"""The local executor: every task in this process, one after another, in task order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from probrank._progress import progress_bar
from probrank.executors.base import ExecutorKind, Task, run_task

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """Runs tasks in this process (see :class:`~probrank.executors.base.Executor`).

    A task's exception propagates unchanged: the local path behaves as a plain loop would.
    """

    kind = ExecutorKind.LOCAL

    def share(self, value: Any) -> Any:
        """``value`` itself (nothing to ship)."""
        return value

    def map(
        self,
        tasks: Sequence[Task],
        *,
        desc: str = "tasks",
        progress: bool = True,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """Run ``tasks`` in order (see :meth:`~probrank.executors.base.Executor.map`)."""
        results: list[Any] = []
        bar = progress_bar(total=len(tasks), desc=desc, unit="task", disable=not progress)
        try:
            for index, task in enumerate(tasks):
                bar.set_postfix_str(task.name, refresh=False)
                result = run_task(task.fn, task.threads, *task.args, **task.kwargs)
                results.append(result)
                if on_result is not None:
                    on_result(index, result)
                bar.update()
        finally:
            bar.close()
        return results
