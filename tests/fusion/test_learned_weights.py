"""Weighted rules (closed-form relations to CombMNZ and RRF), the nDCG objective (equal to
trec_eval on the fused run), the weight searches (grid and BoTorch on problems with a known
optimum) and cross-validation over topics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from probrank.data import Qrels, Run
from probrank.evaluation import evaluate
from probrank.exceptions import InputDataError
from probrank.fusion import (
    FusionObjective,
    LearnedWeights,
    PosFuse,
    cross_validated_fusion,
    fuse,
    optimise_weights,
)
from probrank.fusion.bayesopt import BayesOptSettings, bayes_search, simplex_from_cube
from probrank.fusion.optimize import grid_search, simplex_lattice


def _runs(seed: int = 11, ties: bool = True) -> tuple[list[Run], Qrels]:
    """Three runs over five topics (scores rounded to 0.1, so ties are frequent) and qrels."""
    rng = np.random.default_rng(seed)
    runs = []
    for name in ("a", "b", "c"):
        lists = {}
        for q in range(5):
            docs = rng.choice(60, size=int(rng.integers(15, 40)), replace=False)
            scores = rng.normal(0.0, 1.0, size=len(docs))
            if ties:
                scores = np.round(scores, 1)
            lists[str(q)] = {f"d{d:02d}": float(s) for d, s in zip(docs, scores, strict=True)}
        runs.append(Run(lists, name=name))
    qrels = Qrels(
        {str(q): {f"d{d:02d}": int(rng.integers(0, 3)) for d in range(0, 60, 2)} for q in range(5)}
    )
    return runs, qrels


RULES = [("wsum", "weighted"), ("wmnz", "weighted_mnz"), ("wrrf", "weighted_rrf")]


def test_weighted_rules_reduce_to_unweighted_ones() -> None:
    runs, _ = _runs()
    ones = {r.name: 1.0 for r in runs}
    assert fuse(runs, "weighted_mnz", weights=ones).as_dict() == fuse(runs, "combmnz").as_dict()
    assert fuse(runs, "weighted_rrf", weights=ones).as_dict() == fuse(runs, "rrf").as_dict()
    assert fuse(runs, "weighted", weights=ones).as_dict() == fuse(runs, "combsum").as_dict()
    with pytest.raises(InputDataError, match="needs weights"):
        fuse(runs, "weighted_mnz")


def test_wmnz_and_wrrf_closed_form() -> None:
    a = Run({"1": {"x": 3.0, "y": 1.0, "z": 0.0}}, name="a")
    b = Run({"1": {"y": 2.0, "w": 1.0}}, name="b")
    weights = {"a": 0.25, "b": 0.75}
    got = fuse([a, b], "weighted_mnz", weights=weights).as_dict()["1"]
    # min-max: a: x 1, y 1/3, z 0; b: y 1, w 0
    want = {"x": 1.0 * 0.25, "y": (1.0 / 3.0 + 1.0) * 1.0, "z": 0.0, "w": 0.0}
    assert got == pytest.approx(want, rel=1e-15)
    got = fuse([a, b], "weighted_rrf", weights=weights, rrf_k=1.0).as_dict()["1"]
    want = {"x": 0.25 / 2, "y": 0.25 / 3 + 0.75 / 2, "z": 0.25 / 4, "w": 0.75 / 3}
    assert got == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize(("rule", "method"), RULES)
def test_objective_equals_trec_eval_on_the_fused_run(rule: str, method: str) -> None:
    runs, qrels = _runs()
    objective = FusionObjective(runs, qrels, rule, depth=30)
    weights = torch.tensor([[0.5, 0.3, 0.2], [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]])
    values = objective(weights)
    per_topic = objective.per_topic(weights[0])
    assert objective.evaluations == 4
    for w, value in zip(weights, values, strict=True):
        fused = fuse(runs, method, depth=30, weights=dict(zip("abc", w.tolist(), strict=True)))
        expected = evaluate(qrels, fused, ["nDCG@10"])["nDCG@10"]
        assert float(value) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert per_topic.shape == (len(objective.topics),)
    with pytest.raises(InputDataError, match="nDCG@k"):
        FusionObjective(runs, qrels, rule, measure="P@10")


def test_simplex_lattice_is_complete() -> None:
    points = simplex_lattice(3, 10)
    assert points.shape == (math.comb(12, 2), 3)
    torch.testing.assert_close(points.sum(-1), torch.ones(66, dtype=torch.float64))
    assert bool((points >= 0).all())
    assert len({tuple(round(v * 10) for v in p.tolist()) for p in points}) == 66
    assert simplex_lattice(6, 10).shape[0] == 3003
    with pytest.raises(InputDataError, match="coarser"):
        simplex_lattice(17, 10)


def _quadratic(target: tuple[float, ...]):
    centre = torch.tensor(target, dtype=torch.float64)

    def objective(w: torch.Tensor) -> torch.Tensor:
        return -((w - centre) ** 2).sum(-1)

    return objective


def test_grid_search_finds_a_lattice_optimum_exactly() -> None:
    result = grid_search(_quadratic((0.3, 0.5, 0.2)), 3)
    assert result.weights == pytest.approx((0.3, 0.5, 0.2), abs=1e-15)
    assert result.value == pytest.approx(0.0, abs=1e-15)
    assert result.evaluations == 66


def test_bayes_search_finds_a_known_optimum_and_is_reproducible() -> None:
    target = (0.6, 0.3, 0.1)
    state = torch.random.get_rng_state()
    settings = BayesOptSettings(
        initial=5, batch_size=3, num_restarts=4, raw_samples=64, mc_samples=64
    )
    first = bayes_search(_quadratic(target), 3, budget=16, seed=5, settings=settings)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is untouched
    assert first.evaluations == 16
    assert first.value > -2e-3  # within 0.045 of the optimum in Euclidean distance
    assert first.value > float(first.values[:5].max())  # BO improved on the initial design
    torch.testing.assert_close(first.tried.sum(-1), torch.ones(16, dtype=torch.float64))
    again = bayes_search(_quadratic(target), 3, budget=16, seed=5, settings=settings)
    assert torch.equal(first.tried, again.tried)


def test_simplex_from_cube_maps_uniform_to_uniform() -> None:
    cube = torch.quasirandom.SobolEngine(3, scramble=True, seed=0).draw(4096, dtype=torch.float64)
    w = simplex_from_cube(cube)
    torch.testing.assert_close(w.sum(-1), torch.ones(4096, dtype=torch.float64))
    assert bool((w >= 0).all())
    # Dirichlet(1, 1, 1, 1): mean 1/4, variance (R - 1) / (R^2 (R + 1)) = 3/80 per coordinate
    torch.testing.assert_close(
        w.mean(0), torch.full((4,), 0.25, dtype=torch.float64), atol=2e-3, rtol=0
    )
    torch.testing.assert_close(
        w.var(0), torch.full((4,), 3 / 80, dtype=torch.float64), atol=2e-3, rtol=0
    )
    edge = torch.ones(1, 3, dtype=torch.float64, requires_grad=True)
    simplex_from_cube(edge).sum().backward()
    assert edge.grad is not None and bool(torch.isfinite(edge.grad).all())


def _one_good_run() -> tuple[list[Run], Qrels]:
    """Run ``good`` ranks every topic's relevant documents first, by grade; two noisy runs."""
    rng = np.random.default_rng(2)
    grades = {str(q): {f"d{d:02d}": int(rng.integers(0, 3)) for d in range(30)} for q in range(6)}
    good = {
        q: {d: g + float(rng.uniform(0, 0.5)) for d, g in gs.items()} for q, gs in grades.items()
    }
    noisy = [
        Run({q: {f"d{d:02d}": float(rng.normal()) for d in range(30)} for q in grades}, name=n)
        for n in ("x", "y")
    ]
    return [Run(good, name="good"), *noisy], Qrels(grades)


