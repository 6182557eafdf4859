from __future__ import annotations

import numpy as np

from probrank.data.trec import Run
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies import DepthK


def test_depth_k_order_is_rank_major() -> None:
    a = Run({"1": {"a": 3.0, "b": 2.0, "c": 1.0}}, name="A")
    b = Run({"1": {"b": 3.0, "d": 2.0, "a": 1.0}}, name="B")
    pool = Pool.from_runs([a, b], depth=3)
    judged = Judgements(pool)
    selector = DepthK().start(pool, judged)
    order = []
    while True:
        items = selector.propose(1)
        if len(items) == 0:
            break
        judged.add(items, [0])
        selector.observe(items, np.array([0]))
        order.append(str(pool.docs[items[0]]))
    assert order == ["a", "b", "d", "c"]


def test_depth_k_shares_budget_over_topics() -> None:
    a = Run({"1": {"a": 2.0, "b": 1.0}, "2": {"x": 2.0, "y": 1.0}}, name="A")
    pool = Pool.from_runs([a], depth=2)
    selector = DepthK().start(pool, Judgements(pool))
    items = selector.propose(3)
    assert [str(pool.docs[i]) for i in items] == ["a", "x", "b"]
