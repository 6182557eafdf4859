"""Move-to-front pooling (Cormack, Palmer & Clarke 1998, "local MTF").

Variant: in each topic every run has a priority, at first minus the number of non-relevant
documents already judged in its judged prefix (0 on a fresh pool). The topic's current run is
one of highest priority (ties: a random order of the runs drawn once per topic from the seed);
it proposes its next unjudged document. A relevant judgement keeps the turn with that run; a
non-relevant one lowers its priority by one and the turn passes to a run of highest priority. A
run with no unjudged document left drops out. Documents proposed in one batch before their
grades are known are taken from the current run in turn. Topics take turns
(:class:`~probrank.pooling.strategies.base.TopicSelector`); estimates: unjudged not relevant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName, TopicSelector

__all__ = ["MoveToFront", "MoveToFrontSelector"]


class MoveToFrontSelector(TopicSelector):
    """Move-to-front within each topic."""

    def __init__(
        self, pool: Pool, judgements: Judgements, level: int, rng: np.random.Generator
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        self.tiebreak = np.stack([rng.permutation(pool.num_runs) for _ in range(pool.num_topics)])
        self.priority = np.zeros((pool.num_runs, pool.num_topics), dtype=np.float64)
        grades = judgements.grades
        for t in range(pool.num_topics):
            for r in range(pool.num_runs):
                self.advance(r, t)
                prefix = pool.rankings[r, t, : self.pointer[r, t]]
                prefix = prefix[prefix >= 0]
                self.priority[r, t] = -float(np.sum(grades[prefix] < level))
        self.current = np.array([self._best(t) for t in range(pool.num_topics)])
        self.source: dict[int, tuple[int, int]] = {}

    def _best(self, t: int) -> int:
        # highest priority among runs with documents left; ties by the topic's random order
        alive = [
            int(r)
            for r in self.tiebreak[t]
            if self.pool.rankings[r, t, self.pointer[r, t] :].max(initial=-1) >= 0
        ]
        if not alive:
            return -1
        return max(alive, key=lambda r: self.priority[r, t])

    def next_in_topic(self, t: int) -> int:
        for _ in range(self.pool.num_runs + 1):
            r = int(self.current[t])
            if r < 0:
                return -1
            item = self.advance(r, t)
            if item >= 0:
                self.source[item] = (r, t)
                return item
            self.priority[r, t] = -np.inf  # exhausted
            self.current[t] = self._best(t)
        return -1

    def observe(self, items: np.ndarray, grades: np.ndarray) -> None:
        super().observe(items, grades)
        for item, grade in zip(items.tolist(), np.asarray(grades).tolist(), strict=True):
            r, t = self.source.pop(item, (-1, -1))
            if r < 0 or grade >= self.level:
                continue
            self.priority[r, t] -= 1.0
            if self.current[t] == r:
                self.current[t] = self._best(t)


@dataclass(frozen=True)
class MoveToFront(Strategy):
    """Move-to-front (see the module documentation)."""

    name = StrategyName.MTF

    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        return MoveToFrontSelector(pool, judgements, level, np.random.default_rng(seed))
