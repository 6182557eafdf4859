"""``probrank fuse``'s work (:mod:`probrank.experiments.fuse`) on real and generated runs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.experiments.fuse import fuse_command, fuse_methods
from probrank.fusion.fuse import NEEDS_WEIGHTS, FusionMethod
from probrank.models.qlfusion import VARIANTS, LearnedFusion, QLFusionSettings

SIX = ["pircRBa1", "aplrob03a", "uwmtCR0", "VTcdhgp1", "THUIRr0301", "fub03IeOLKe3"]


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
    settings = QLFusionSettings(batch_sizes=(4,), max_epochs=3, patience=2, posterior_samples=5)
    values = fuse_command(qrels, paths, method=method, norm="minmax", depth=100,
                          top_runs=None, folds=3, seed=0, output=out, progress=False,
                          settings=settings)  # fmt: skip
    assert set(values) >= {"P@5", "nDCG@20", "AP"}
    fused = Run.read(out)
    assert len(fused) == 12
    # the CLI prints the same JSON
    code = main(["fuse", str(qrels), *map(str, paths), "--method", "combmnz", "-o", str(out)])
    assert code == 0


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


def test_fuse_methods_come_from_the_enums() -> None:
    """Regression (issue 15): the CLI listed its own methods ('qlfusion' there, 'weighted' in
    the fusion verb); now one list from FusionMethod and LearnedFusion."""
    methods = fuse_methods()
    assert [m for m in methods if m in {f.value for f in FusionMethod}] == [
        f.value for f in FusionMethod if f not in NEEDS_WEIGHTS
    ]
    assert [m for m in methods if m.startswith("qlfusion")] == [m.value for m in LearnedFusion]
    assert all(m.value in VARIANTS for m in LearnedFusion)
    assert not set(methods) & {f.value for f in NEEDS_WEIGHTS}


def test_an_unknown_method_is_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="method must be one of 'combsum'"):
        fuse_command(tmp_path / "q", [tmp_path / "r"], method="weighted", output=tmp_path / "o")


@pytest.mark.parametrize(
    ("method", "extra"),
    [("probfuse", []), ("bayesfuse", []), ("wsum", ["--optimise", "grid"])],
)
def test_fuse_cli_cross_validates_trained_methods(
    tmp_path: Path, method: str, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from probrank.evaluation import evaluate

    qrels, paths = _generated(tmp_path)
    out = tmp_path / "fused.txt"
    argv = ["fuse", str(qrels), *map(str, paths), "--method", method, "--folds", "3"]
    assert main([*argv, *extra, "-o", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["fused"]
    fused = Run.read(out)
    assert len(fused) == 12  # every judged topic, each fused by the fold that held it out
    again = evaluate(Qrels.read(qrels), fused, ["nDCG@10", "AP"])
    assert printed["nDCG@10"] == pytest.approx(again["nDCG@10"], rel=1e-12)
    assert printed["AP"] == pytest.approx(again["AP"], rel=1e-12)


def test_trained_fusion_methods_are_cli_choices(capsys: pytest.CaptureFixture[str]) -> None:
    from probrank.fusion import LearnedMethod

    methods = fuse_methods()
    assert [m for m in methods if m in {x.value for x in LearnedMethod}] == [
        x.value for x in LearnedMethod
    ]
    assert main(["fuse", "q", "r", "-o", "o", "--method", "wsum", "--optimise", "random"]) == 2
    assert "--optimise: invalid choice" in capsys.readouterr().err
