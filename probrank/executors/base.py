"""The executor interface: independent tasks in, their results out in task order.

A :class:`Task` is a module-level function with its arguments (so that it pickles by name),
the torch threads it runs with and whether it can use a GPU. An executor runs a list of tasks
and returns their results in task order; :class:`~probrank.executors.local.LocalExecutor` runs
them one after another in this process, :class:`~probrank.executors.ray_tasks.RayExecutor` as
Ray tasks across a cluster. Both run each task through :func:`run_task` (the task's thread
count set, then restored), so a task that seeds itself from its arguments gives the same
numbers on either.

Which executor an experiment uses is an :class:`ExecutorSettings` (``--executor``,
``--ray-address`` or the config's ``[experiment] executor`` and ``ray_address``), opened with
:func:`probrank.executors.session.open_executor` for the duration of a protocol's parallel
part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, TypeVar

from probrank._options import parse_enum
from probrank.exceptions import InputDataError, ProbrankError

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Executor",
    "ExecutorKind",
    "ExecutorSettings",
    "Task",
    "TaskFailedError",
    "run_task",
]

T = TypeVar("T")

DEFAULT_MAX_RETRIES = 3
"""Retries of a Ray task whose worker or node died (Ray's ``max_retries``)."""


class ExecutorKind(str, Enum):
    """Where the tasks of an experiment or an encoding job run."""

    LOCAL = "local"
    """In this process, one task after another (the default)."""
    RAY = "ray"
    """As Ray tasks (and a Ray Data actor pool for encoding) on a local Ray instance or a
    cluster; needs the ``probrank[ray]`` extra."""


class TaskFailedError(ProbrankError):
    """A task failed for good (after its retries): the message names it and says why."""


@dataclass(frozen=True)
class Task:
    """One independent piece of a job.

    Attributes:
        name: Shown in the progress bar and in the error if it fails (``"seed 1, gpf"``).
        fn: A module-level function (pickled by name for Ray).
        args: Positional arguments (a value shared by many tasks is best passed as the handle
            :meth:`Executor.share` returns for it, as a positional argument).
        kwargs: Keyword arguments.
        threads: Torch intra-op threads of the task (the CPUs a Ray task requests).
        gpu: The task can use one GPU: a Ray task requests one where the cluster has GPUs.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    threads: int = 1
    gpu: bool = False


def run_task(fn: Callable[..., T], threads: int, *args: Any, **kwargs: Any) -> T:
    """Call ``fn(*args, **kwargs)`` with ``threads`` torch threads (restored after).

    The body of every task on every executor.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn(*args, **kwargs)
    finally:
        torch.set_num_threads(previous)


class Executor(Protocol):
    """Runs independent tasks (see the module doc)."""

    kind: ExecutorKind

    def share(self, value: Any) -> Any:
        """A handle for a value many tasks take (the value itself locally, a Ray object
        reference on Ray); pass it as a positional argument of a :class:`Task`."""
        ...

    def map(
        self,
        tasks: Sequence[Task],
        *,
        desc: str = "tasks",
        progress: bool = True,
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """Run ``tasks`` and return their results in task order.

        Args:
            tasks: The tasks.
            desc: The progress bar's label.
            progress: Show a progress bar over the tasks (one step per finished task).
            on_result: Called with ``(task index, result)`` as each task finishes (in
                completion order), e.g. to save partial results.

        Raises:
            TaskFailedError: a task failed for good (Ray); locally a task's own exception
                propagates unchanged.
        """
        ...


@dataclass(frozen=True)
class ExecutorSettings:
    """Which executor runs a job, and how.

    Attributes:
        kind: Local or Ray.
        address: Ray only: ``None`` starts a local Ray instance for the job (no dashboard),
            ``"auto"`` joins the cluster this machine belongs to, ``"host:port"`` or
            ``"ray://host:port"`` a given one. A Ray instance this process already started
            (``ray.init`` in a notebook or a test) is used as it is.
        max_retries: Ray only: retries of a task whose worker or node died, or that raised
            ``OSError`` or ``MemoryError``; other exceptions fail the job at once (a task is
            deterministic: it would fail again).
        num_cpus: Ray only, a local instance: the CPUs it may use (None: all).
    """

    kind: ExecutorKind = ExecutorKind.LOCAL
    address: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    num_cpus: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", parse_enum(ExecutorKind, self.kind, "executor"))
        if self.address is not None and (not isinstance(self.address, str) or not self.address):
            raise InputDataError(f"ray address must be a non-empty string, got {self.address!r}")
        if self.address is not None and self.kind is not ExecutorKind.RAY:
            raise InputDataError("a Ray address is given but the executor is 'local'")
        if self.address is not None:
            from probrank.executors.ray_address import parse_address

            parse_address(self.address)  # its form; the port is probed when Ray joins
        if isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise InputDataError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.num_cpus is not None and (isinstance(self.num_cpus, bool) or self.num_cpus < 1):
            raise InputDataError(f"num_cpus must be positive, got {self.num_cpus!r}")

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> ExecutorSettings:
        """The settings of a config's ``[experiment]`` table (``executor``, ``ray_address``;
        absent: local)."""
        table = table or {}
        return cls(
            kind=table.get("executor") or ExecutorKind.LOCAL,
            address=table.get("ray_address"),
        )
