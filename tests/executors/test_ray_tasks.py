"""The Ray executor on a local 2-CPU instance: order, threads, retries, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from probrank.cli._parsing import describe_error
from probrank.executors import ExecutorSettings, Task, TaskFailedError, open_executor
from probrank.executors.ray_tasks import RayExecutor
from tests.executors import tasks

pytestmark = pytest.mark.xdist_group("ray")


def test_results_come_back_in_task_order(ray_instance: Any) -> None:
    seen: dict[int, int] = {}
    with open_executor(ExecutorSettings("ray")) as executor:
        assert isinstance(executor, RayExecutor)
        shared = executor.share(5)
        results = executor.map(
            [Task(f"square {x}", tasks.square, (x,)) for x in range(6)]
            + [Task("shared", tasks.square, (shared,))],
            progress=False,
            on_result=seen.__setitem__,
        )
        threads = executor.map([Task("threads", tasks.threads_seen, threads=2)], progress=False)
    assert results == [0, 1, 4, 9, 16, 25, 25]
    assert seen == dict(enumerate(results))
    assert threads == [2]
    assert ray_instance.is_initialized()  # the fixture's instance is left running


def test_a_crashed_worker_is_retried(ray_instance: Any, tmp_path: Path) -> None:
    marker = tmp_path / "crashed"
    executor = RayExecutor(max_retries=2)
    assert executor.map([Task("crash", tasks.crash_once, (str(marker), 7))], progress=False) == [7]
    assert marker.read_text() == "crashed"  # the first attempt did die


def test_a_transient_error_is_retried(ray_instance: Any, tmp_path: Path) -> None:
    marker = tmp_path / "failed"
    executor = RayExecutor(max_retries=1)
    assert executor.map([Task("flaky", tasks.oserror_once, (str(marker), 3))], progress=False) == [
        3
    ]
    assert marker.exists()


def test_a_deterministic_error_fails_the_job_at_once_in_one_line(
    ray_instance: Any, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    job = [
        Task("fine", tasks.square, (2,)),
        Task("seed 1, gpf", tasks.fails_counting, (str(calls), 4)),
    ]
    with pytest.raises(TaskFailedError) as caught:
        RayExecutor(max_retries=3).map(job, progress=False)
    line = describe_error(caught.value)
    assert line == (
        "task 'seed 1, gpf' failed: ValueError: no good value: 4 second line of the message"
    )
    assert calls.read_text().count("call") == 1  # not retried: it would fail again


def test_a_task_that_keeps_crashing_fails_after_its_retries(
    ray_instance: Any, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    with pytest.raises(TaskFailedError, match=r"task 'doomed' failed: WorkerCrashedError") as e:
        RayExecutor(max_retries=1).map(
            [Task("doomed", tasks.crash_always, (str(calls),))], progress=False
        )
    assert "\n" not in str(e.value)
    assert calls.read_text().count("call") == 2  # the first attempt and one retry
