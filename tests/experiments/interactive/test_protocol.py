"""The interactive experiments: CLI on generated questions, human sessions, protocol, demo."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.experiments import run_experiment
from probrank.interactive.log import read_log

TINY = """
[experiment]
protocol = "interactive"
title = "tiny"

[data]
dataset = "synthetic"
max_questions = 3

[warm_start]
max_epochs = 3
swag_epochs = 3
ensemble_size = 2

[update]
lr = 0.1
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("posterior", ["mcdropout", "swag", "laplace", "ensemble", "gppl"])
def test_cli_json_on_generated_questions(
    posterior: str, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys,
        "interactive", "--data", "synthetic", "--posterior", posterior, "--strategy", "eubo",
        "--rounds", "2", "--noise", "0.3", "--seeds", "1", "--max-questions", "3",
        "--config", str(tiny), "--json",
    )  # fmt: skip
    assert code == 0
    summary = json.loads(out)
    assert set(summary) == {"accuracy", "ndcg@5", "median_round_seconds"}
    assert len(summary["accuracy"]) == 3 and len(summary["ndcg@5"]) == 3
    assert all(0.0 <= v <= 1.0 for v in summary["accuracy"] + summary["ndcg@5"])
    assert summary["median_round_seconds"] > 0


def test_cli_table_and_seeds(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "interactive", "--data", "synthetic", "--posterior", "laplace", "--strategy", "random",
        "--rounds", "1", "--seeds", "2", "--max-questions", "2", "--config", str(tiny),
    )  # fmt: skip
    assert code == 0
    assert "laplace+random t=0.3" in out and "acc@0" in out and "acc@1" in out and "±" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--noise", "0"], "noise"),
        (["--rounds", "-1"], "rounds"),
        (["--data", "mediqa", "--split", "bogus"], "split"),
        (["--human"], "--question"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "interactive", "--data", "synthetic", *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_cli_unknown_config_option_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[experiment]\nprotocol = "interactive"\n[laplace]\nscael = 1.0\n')
    code, _, err = _run(capsys, "interactive", "--data", "synthetic", "--config", str(path))
    assert code == 2 and "scael" in err


def test_human_session_logs_and_resumes(
    tiny: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "s0.jsonl"
    common = ["interactive", "--human", "--data", "synthetic", "--config", str(tiny)]
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\nfoo\n2\nq\n"))
    code, out, _ = _run(
        capsys, *common, "--question", "T1", "--posterior", "mcdropout", "--log", str(log)
    )
    assert code == 0 and "Which answer is better?" in out and "Please type 1, 2, s or q" in out
    assert len(read_log(log).events) == 2
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\n1\n"))
    code, out, _ = _run(capsys, *common, "--question", "ignored", "--resume", str(log))
    assert code == 0 and "Best answers now" in out
    events = read_log(log).events
    assert [e["type"] for e in events] == ["judgement", "judgement", "skip", "judgement"]
    assert read_log(log).header["metadata"]["posterior"] == "mcdropout"


def test_grid_protocol_smoke(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(
        TINY
        + '\n[[grid]]\nposteriors = ["laplace", "gppl"]\nstrategies = ["ei"]\nnoises = [0.3]\n'
        + '\n[[grid]]\nposteriors = ["laplace"]\nstrategies = ["ei"]\nnoises = [1.0]\n'
    )
    result = run_experiment(path, seeds=2, smoke=True)
    assert list(result.values) == ["laplace+ei t=0.3", "gppl+ei t=0.3", "laplace+ei t=1"]
    assert set(result.values["gppl+ei t=0.3"]) >= {"acc@0", "acc@2", "ndcg@5@1", "s/round"}
    assert all(len(v) == 2 for v in result.values["laplace+ei t=1"].values())


def test_tuning_refuses_test_data(tmp_path: Path) -> None:
    from probrank.exceptions import InputDataError

    path = tmp_path / "tune.toml"
    path.write_text(
        '[experiment]\nprotocol = "interactive"\n[data]\ndataset = "liveqa-med"\n'
        '[tune]\nposterior = "laplace"\n[tune.grid]\n"laplace.scale" = [0.1]\n'
    )
    with pytest.raises(InputDataError, match="MEDIQA validation only"):
        run_experiment(path, seeds=1, smoke=True)


def test_tuning_on_generated_validation(tmp_path: Path) -> None:
    path = tmp_path / "tune.toml"
    path.write_text(
        TINY + '\n[tune]\nposterior = "laplace"\nnoises = [0.3]\n'
        '[tune.grid]\n"laplace.scale" = [0.1, 1.0]\n'
    )
    result = run_experiment(path, seeds=1, smoke=True)
    assert len(result.values) == 2 and all("objective" in row for row in result.values.values())


@pytest.mark.integration
def test_cli_on_two_liveqa_questions(
    shared_data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBRANK_DATA", str(shared_data))
    code, out, _ = _run(
        capsys,
        "interactive", "--data", "liveqa-med", "--posterior", "gppl", "--strategy", "eubo",
        "--rounds", "1", "--seeds", "1", "--max-questions", "2", "--json",
    )  # fmt: skip
    assert code == 0
    summary = json.loads(out)
    assert len(summary["accuracy"]) == 2


def test_encoder_cache_dir_follows_the_config_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from probrank.encoders.config import encoder_cache_dir

    project = tmp_path / "project"
    (project / "models" / "x").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    config = project / "models" / "x" / "c.toml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert encoder_cache_dir({}, config) == project / ".probrank-cache"
    assert encoder_cache_dir({"cache_dir": "c"}, config) == project / "c"
    assert encoder_cache_dir({"cache_dir": str(tmp_path / "abs")}, config) == tmp_path / "abs"
    assert encoder_cache_dir({"cache_dir": ""}, config) is None
    assert encoder_cache_dir(None, None) == elsewhere / ".probrank-cache"
