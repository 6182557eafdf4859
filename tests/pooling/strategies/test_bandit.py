from __future__ import annotations

import numpy as np
import pytest

from probrank.data.trec import Run
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies import MaxMeanBandit
from probrank.pooling.strategies.bandit import beta_mean


def test_beta_posterior_mean() -> None:
    # Beta(1 + 2, 1 + 1): mean 3 / 5
    assert beta_mean(np.array([2.0]), np.array([1.0]))[0] == pytest.approx(0.6)
    assert beta_mean(np.array([0.0]), np.array([0.0]))[0] == pytest.approx(0.5)


def test_mm_ns_pulls_the_highest_posterior_mean() -> None:
    a = Run({"1": {"x": 3.0, "y": 2.0, "z": 1.0}}, name="A")
    b = Run({"1": {"x": 3.0, "w": 2.0, "v": 1.0}}, name="B")
    pool = Pool.from_runs([a, b], depth=3)
    judged = Judgements(pool)
    judged.add([pool.item("1", "x"), pool.item("1", "y")], [1, 0])
    selector = MaxMeanBandit().start(pool, judged, seed=0)
    rel, non = selector.counts(0)
    # A's judged prefix x, y: Beta(2, 2), mean 1/2; B's prefix x: Beta(2, 1), mean 2/3
    assert rel.tolist() == [1.0, 1.0] and non.tolist() == [1.0, 0.0]
    items = selector.propose(1)
    assert str(pool.docs[items[0]]) == "w"
    judged.add(items, [0])
    selector.observe(items, np.array([0]))
    # now A: 1/2, B: Beta(2, 2) 1/2 too; a further non-relevant on B's side would switch
    rel, non = selector.counts(0)
    assert beta_mean(rel, non).tolist() == pytest.approx([0.5, 0.5])