@pytest.mark.parametrize("optimiser", ["grid", "botorch"])
def test_learned_weights_find_the_perfect_run(optimiser: str) -> None:
    runs, qrels = _one_good_run()
    model = LearnedWeights("wsum", optimiser=optimiser, budget=12, seed=0).fit(runs, qrels)
    assert model.search is not None
    assert model.search.value == pytest.approx(1.0, abs=1e-12)  # the perfect ranking
    assert max(model.weights, key=model.weights.__getitem__) == "good"
    assert sum(model.weights.values()) == pytest.approx(1.0, rel=1e-12)
    fused = model.fuse(runs)
    assert evaluate(qrels, fused, ["nDCG@10"])["nDCG@10"] == pytest.approx(1.0, abs=1e-12)
    if optimiser == "grid":
        assert model.search.evaluations == 66
    else:
        assert model.search.evaluations == 12


def test_optimise_weights_rejects_bad_options() -> None:
    with pytest.raises(InputDataError, match="optimiser"):
        optimise_weights(_quadratic((1.0,)), 1, "random")
    with pytest.raises(InputDataError, match="budget"):
        LearnedWeights(budget=0)


def test_cross_validated_fusion_uses_the_project_folds() -> None:
    """The trained fusion methods split topics by the one fold rule (probrank.data.folds), so a
    seed gives the folds QLFusion's cross-fitting and the cascade use."""
    from probrank.data.folds import split_folds
    from probrank.fusion.trained import training_topics

    runs, qrels = _runs(ties=False)
    result = cross_validated_fusion(runs, qrels, lambda: PosFuse(depth=20), folds=2, seed=3)
    assert result.folds == split_folds(training_topics(runs, qrels), 2, seed=3)
    with pytest.raises(InputDataError, match="at least 2 folds"):
        cross_validated_fusion(runs, qrels, lambda: PosFuse(depth=20), folds=1)


def test_cross_validation_never_trains_on_the_fused_topics() -> None:
    runs, qrels = _runs(ties=False)
    result = cross_validated_fusion(runs, qrels, lambda: PosFuse(depth=20), folds=3, seed=1)
    assert set(result.fused.as_dict()) == set(qrels)
    for test, model in zip(result.folds, result.models, strict=True):
        assert not set(test) & set(model.training_topics)
        part = model.fuse([r.restrict(test) for r in runs]).as_dict()
        assert all(result.fused.as_dict()[q] == part[q] for q in test)
