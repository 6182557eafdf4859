"""Depth-k pooling, cut at a budget.

Variant: within a topic, documents are judged in order of their best (smallest) rank over the
runs, ties by run order (rank 1 of every run, then rank 2 of every run, ...); so judging a
topic's first ``n`` documents judges the depth-``k`` pool for the largest ``k`` it covers.
Topics take turns (:class:`~probrank.pooling.strategies.base.TopicSelector`). Estimates: the
partial qrels read as trec_eval does, unjudged documents not relevant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName, TopicSelector

__all__ = ["DepthK", "DepthKSelector"]


class DepthKSelector(TopicSelector):
    """Depth-k order within each topic."""

    def __init__(
        self, pool: Pool, judgements: Judgements, level: int, rng: np.random.Generator
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        # rank-major order of each topic: ranking[:, t, :].T flattened, first appearances
        self.orders: list[np.ndarray] = []
        for t in range(pool.num_topics):
            flat = pool.rankings[:, t, :].T.reshape(-1)
            flat = flat[flat >= 0]
            _, first = np.unique(flat, return_index=True)
            self.orders.append(flat[np.sort(first)])
        self.cursor = np.zeros(pool.num_topics, dtype=np.int64)

    def next_in_topic(self, t: int) -> int:
        order = self.orders[t]
        c = int(self.cursor[t])
        while c < len(order) and self.taken(int(order[c])):
            c += 1
        self.cursor[t] = c
        return int(order[c]) if c < len(order) else -1


@dataclass(frozen=True)
class DepthK(Strategy):
    """Depth-k pooling (see the module documentation)."""

    name = StrategyName.DEPTH_K

    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        return DepthKSelector(pool, judgements, level, np.random.default_rng(seed))
