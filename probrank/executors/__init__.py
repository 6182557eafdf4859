"""probrank.executors: where the heavy parts run, in this process or on Ray.

Two paths are parallel: encoding a collection (:mod:`probrank.executors.encoding`: a Ray Data
actor pool holding the model, writing the same cache shards as the local path) and the sweeps of
the experiment protocols (independent tasks: seeds, training groups, heads, cells;
:mod:`probrank.executors.base`). The local executor runs them in this process as before; the Ray
executor (the optional extra ``probrank[ray]``, imported only when used) runs them on a local
Ray instance or a cluster, with the same results. See ``docs/guide/ray.md``.
"""

from probrank.executors.base import (
    DEFAULT_MAX_RETRIES,
    Executor,
    ExecutorKind,
    ExecutorSettings,
    Task,
    TaskFailedError,
    run_task,
)
from probrank.executors.session import open_executor

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Executor",
    "ExecutorKind",
    "ExecutorSettings",
    "Task",
    "TaskFailedError",
    "open_executor",
    "run_task",
]
