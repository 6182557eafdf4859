"""The executor interface without Ray: settings, the local executor, and the one-line errors
when Ray is asked for but missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from probrank.cli import main
from probrank.exceptions import InputDataError, MissingExtraError
from probrank.executors import (
    ExecutorKind,
    ExecutorSettings,
    Task,
    open_executor,
)
from probrank.executors.local import LocalExecutor
from probrank.experiments import load_config, run_experiment
from tests.executors import tasks

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_settings_parse_and_check() -> None:
    assert ExecutorSettings().kind is ExecutorKind.LOCAL
    assert ExecutorSettings("ray", address="auto").kind is ExecutorKind.RAY
    table = {"executor": "ray", "ray_address": "127.0.0.1:6379"}
    assert ExecutorSettings.from_table(table) == ExecutorSettings("ray", "127.0.0.1:6379")
    assert ExecutorSettings.from_table(None) == ExecutorSettings()
    with pytest.raises(InputDataError, match="executor must be one of 'local', 'ray'"):
        ExecutorSettings("dask")  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="the executor is 'local'"):
        ExecutorSettings(address="auto")
    with pytest.raises(InputDataError, match="max_retries"):
        ExecutorSettings("ray", max_retries=-1)
    with pytest.raises(InputDataError, match="non-empty"):
        ExecutorSettings("ray", address="")


def test_local_executor_runs_in_order_with_the_tasks_threads() -> None:
    seen: list[tuple[int, int]] = []
    with open_executor() as executor:
        assert isinstance(executor, LocalExecutor)
        assert executor.share([1, 2]) == [1, 2]
        squares = executor.map(
            [Task(f"square {x}", tasks.square, (x,)) for x in (3, 1, 2)],
            progress=False,
            on_result=lambda i, r: seen.append((i, r)),
        )
        before = torch.get_num_threads()
        threads = executor.map([Task("threads", tasks.threads_seen, threads=3)], progress=False)
    assert squares == [9, 1, 4]
    assert seen == [(0, 9), (1, 1), (2, 4)]
    assert threads == [3] and torch.get_num_threads() == before


def test_local_executor_lets_a_tasks_exception_through() -> None:
    with pytest.raises(ValueError, match="no good value: 7"):
        LocalExecutor().map([Task("bad", tasks.always_fails, (7,))], progress=False)


def test_executor_key_is_checked_by_the_config_schema(tmp_path: Path) -> None:
    base = (MODELS / "qlfusion" / "robust03.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(base.replace("threads = 1\n", 'threads = 1\nexecutor = "dask"\n', 1))
    with pytest.raises(InputDataError, match=r"experiment\.executor: must be one of local, ray"):
        load_config(bad)
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(base.replace("threads = 1\n", 'threads = 1\nray_address = "auto"\n', 1))
    assert load_config(mixed).experiment.ray_address == "auto"
    with pytest.raises(InputDataError, match="the executor is 'local'"):
        run_experiment(mixed, seeds=1, smoke=True)


def test_a_protocol_without_tasks_refuses_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import probrank.experiments as experiments

    monkeypatch.setattr(experiments, "RAY_PROTOCOLS", frozenset())
    config = MODELS / "qlfusion" / "robust03.toml"
    with pytest.raises(InputDataError, match="'qlfusion_cv' runs on the local executor only"):
        run_experiment(config, seeds=1, smoke=True, executor="ray")


def test_without_ray_the_executor_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'probrank\[ray\]'"):
        with open_executor(ExecutorSettings("ray")):
            pass
    config = MODELS / "qlfusion" / "robust03.toml"
    code = main(["experiment", str(config), "--smoke", "--executor", "ray", "--out", "x"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("probrank: error: ray is not installed") and "probrank[ray]" in err
    docs = tmp_path / "docs.trec"
    docs.write_text("<DOC>\n<DOCNO> d1 </DOCNO>\nsome text\n</DOC>\n")
    code = main(["encode", str(docs), "--executor", "ray", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "probrank[ray]" in err
    assert not any(tmp_path.glob("*/shard-*.pt"))  # refused before any work
