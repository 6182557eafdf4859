"""The demo's QLFusion section on generated runs."""

from __future__ import annotations

import random
from pathlib import Path

from probrank.data.trec import Qrels, Run
from probrank.demo.qlfusion import DEMO_LIKELIHOODS, qlfusion_demo


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


def test_qlfusion_demo_on_generated_runs(tmp_path: Path) -> None:
    qrels_path, paths = _generated(tmp_path)
    figure = tmp_path / "figures" / "qlfusion.png"
    figure.parent.mkdir()  # a user-given output path: its folder is never created silently
    runs = [Run.read(p) for p in paths]
    out = qlfusion_demo(runs, Qrels.read(qrels_path), seed=0, quick=True, figure=figure)
    models = set(DEMO_LIKELIHOODS)
    assert set(out) == {"combsum", "combmnz", *models} | {
        "qlfusion_mae", "qlfusion_coverage", "qlfusion_spearman",
    }  # fmt: skip
    assert 0.0 <= out["qlfusion"]["P@5"] <= 1.0
    assert set(out["qlfusion_mae"]) == models
    assert all(0.0 <= mae <= 1.0 for mae in out["qlfusion_mae"].values())
    for coverage in out["qlfusion_coverage"].values():
        assert 0.0 <= coverage["coverage_50"] <= coverage["coverage_90"] <= 1.0
    assert all(set(rho) == {r.name for r in runs} for rho in out["qlfusion_spearman"].values())
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in figure.parent.iterdir()] == ["qlfusion.png"]  # no temp file left


def test_demo_predictions_follow_the_truth_within_each_run(tmp_path: Path) -> None:
    """On the demo's generated collection the quantifier is not flat within a run: its
    held-out predictions rank the lists of the better runs as their true proportions do, and
    the default (latent beta-binomial) 90% predictive intervals cover most held-out lists."""
    from probrank.data.datasets.synthetic import score_distribution_runs

    c = score_distribution_runs(num_queries=20, num_docs=400, seed=0)  # the quick demo's
    out = qlfusion_demo(c.runs, c.qrels, seed=0, quick=True)
    for rho in out["qlfusion_spearman"].values():
        assert rho["synth1"] > 0.6 and rho["synth2"] > 0.5
    assert out["qlfusion_coverage"]["qlfusion_latent"]["coverage_90"] > 0.8
