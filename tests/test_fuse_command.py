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


ZERO_INFLATED = """
import pyro.distributions as dist
import torch


def zero_inflated(total_count, gate=0.3):
    def likelihood(logits):
        count = torch.full_like(logits, float(total_count))
        return dist.ZeroInflatedDistribution(
            dist.Binomial(total_count=count, logits=logits), gate=torch.full_like(logits, gate)
        )

    return likelihood
"""


def test_fuse_qlfusion_names_a_settings_file_a_prior_and_a_likelihood(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: ``probrank fuse --method qlfusion`` takes ``--settings``, ``--prior`` and
    ``--likelihood`` (your own ``module:callable`` too), checked before any run is read."""
    import json
    import sys

    qrels, paths = _generated(tmp_path)
    name = f"zilik_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(ZERO_INFLATED, encoding="utf-8")
    settings = tmp_path / "small.toml"
    settings.write_text(
        "[quantifier]\nbatch_sizes = [4]\nmax_epochs = 3\npatience = 2\nposterior_samples = 5\n"
        f'likelihood = "{name}:zero_inflated"\nlikelihood_args = {{ gate = 0.1 }}\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    base = ["fuse", str(qrels), *map(str, paths), "--method", "qlfusion", "--folds", "3", "--json"]
    try:
        outputs = {}
        for gate in ("0.1", "0.6"):
            out = tmp_path / f"fused{gate}.txt"
            args = [*base, "-o", str(out), "--settings", str(settings)]
            args += ["--likelihood", f"{name}:zero_inflated", "--likelihood-arg", f"gate={gate}"]
            assert main([*args, "--prior", "normal", "--prior-arg", "scale=1.0"]) == 0
            assert set(json.loads(capsys.readouterr().out)["fused"]) >= {"AP", "P@5"}
            outputs[gate] = Run.read(out).as_dict()
        qid = next(iter(outputs["0.1"]))
        doc = next(iter(outputs["0.1"][qid]))
        assert outputs["0.1"][qid][doc] != pytest.approx(outputs["0.6"][qid][doc], rel=1e-3)
        # mistakes: one line, before any work
        bad = tmp_path / "bad.toml"
        bad.write_text("[quantifier]\nmax_epochs = 3\nbogus = 1\n", encoding="utf-8")
        cases = [
            (["--settings", str(bad)], f"{bad}:3: quantifier.bogus"),
            (["--likelihood", f"{name}:nope"], f"--likelihood: '{name}:nope': module"),
            (["--likelihood", "binomial", "--likelihood-arg", "gate"], "must be KEY=VALUE"),
        ]
        for extra, message in cases:
            assert main([*base, "-o", str(tmp_path / "x.txt"), *extra]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and message in err, err
        combsum = ["fuse", str(qrels), str(paths[0]), "-o", str(tmp_path / "y.txt")]
        assert main([*combsum, "--prior", "normal"]) == 2
        assert "--prior: only with --method qlfusion" in capsys.readouterr().err
        assert not (tmp_path / "x.txt").exists() and not (tmp_path / "y.txt").exists()
    finally:
        sys.modules.pop(name, None)
