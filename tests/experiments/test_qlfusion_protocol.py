"""The QLFusion protocol end to end (smoke) and ``probrank fuse`` on real and generated runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.experiments import load_config
from probrank.experiments.fuse_command import fuse_command
from probrank.experiments.qlfusion import (
    TABLE_1,
    QuantifierSettings,
    make_folds,
    qlfusion_demo,
    run,
)
from probrank.experiments.qlfusion.variants import DEFAULT_SETTINGS

MODELS = Path(__file__).resolve().parents[2] / "models" / "qlfusion"
CONFIG = MODELS / "robust03.toml"
SIX = ["pircRBa1", "aplrob03a", "uwmtCR0", "VTcdhgp1", "THUIRr0301", "fub03IeOLKe3"]


def test_folds_partition_topics() -> None:
    folds = make_folds(23, 10, seed=3)
    flat = sorted(i for f in folds for i in f)
    assert flat == list(range(23))
    assert {len(f) for f in folds} == {2, 3}


@pytest.mark.integration
def test_smoke_protocol_end_to_end(shared_data: Path) -> None:
    result = run(load_config(CONFIG), config_path=CONFIG, seeds=1, smoke=True, progress=False)
    extensions = ["qlfusion_lower", "qlfusion_plus", "qlfusion_plus_det"]
    assert list(result.values) == [*TABLE_1, *extensions]
    assert set(result.values["qlfusion"]) == {
        f"{m}@{k}" for m in ("P", "R", "nDCG") for k in (5, 10, 20)
    }
    for values in result.values.values():
        for v in values.values():
            assert len(v) == 1 and 0.0 <= v[0] <= 1.0
    table2 = result.extra["Table 2 (P@5, mean over seeds)"]
    assert set(table2) == {"probabilistic", "deterministic"}
    assert json.loads(result.to_json())["qlfusion"]["P@5"] == result.values["qlfusion"]["P@5"][0]


@pytest.mark.integration
def test_fuse_command_combsum_matches_reference(shared_data: Path, tmp_path: Path) -> None:
    base = shared_data / "fusion" / "robust03"
    out = tmp_path / "fused.txt"
    values = fuse_command(
        base / "qrels.txt", [base / "runs" / f"input.{n}.gz" for n in SIX], method="combsum",
        norm="minmax", depth=100, top_runs=None, folds=10, seed=0, output=out,
    )  # fmt: skip
    # reference values from the issue (independently computed, trec_eval semantics)
    assert values["P@5"] == pytest.approx(0.5680, abs=5e-5)
    assert values["nDCG@10"] == pytest.approx(0.4894, abs=5e-5)
    assert values["AP"] == pytest.approx(0.2949, abs=5e-5)
    assert len(Run.read(out)) == 100


def _generated(tmp_path: Path) -> tuple[Path, list[Path]]:
    rng = random.Random(0)
    qrels = {str(q): {f"d{d}": int(rng.random() < 0.3) for d in range(30)} for q in range(12)}
    Qrels(qrels).write(tmp_path / "qrels.txt")
    paths = []
    for r, noise in enumerate((0.3, 1.0)):
        scores = {
            q: {d: g + noise * rng.gauss(0, 1) for d, g in docs.items()}
            for q, docs in qrels.items()
        }
        path = tmp_path / f"run{r}.txt"
        Run(scores, name=f"run{r}").write(path)
        paths.append(path)
    return tmp_path / "qrels.txt", paths


@pytest.mark.parametrize("method", ["qlfusion", "qlfusion_plus"])
def test_fuse_command_qlfusion_cross_validated(tmp_path: Path, method: str) -> None:
    qrels, paths = _generated(tmp_path)
    out = tmp_path / "fused.txt"
    settings = QuantifierSettings(batch_sizes=(4,), max_epochs=3, patience=2, posterior_samples=5)
    values = fuse_command(qrels, paths, method=method, norm="minmax", depth=100,
                          top_runs=None, folds=3, seed=0, output=out, progress=False,
                          settings=settings)  # fmt: skip
    assert set(values) >= {"P@5", "nDCG@20", "AP"}
    fused = Run.read(out)
    assert len(fused) == 12
    # the CLI prints the same JSON
    code = main(["fuse", str(qrels), *map(str, paths), "--method", "combmnz", "-o", str(out)])
    assert code == 0


def test_qlfusion_demo_on_generated_runs(tmp_path: Path) -> None:
    qrels_path, paths = _generated(tmp_path)
    figure = tmp_path / "figures" / "qlfusion.png"
    figure.parent.mkdir()  # a user-given output path: its folder is never created silently
    runs = [Run.read(p) for p in paths]
    out = qlfusion_demo(runs, Qrels.read(qrels_path), seed=0, quick=True, figure=figure)
    assert set(out) == {"combsum", "combmnz", "qlfusion", "qlfusion_mae"}
    assert 0.0 <= out["qlfusion"]["P@5"] <= 1.0
    assert 0.0 <= out["qlfusion_mae"]["MAE"] <= 1.0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in figure.parent.iterdir()] == ["qlfusion.png"]  # no temp file left


@pytest.mark.parametrize("name", ["robust03.toml", "clef_tar_2018.toml"])
def test_fuse_defaults_are_the_configs_settings(name: str) -> None:
    table = load_config(MODELS / name)["quantifier"]
    assert QuantifierSettings.from_config(table) == DEFAULT_SETTINGS


def test_fuse_command_refuses_duplicate_documents_unless_asked(tmp_path: Path) -> None:
    qrels, paths = _generated(tmp_path)
    duplicated = tmp_path / "dup.txt"
    text = paths[0].read_text()
    duplicated.write_text(text + text.splitlines()[0] + "\n")
    out = tmp_path / "fused.txt"
    with pytest.raises(InputDataError):
        fuse_command(qrels, [duplicated, paths[1]], method="combsum", output=out)
    values = fuse_command(
        qrels, [duplicated, paths[1]], method="combsum", output=out, on_duplicate="max"
    )
    assert 0.0 <= values["P@5"] <= 1.0
