"""ProbFuse, SegFuse, SlideFuse, PosFuse, BayesFuse, MAPFuse and the weighted rules against
ranx's implementations on the same input: the learned per-run arrays and the fused score of
every (topic, document).

The runs have no tied scores, so trec_eval's order (probrank) and ranx's unstable sort give
the same ranks; ranx's and probrank's conventions differ only on ties (order) and on
degenerate min-max lists (ranx 0, probrank 1), which these runs do not contain. All references
come from one ranx subprocess per test session worker (``ranx_reference.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from probrank.data import Qrels, Run
from probrank.fusion import (
    BayesFuse,
    MAPFuse,
    PosFuse,
    ProbFuse,
    SegFuse,
    SlideFuse,
    fuse,
)
from probrank.fusion.trained import HitListFusion
from tests.fusion.ranx_reference import assert_same_scores, ranx_results

NUM_RUNS, NUM_TOPICS, POOL = 3, 6, 90
WEIGHTS = [0.5, 0.2, 0.3]


def _data(seed: int = 7) -> tuple[list[dict], dict]:
    """Three runs over the same six topics (lists of 20 to 70 documents from a pool of 90,
    distinct continuous scores) and graded qrels (0, 1, 2; some topics' relevant documents
    mostly unretrieved)."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(NUM_RUNS):
        run = {}
        for q in range(NUM_TOPICS):
            size = int(rng.integers(20, 71))
            docs = rng.choice(POOL, size=size, replace=False)
            scores = rng.normal(5.0, 2.0, size=size)
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, scores, strict=True)}
        runs.append(run)
    qrels = {
        f"q{q}": {
            f"d{d}": int(g)
            for d, g in zip(
                rng.choice(POOL, size=30, replace=False),
                rng.choice([0, 1, 1, 2], size=30),
                strict=True,
            )
        }
        for q in range(NUM_TOPICS)
    }
    return runs, qrels


def _cut(runs: list[dict], depth: int) -> list[dict]:
    return [Run(r).truncate(depth).to_dict() for r in runs]


RAW, QRELS = _data()
CUT = 25
TRAINED_CASES: dict[str, tuple[Any, dict]] = {
    # probrank model, ranx job args; ranx gets the runs already cut at the model's depth
    "probfuse": (ProbFuse(7, depth=None), {"train_args": [7]}),
    "probfuse_cut": (ProbFuse(4, depth=CUT), {"train_args": [4]}),
    "segfuse": (SegFuse(depth=None), {"norm": "min-max"}),
    "slidefuse": (SlideFuse(3, depth=None), {"fuse_args": [3]}),
    "slidefuse_cut": (SlideFuse(2, depth=CUT), {"fuse_args": [2]}),
    "posfuse": (PosFuse(depth=None), {}),
    "bayesfuse": (BayesFuse(depth=None), {}),
    "mapfuse": (MAPFuse(depth=None), {}),
    "mapfuse_cut": (MAPFuse(depth=CUT), {}),
}


def _job(op: str, args: dict, runs: list[dict], qrels: dict | None = None) -> dict:
    return {"op": op, "runs": runs, "qrels": qrels, "args": args}


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    jobs = {}
    for key, (model, args) in TRAINED_CASES.items():
        runs = RAW if model.depth is None else _cut(RAW, model.depth)
        jobs[key] = _job(key.removesuffix("_cut"), args, runs, QRELS)
    for rule in ("wsum", "wmnz"):
        jobs[rule] = _job("weighted", {"rule": rule, "weights": WEIGHTS, "norm": "min-max"}, RAW)
    jobs["wrrf"] = _job("weighted_rrf", {"k": 60, "weights": WEIGHTS}, RAW)
    jobs["wrrf_k5"] = _job("weighted_rrf", {"k": 5, "weights": WEIGHTS}, RAW)
    return ranx_results(jobs)


def _runs() -> list[Run]:
    return [Run(r, name=f"r{i}") for i, r in enumerate(RAW)]


def test_data_has_no_ties_and_relevant_documents() -> None:
    for run in RAW:
        for docs in run.values():
            assert len(set(docs.values())) == len(docs)
    assert all(any(g > 0 for g in grades.values()) for grades in QRELS.values())


@pytest.mark.parametrize("key", sorted(TRAINED_CASES))
def test_trained_method_equals_ranx(key: str, reference: dict[str, Any]) -> None:
    model = TRAINED_CASES[key][0].fit(_runs(), Qrels(QRELS))
    theirs = reference[key]
    for i, name in enumerate(model.run_names):
        learned = model.params[name]
        expected = np.asarray(theirs["params"][i], dtype=np.float64).reshape(-1)
        if isinstance(model, HitListFusion) and not isinstance(model, PosFuse | SlideFuse):
            np.testing.assert_allclose(learned, expected, rtol=1e-12, atol=1e-15)
        else:
            # ranx's per-rank arrays stop at the longest list; MAPFuse's is one MAP value
            np.testing.assert_allclose(learned, expected[: len(learned)], rtol=1e-12, atol=1e-15)
    assert_same_scores(model.fuse(_runs()), theirs["run"])


@pytest.mark.parametrize(("rule", "method"), [("wsum", "weighted"), ("wmnz", "weighted_mnz")])
def test_weighted_rules_equal_ranx(rule: str, method: str, reference: dict[str, Any]) -> None:
    weights = {f"r{i}": w for i, w in enumerate(WEIGHTS)}
    mine = fuse(_runs(), method, norm="minmax", depth=None, weights=weights)
    assert_same_scores(mine, reference[rule]["run"])


@pytest.mark.parametrize(("key", "k"), [("wrrf", 60.0), ("wrrf_k5", 5.0)])
def test_weighted_rrf_equals_ranx_wsum_of_rrf(
    key: str, k: float, reference: dict[str, Any]
) -> None:
    weights = {f"r{i}": w for i, w in enumerate(WEIGHTS)}
    mine = fuse(_runs(), "weighted_rrf", depth=None, weights=weights, rrf_k=k)
    assert_same_scores(mine, reference[key]["run"])
