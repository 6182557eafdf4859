"""Results provenance and run folders: what a results JSON says about how it was made, where
it goes, and that a model card's committed results are replaced only when asked."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from probrank._files import new_figure
from probrank.cli import main
from probrank.exceptions import InputDataError
from probrank.experiments import PROTOCOLS, load_document, run_experiment
from probrank.experiments.provenance import (
    default_run_dir,
    git_commit,
    resolve_config,
    save_partial,
)
from probrank.experiments.results import ExperimentResult
from probrank.experiments.schemas import SCHEMAS

MODELS = Path(__file__).resolve().parents[2] / "models"

CONFIG = """[experiment]
protocol = "qlfusion_cv"
threads = 1

[data]
path = "."

[protocol]
folds = 4
"""


def _fake(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """A protocol that reports two seeds' values, a figure, its settings, and saves a partial
    result first (as the interactive grid does after each cell)."""
    partial = ExperimentResult("partial", {"m": {"P@5": [0.5]}})
    save_partial(partial)
    folder = config_path.parent / "partial-seen.txt"
    written = sorted(p.name for p in config_path.parent.rglob("*.json"))
    folder.write_text("\n".join(written))
    figure, ax = new_figure(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    return ExperimentResult(
        "fake",
        {"m": {"P@5": [0.25 * (s + 1) for s in range(seeds)]}},
        notes=["a note"],
        data={"curves": {"m": [1, 2]}},
        figures={"reliability": figure},
        settings={"protocol": {"folds": 4, "depth": 100}, "quantifier": {"hidden": 32}},
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model folder with a config and committed card results."""
    monkeypatch.setitem(PROTOCOLS, "qlfusion_cv", f"{__name__}:_fake")
    folder = tmp_path / "models" / "toy"
    (folder / "results").mkdir(parents=True)
    (folder / "toy.toml").write_text(CONFIG)
    (folder / "results" / "toy.json").write_text('{"committed": true}\n')
    return folder


def test_the_results_json_carries_provenance(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_experiment(project / "toy.toml", seeds=2, out=out)
    saved = json.loads((out / "toy.json").read_text(), parse_constant=pytest.fail)
    assert saved["values"] == {"m": {"P@5": [0.25, 0.5]}}
    assert saved["means"] == {"m": {"P@5": pytest.approx(0.375)}}
    assert saved["curves"] == {"m": [1, 2]} and saved["notes"] == ["a note"]
    record = saved["provenance"]
    assert record["probrank_version"] == version("probrank")
    assert record["seeds"] == [0, 1] and record["smoke"] is False and record["threads"] == 1
    assert record["config"] == json.loads(json.dumps(load_document(project / "toy.toml")))
    commit = record["git_commit"]
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}", commit)
    assert dt.datetime.fromisoformat(record["created_utc"]).tzinfo is not None
    # every table and key of the schema, the protocol's values filling the unset ones
    resolved = record["resolved_config"]
    assert set(resolved) == {f.name for f in dataclasses.fields(SCHEMAS["qlfusion_cv"])}
    assert resolved["protocol"]["folds"] == 4  # from the config
    assert resolved["protocol"]["depth"] == 100  # the protocol's default, reported
    assert resolved["quantifier"]["hidden"] == 32
    assert resolved["quantifier"]["lr"] is None  # unset and not reported
    assert record["settings"]["quantifier"] == {"hidden": 32}
    png = out / "toy_reliability.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(result.files) == sorted([str(out / "toy.json"), str(png)])
    # the partial result was in the run folder while the protocol ran
    assert (project / "partial-seen.txt").read_text() == "toy.json"
    # the committed card is untouched
    assert json.loads((project / "results" / "toy.json").read_text()) == {"committed": True}


def test_the_card_is_replaced_only_when_asked(project: Path, tmp_path: Path) -> None:
    run_experiment(project / "toy.toml", seeds=1, out=tmp_path / "a")
    assert json.loads((project / "results" / "toy.json").read_text()) == {"committed": True}
    run_experiment(project / "toy.toml", seeds=1, out=tmp_path / "b", update_card=True)
    card = json.loads((project / "results" / "toy.json").read_text())
    assert card["values"] == {"m": {"P@5": [0.25]}}
    assert (project / "results" / "toy_reliability.png").is_file()
    assert (tmp_path / "b" / "toy.json").read_text() == (
        project / "results" / "toy.json"
    ).read_text()
    with pytest.raises(InputDataError, match="not with --smoke"):
        run_experiment(project / "toy.toml", seeds=1, smoke=True, update_card=True)


def test_without_a_folder_nothing_is_written(project: Path) -> None:
    before = sorted(p.name for p in project.rglob("*"))
    result = run_experiment(project / "toy.toml", seeds=1)
    assert result.files == []
    after = sorted(p.name for p in project.rglob("*") if p.name != "partial-seen.txt")
    assert after == before


def test_the_cli_writes_a_run_folder(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", str(project / "toy.toml"), "--seeds", "1"]) == 0
    out, err = capsys.readouterr()
    assert "fake" in out
    (folder,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"toy-\d{8}T\d{6}Z", folder.name)
    assert (folder / "toy.json").is_file()
    assert f"results written to {folder.relative_to(tmp_path)} (toy.json" in err  # logged
    explicit = tmp_path / "explicit"
    argv = ["-q", "experiment", str(project / "toy.toml"), "--seeds", "1", "--out", str(explicit)]
    assert main(argv) == 0
    assert json.loads((explicit / "toy.json").read_text())["provenance"]["seeds"] == [0]
    assert capsys.readouterr().err == ""  # -q: no informational messages
    assert main(["experiment", str(project / "toy.toml"), "--update-card", "--out", "x"]) == 0
    assert "values" in json.loads((project / "results" / "toy.json").read_text())


def test_default_run_dir_is_timestamped_and_unique(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    first = default_run_dir("models/x/robust03.toml", now=moment)
    assert first == Path("runs/robust03-20260102T030405Z")
    first.mkdir(parents=True)
    assert default_run_dir("robust03.toml", now=moment) == Path("runs/robust03-20260102T030405Z-2")


def test_git_commit_never_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert git_commit(tmp_path) is None  # not a repository
    assert git_commit(tmp_path / "missing") is None  # not even a folder
    here = Path(__file__).resolve().parent
    if shutil.which("git") is not None:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True
        )
        expected = done.stdout.strip() if done.returncode == 0 else None
        assert git_commit(here) == expected
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert git_commit(here) is None


def test_resolve_config_lists_every_key_of_every_protocol() -> None:
    for name in (
        "qlfusion/robust03.toml",
        "interactive_ranker/liveqa.toml",
        "gpf_ranker/ubuntu.toml",
    ):
        config = load_document(MODELS / name)
        schema = SCHEMAS[config["experiment"]["protocol"]]
        resolved = resolve_config(config, schema)
        assert set(resolved) == {f.name for f in dataclasses.fields(schema)}
        assert resolved["experiment"]["protocol"] == config["experiment"]["protocol"]
        for table, values in config.items():
            if isinstance(values, dict):
                for key, value in values.items():
                    if not isinstance(value, dict):
                        assert resolved[table][key] == json.loads(json.dumps(value)), (table, key)
