"""A run written by ``probrank fuse`` and read back evaluates to exactly the numbers the fusion
reported, in probrank and in the trec_eval 10.0 binary: scores are written with ``repr`` and
read back as the same doubles, and both evaluations order them the same way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from probrank.data import Qrels, Run
from probrank.evaluation import evaluate
from probrank.evaluation.trec_eval.reference import parse_output, run_reference
from probrank.experiments.fuse import FUSED_MEASURES, fuse_command

METHODS = [("combsum", "minmax"), ("combmnz", "zscore"), ("rrf", "minmax"), ("combmax", "sum")]
TREC_NAMES = {
    **{f"P@{k}": f"P_{k}" for k in (5, 10, 20)},
    **{f"R@{k}": f"recall_{k}" for k in (5, 10, 20)},
    **{f"nDCG@{k}": f"ndcg_cut_{k}" for k in (5, 10, 20)},
    "AP": "map",
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, list[Path]]:
    rng = np.random.default_rng(7)
    topics, docs = [f"t{i}" for i in range(12)], [f"D{i}" for i in range(80)]
    qrels = {
        t: {d: int(rng.integers(-1, 3)) for d in rng.choice(docs, 30, replace=False)}
        for t in topics
    }
    Qrels(qrels).write(tmp_path / "qrels")
    paths = []
    for r, scale in enumerate((1.0, 1e-7, 3e5)):
        run = {}
        for t in topics:
            picked = rng.choice(docs, 40, replace=False)
            scores = rng.normal(size=40) * scale
            scores[:5] = scores[0]  # ties
            run[t] = dict(zip(picked.tolist(), scores.tolist(), strict=True))
        Run(run, name=f"r{r}").write(tmp_path / f"r{r}")
        paths.append(tmp_path / f"r{r}")
    return tmp_path / "qrels", paths


@pytest.mark.parametrize(("method", "norm"), METHODS)
def test_fused_run_read_back_evaluates_to_the_reported_numbers(files, tmp_path, method, norm):
    qrels, runs = files
    reported = fuse_command(
        qrels, runs, method=method, norm=norm, depth=30, output=tmp_path / "fused", progress=False
    )
    back = evaluate(qrels, Run.read(tmp_path / "fused"), list(FUSED_MEASURES))
    assert back == reported  # exactly, not approximately


def test_the_trec_eval_binary_agrees_with_the_fusion(files, tmp_path, trec_eval_precise):
    qrels, runs = files
    reported = fuse_command(
        qrels, runs, method="combsum", norm="zscore", depth=30, output=tmp_path / "fused",
        progress=False,
    )  # fmt: skip
    args = ["-m", "P.5,10,20", "-m", "recall.5,10,20", "-m", "ndcg_cut.5,10,20", "-m", "map"]
    done = run_reference(trec_eval_precise, qrels, tmp_path / "fused", *args)
    assert done.returncode == 0, done.stderr
    printed = parse_output(done.stdout)["all"]
    assert {m: float(printed[TREC_NAMES[m]]) for m in FUSED_MEASURES} == reported
