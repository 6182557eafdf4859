from __future__ import annotations

import numpy as np
import pytest

from probrank.exceptions import InputDataError
from probrank.pooling.measures import run_measures
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies import Bayesian, make_strategy
from probrank.pooling.strategies.bayesian import (
    Acquisition,
    bayesian_estimates,
    chao1_unpooled,
    fit_relevance,
    grade_draws,
    last_doubling,
    pair_weights,
    sample_grades,
    unpooled_draws,
)
from tests.pooling.conftest import synthetic_collection


def test_estimates_with_everything_judged_are_exact() -> None:
    qrels, runs = synthetic_collection(seed=1)
    pool = Pool.from_runs(runs, depth=20)
    judged = Judgements(pool)
    grades = pool.grades_from(qrels)
    judged.add(np.arange(pool.num_items), grades)
    est = bayesian_estimates(judged, level=2, num_samples=20, seed=0)
    extra = chao1_unpooled(pool, (grades >= 2)[None, :].astype(float))
    maps, _ = run_measures(pool, grades.astype(float), level=2, extra_relevant=extra[0])
    np.testing.assert_allclose(est.mean["map"], maps, atol=1e-12)
    np.testing.assert_allclose(est.lower["map"], est.upper["map"], atol=1e-12)
    assert est.beats is not None and est.beats.shape == (3, 3)
    np.testing.assert_allclose(est.beats + est.beats.T, 1.0, atol=1e-12)


@pytest.mark.parametrize(("doublings", "first_rank"), [(1, 11), (2, 6), (3, 3)])
def test_last_doubling_counts_relevant_items_first_met_deep(
    doublings: int, first_rank: int
) -> None:
    _qrels, runs = synthetic_collection(seed=1)
    pool = Pool.from_runs(runs, depth=20)
    rng = np.random.default_rng(0)
    relevant = (rng.random((3, pool.num_items)) < 0.4).astype(float)
    best = np.where(pool.ranks > 0, pool.ranks, 10**6).min(axis=0)
    out = last_doubling(pool, relevant, doublings)
    assert out.shape == (3, pool.num_topics)
    for t in range(pool.num_topics):
        items = pool.topic_items(t)
        # best ranks in (20 / 2^doublings, 20], per doubling
        deep = items[(best[items] >= first_rank) & (best[items] <= 20)]
        expected = relevant[:, deep].sum(axis=1) / doublings
        np.testing.assert_allclose(out[:, t], expected, atol=1e-12)


@pytest.mark.parametrize("window", [1, 2])
def test_unpooled_doublings_extend_chao1_with_the_discovery_curve(window: int) -> None:
    qrels, runs = synthetic_collection(seed=1)
    pool = Pool.from_runs(runs, depth=20)
    judged = Judgements(pool)
    grades = pool.grades_from(qrels)
    judged.add(np.arange(pool.num_items), grades)
    relevant = (grades >= 2)[None, :].astype(float)
    est = bayesian_estimates(
        judged,
        level=2,
        num_samples=10,
        seed=0,
        unpooled_doublings=2.0,
        unpooled_sd=1e-12,
        unpooled_window=window,
    )
    late = last_doubling(pool, relevant, window)
    extra = np.maximum(chao1_unpooled(pool, relevant), 2.0 * late)[0]
    maps, _ = run_measures(pool, grades.astype(float), level=2, extra_relevant=extra)
    np.testing.assert_allclose(est.mean["map"], maps, atol=1e-9)
    plain = bayesian_estimates(judged, level=2, num_samples=10, seed=0)
    assert np.all(est.mean["map"] <= plain.mean["map"] + 1e-12)


