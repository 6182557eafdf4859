"""The held-out check on the explored documents against exact predictive distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from probrank.pooling.checks import REPLICATES, ExploredCheck, ExploredRecord, check_explored
from probrank.pooling.pool import Judgements, Pool
from tests.pooling.conftest import synthetic_collection


def _judgements(num_items: int) -> Judgements:
    """Judgements of a pool with at least ``num_items`` items, none judged yet."""
    _, runs = synthetic_collection(topics=4, docs=40, depth=20, seed=0)
    pool = Pool.from_runs(runs, depth=20)
    assert pool.num_items >= num_items
    return Judgements(pool)


def _poisson_binomial(p: np.ndarray) -> np.ndarray:
    """The exact pmf of a sum of independent Bernoullis, by convolution."""
    pmf = np.array([1.0])
    for q in p:
        pmf = np.convolve(pmf, [1.0 - q, q])
    return pmf


def _quantile(cdf: np.ndarray, q: float) -> int:
    return int(np.searchsorted(cdf, q - 1e-12))


def test_one_draw_is_the_exact_poisson_binomial() -> None:
    rng = np.random.default_rng(0)
    judged = _judgements(30)
    items = np.arange(30)
    p = rng.uniform(0.05, 0.6, size=30)
    record = ExploredRecord()
    record.add(items, p[None, :])
    grades = np.where(np.arange(30) < 4, 2, 0)  # 4 relevant: far below the 30 x ~0.33 expected
    judged.add(items, grades)
    check = record.check(judged, level=1, seed=1)
    assert isinstance(check, ExploredCheck)
    assert check.documents == 30 and check.found == 4
    assert check.expected == pytest.approx(p.sum(), rel=1e-12)
    pmf = _poisson_binomial(p)
    cdf = np.cumsum(pmf)
    # Monte Carlo quantiles of an integer count: at most one step from the exact ones
    assert abs(check.lower - _quantile(cdf, 0.05)) <= 1
    assert abs(check.upper - _quantile(cdf, 0.95)) <= 1
    exact = min(1.0, 2 * min(cdf[4], 1.0 - cdf[3]))
    assert check.p_value == pytest.approx(
        exact, abs=4 * np.sqrt(exact / REPLICATES) + 3 / REPLICATES
    )
    assert check.ratio == pytest.approx(4 / p.sum())


def test_draws_shared_within_a_batch_make_a_mixture() -> None:
    # draw 0 says 5% relevant, draw 1 says 45%: one batch is a 50/50 mixture of binomials,
    # fifty batches of one document each are (nearly) Binomial(50, 0.25)
    judged = _judgements(50)
    items = np.arange(50)
    p = np.vstack([np.full(50, 0.05), np.full(50, 0.45)])
    judged.add(items, np.where(items < 12, 1, 0))
    shared = ExploredRecord()
    shared.add(items, p)
    apart = ExploredRecord()
    for i in items:
        apart.add(items[i : i + 1], p[:, i : i + 1])
    mixture = 0.5 * stats.binom.cdf(np.arange(51), 50, 0.05) + 0.5 * stats.binom.cdf(
        np.arange(51), 50, 0.45
    )
    one = shared.check(judged, level=1, seed=0)
    assert abs(one.lower - _quantile(mixture, 0.05)) <= 1
    assert abs(one.upper - _quantile(mixture, 0.95)) <= 1
    many = apart.check(judged, level=1, seed=0)
    binomial = stats.binom.cdf(np.arange(51), 50, 0.25)
    assert abs(many.lower - _quantile(binomial, 0.05)) <= 1
    assert abs(many.upper - _quantile(binomial, 0.95)) <= 1
    assert one.expected == pytest.approx(many.expected) == pytest.approx(12.5)
    assert one.upper - one.lower > many.upper - many.lower + 5


def test_only_judged_items_count_and_the_newest_prediction_wins() -> None:
    judged = _judgements(3)
    record = ExploredRecord()
    assert record.check(judged, level=1) is None
    record.add(np.array([0, 1, 2]), np.full((4, 3), 0.2))
    record.add(np.array([1]), np.full((4, 1), 0.7))  # proposed again before its judgement
    assert len(record) == 3
    judged.add(np.array([0, 1]), np.array([1, 1]))
    check = record.check(judged, level=1)
    assert check.documents == 2 and check.found == 2
    assert check.expected == pytest.approx(0.2 + 0.7)
    assert 0 < check.p_value <= 1
    assert record.check(judged, level=1, seed=5) == record.check(judged, level=1, seed=5)
    with pytest.raises(ValueError, match="s x m"):
        record.add(np.array([0, 1]), np.zeros((4, 3)))


def test_predictive_check_is_the_record_check_on_its_batches() -> None:
    # the record groups its judged items by batch and hands them to check_explored: the same
    # seed gives the same check; one 1 x m batch of means is m independent Bernoullis
    rng = np.random.default_rng(3)
    judged = _judgements(20)
    p = rng.uniform(0.1, 0.5, size=(8, 20))
    record = ExploredRecord()
    record.add(np.arange(10), p[:, :10])
    record.add(np.arange(10, 20), p[:, 10:])
    grades = (rng.random(20) < 0.3).astype(int)
    judged.add(np.arange(15), grades[:15])  # the second batch half judged
    relevant = grades >= 1
    direct = check_explored([(p[:, :10], relevant[:10]), (p[:, 10:15], relevant[10:15])], seed=7)
    assert record.check(judged, level=1, seed=7) == direct
    assert direct.documents == 15 and direct.found == int(relevant[:15].sum())
    means = p.mean(axis=0)[None, :]
    exact = np.cumsum(_poisson_binomial(means[0]))
    independent = check_explored([(means, relevant)], seed=0)
    assert abs(independent.lower - _quantile(exact, 0.05)) <= 1
    assert abs(independent.upper - _quantile(exact, 0.95)) <= 1
    assert check_explored([(np.zeros((1, 0)), np.zeros(0, dtype=bool))]) is None
    assert check_explored([]) is None
    with pytest.raises(ValueError, match="s x m"):
        check_explored([(np.full((2, 3), 0.5), np.ones(2, dtype=bool))])
