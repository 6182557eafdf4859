from __future__ import annotations

import numpy as np
import pytest

from probrank.exceptions import InputDataError
from probrank.models.pooling import PoolingModelSettings, PoolingRelevanceModel


def _simulated(seed: int, n: int = 6000) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Items of 8 topics ranked by 4 runs (depth 50), relevance from known curves."""
    rng = np.random.default_rng(seed)
    runs, topics, depth = 4, 8, 50
    ranks = np.where(rng.random((runs, n)) < 0.6, rng.integers(1, depth + 1, (runs, n)), 0)
    topic = rng.integers(0, topics, n)
    model = PoolingRelevanceModel(PoolingModelSettings())
    model._shape = (runs, topics, depth)
    theta = np.zeros(2 * runs + 2 * topics + 5)
    theta[:runs] = [2.0, 4.0, 6.0, 8.0]  # slopes w_r
    theta[runs : 2 * runs] = -2.0  # retrieved effects c_r
    theta[2 * runs : 2 * runs + topics] = rng.normal(-0.5, 0.5, topics)  # topic offsets
    theta[2 * runs + 2 * topics] = 0.8  # b1
    logits = model.logits(ranks, topic, theta)
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(float)
    return ranks, topic, labels, 1.0 / (1.0 + np.exp(-logits))


def test_recovers_known_relevance_curves() -> None:
    ranks, topic, labels, prob = _simulated(0)
    train = slice(0, 5000)
    model = PoolingRelevanceModel().fit(
        ranks[:, train], topic[train], labels[train], num_topics=8, depth=50
    )
    held = slice(5000, None)
    predicted = model.predict(ranks[:, held], topic[held])
    assert np.mean(np.abs(predicted - prob[held])) < 0.03
    # the runs' curves keep their order (steeper slope: more relevance at the top)
    top = model.run_curves(np.array([1]))[:, 0]
    assert np.all(np.diff(top) > 0)


def test_posterior_intervals_cover() -> None:
    ranks, topic, labels, prob = _simulated(1, n=3000)
    model = PoolingRelevanceModel().fit(ranks, topic, labels, num_topics=8, depth=50)
    draws = model.posterior(ranks[:, :400], topic[:400], num_samples=400, seed=0)
    lower, upper = np.quantile(draws, [0.05, 0.95], axis=0)
    coverage = np.mean((lower <= prob[:400]) & (prob[:400] <= upper))
    assert 0.8 <= coverage <= 1.0


def test_refit_warm_starts_and_unfitted_errors() -> None:
    model = PoolingRelevanceModel()
    with pytest.raises(InputDataError, match="not fitted"):
        model.predict(np.zeros((2, 3), dtype=int), np.zeros(3, dtype=int))
    ranks, topic, labels, _ = _simulated(2, n=500)
    model.fit(ranks, topic, labels, num_topics=8, depth=50)
    first = model.mean.copy()
    model.fit(ranks, topic, labels, num_topics=8, depth=50)
    np.testing.assert_allclose(model.mean, first, atol=1e-6)


def test_settings_validate() -> None:
    with pytest.raises(InputDataError, match="run_scale"):
        PoolingModelSettings(run_scale=0.0)