def test_unpooled_draws_can_count_each_draws_expected_relevance() -> None:
    _qrels, runs = synthetic_collection(seed=1)
    pool = Pool.from_runs(runs, depth=20)
    rng = np.random.default_rng(0)
    expected = rng.random((4, pool.num_items)) * 0.5
    relevant = rng.random(expected.shape) < expected
    options = {"doublings": 2.0, "sd": 0.3, "window": 1}
    drawn = unpooled_draws(pool, relevant, np.random.default_rng(5), **options)
    counted = unpooled_draws(pool, relevant, np.random.default_rng(5), expected=expected, **options)
    k = 2.0 * np.exp(np.random.default_rng(5).normal(0.0, 0.3, size=(4, 1)))
    chao1 = chao1_unpooled(pool, relevant.astype(float))
    np.testing.assert_allclose(
        drawn, np.maximum(chao1, k * last_doubling(pool, relevant)), atol=1e-12
    )
    np.testing.assert_allclose(
        counted, np.maximum(chao1, k * last_doubling(pool, expected)), atol=1e-12
    )
    assert not np.allclose(drawn, counted)


def test_sample_grades_draws_grades_from_the_posterior_probabilities() -> None:
    qrels, runs = synthetic_collection(seed=1)
    pool = Pool.from_runs(runs, depth=20)
    judged = Judgements(pool)
    grades = pool.grades_from(qrels)
    judged.add(np.arange(0, pool.num_items, 3), grades[::3])
    model = fit_relevance(judged, level=2)
    sampled = sample_grades(judged, model, level=2, num_samples=6, rng=np.random.default_rng(3))
    rng = np.random.default_rng(3)
    probs = model.posterior(pool.ranks, pool.item_topic, num_samples=6, seed=rng)
    np.testing.assert_array_equal(sampled, grade_draws(judged, probs, level=2, rng=rng))
    # certain probabilities: every unjudged item takes a grade of the judged relevant
    # (or other) ones; judged items keep theirs
    rng = np.random.default_rng(4)
    for p, relevant in ((1.0, True), (0.0, False)):
        drawn = grade_draws(judged, np.full((3, pool.num_items), p), level=2, rng=rng)
        unjudged = ~judged.judged
        assert np.all((drawn[:, unjudged] >= 2) == relevant)
        kept = grades[judged.judged] >= 2 if relevant else grades[judged.judged] < 2
        assert set(np.unique(drawn[:, unjudged])) <= set(grades[judged.judged][kept])
        np.testing.assert_array_equal(
            drawn[:, judged.judged], np.tile(grades[judged.judged], (3, 1))
        )


def test_explore_share_draws_unjudged_documents_reproducibly() -> None:
    qrels, runs = synthetic_collection(seed=2)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels)
    proposals = []
    for _ in range(2):
        judged = Judgements(pool)
        selector = Bayesian(warmup_per_topic=2, explore_share=1.0).start(pool, judged, level=2)
        batches = []
        for _ in range(3):
            items = selector.propose(8)
            assert len(items) == 8 and not judged.judged[items].any()
            judged.add(items, grades[items])
            selector.observe(items, grades[items])
            batches.append(items.tolist())
        proposals.append(batches)
    assert proposals[0] == proposals[1]


def test_explored_documents_check_the_model_held_out() -> None:
    qrels, runs = synthetic_collection(seed=2)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels)
    judged = Judgements(pool)
    selector = Bayesian(warmup_per_topic=2, explore_share=0.5).start(pool, judged, level=2)
    batches = []
    for _ in range(4):
        items = selector.propose(8)
        if len(judged) >= 8:  # after the warm-up batch (depth-k order, nothing explored)
            batches.append(items)
        judged.add(items, grades[items])
        selector.observe(items, grades[items])
        if len(batches) == 1:
            assert selector.explored_check() is not None
    explored = np.array(sorted(selector.explored._items))
    # half of each topic's two documents per batch: 4 of 8, in each of the 3 batches after
    # the warm-up
    assert len(explored) == 12 and np.isin(explored, np.concatenate(batches)).all()
    check = selector.explored_check(seed=0)
    assert check.documents == 12
    assert check.found == int(np.sum(grades[explored] >= 2))
    # predicted when chosen, before the judgement: not the refitted model's P(relevant)
    assert 0 < check.expected < 12
    assert check.lower <= check.upper and 0 < check.p_value <= 1
    assert Bayesian().start(pool, Judgements(pool), level=2).explored_check() is None
    assert make_strategy("depth-k").start(pool, judged, level=2).explored_check() is None


@pytest.mark.parametrize("by_count", [False, True])
def test_one_document_at_a_time_explores_every_fifth_by_count(by_count: bool) -> None:
    # as the judging page asks: a fresh selector for one document after each judgement
    qrels, runs = synthetic_collection(topics=1, docs=60, seed=2)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels)
    judged = Judgements(pool)
    strategy = Bayesian(warmup_per_topic=5, explore_by_count=by_count)
    explored = []
    for n in range(24):
        selector = strategy.start(pool, judged, level=2, seed=n)
        item = selector.propose(1)
        assert len(item) == 1 and not judged.judged[item].any()
        if selector.explored_predictions():
            assert sorted(selector.explored_predictions()) == item.tolist()
            explored.append(n)
        judged.add(item, grades[item])
    # per batch, one document rounds its 20% to none; by count, after the depth-k warm-up of
    # 5, every fifth judgement of the topic is explored
    assert explored == ([9, 14, 19] if by_count else [])
    # 24 judged: a batch of 7 crosses 25 and 30, the two explored first
    selector = strategy.start(pool, judged, level=2)
    batch = selector.propose(7)
    assert len(selector.explored) == (2 if by_count else 7 - round(0.8 * 7))
    if by_count:
        assert sorted(batch[:2].tolist()) == sorted(selector.explored_predictions())


def test_explore_by_count_must_be_a_bool() -> None:
    with pytest.raises(InputDataError, match="explore_by_count"):
        Bayesian(explore_by_count="yes")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no nan scores (judged: -inf)
@pytest.mark.parametrize("acquisition", list(Acquisition))
def test_bayesian_strategy_proposes_unjudged_batches(acquisition: Acquisition) -> None:
    qrels, runs = synthetic_collection(seed=2)
    pool = Pool.from_runs(runs, depth=20)
    judged = Judgements(pool)
    grades = pool.grades_from(qrels)
    strategy = Bayesian(warmup_per_topic=2, estimate_samples=50, acquisition=acquisition)
    selector = strategy.start(pool, judged, level=2)
    for _ in range(4):
        items = selector.propose(8)
        assert len(items) == 8 and len(set(items.tolist())) == 8
        assert not judged.judged[items].any()
        judged.add(items, grades[items])
        selector.observe(items, grades[items])
    # every topic got its share
    assert np.bincount(pool.item_topic[judged.judged]).tolist() == [8, 8, 8, 8]
    est = selector.estimate(seed=0)
    assert np.all(est.lower["map"] <= est.mean["map"] + 1e-12)
    assert np.all(est.mean["map"] <= est.upper["map"] + 1e-12)


def test_estimates_for_runs_that_chose_nothing() -> None:
    # judgements chosen on the pool of two runs, estimates for all three
    qrels, runs = synthetic_collection(seed=5)
    small = Pool.from_runs(runs[:2], depth=20)
    judged = Judgements(small)
    grades = small.grades_from(qrels)
    judged.add(np.arange(small.num_items), grades)
    full = Pool.from_runs(runs, depth=20)
    est = bayesian_estimates(
        Judgements.from_qrels(full, judged.to_qrels()), level=2, num_samples=50, seed=0
    )
    assert est.run_names == ("run0", "run1", "run2")
    assert np.all(est.upper["map"] >= est.lower["map"])


def test_pair_weights_favour_close_pairs() -> None:
    rng = np.random.default_rng(0)
    draws = np.column_stack(
        [rng.normal(0.30, 0.01, 400), rng.normal(0.301, 0.01, 400), rng.normal(0.5, 0.01, 400)]
    )
    weights = pair_weights(draws, 3)
    np.testing.assert_allclose(weights, weights.T)
    assert weights[0, 1] > 10 * weights[0, 2]
    assert np.all(np.diag(weights) == 0)


@pytest.mark.parametrize(
    ("option", "value"),
    [("unpooled_window", 0), ("unpooled_window", 1.5), ("unpooled_sd", 0.0)],
)
def test_bayesian_refuses_bad_unpooled_options(option: str, value: float) -> None:
    with pytest.raises(InputDataError, match=option):
        Bayesian(**{option: value})
