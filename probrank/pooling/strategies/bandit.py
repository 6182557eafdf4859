"""The MaxMean non-stationary bandit, MM-NS (Losada, Parapar & Barreiro 2017).

Variant: in each topic, run ``r`` is an arm whose reward rate has the posterior
``Beta(1 + rel_r, 1 + nonrel_r)``, counted over its *judged prefix* (its ranking from rank 1
up to its first unjudged document, whichever run caused each judgement: the non-stationary
reading); the arm of highest posterior mean ``(1 + rel_r) / (2 + rel_r + nonrel_r)`` is pulled
(ties: a random order of the runs drawn once per topic from the seed), i.e. its next unjudged
document is judged. Runs with no document left drop out. Documents proposed before their grades
are known are skipped by every pointer and not counted. Topics take turns
(:class:`~probrank.pooling.strategies.base.TopicSelector`); estimates: unjudged not relevant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName, TopicSelector

__all__ = ["MaxMeanBandit", "MaxMeanSelector", "beta_mean"]


def beta_mean(relevant: np.ndarray, nonrelevant: np.ndarray) -> np.ndarray:
    """Posterior mean of ``Beta(1 + relevant, 1 + nonrelevant)``, elementwise."""
    return (1.0 + relevant) / (2.0 + relevant + nonrelevant)


class MaxMeanSelector(TopicSelector):
    """MM-NS within each topic."""

    def __init__(
        self, pool: Pool, judgements: Judgements, level: int, rng: np.random.Generator
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        self.tiebreak = np.stack([rng.permutation(pool.num_runs) for _ in range(pool.num_topics)])

    def counts(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Relevant and non-relevant judged documents in each run's judged prefix in topic
        ``t`` (pointers moved past taken documents first), each `num_runs`."""
        grades = self.judgements.grades
        rel = np.zeros(self.pool.num_runs)
        non = np.zeros(self.pool.num_runs)
        for r in range(self.pool.num_runs):
            self.advance(r, t)
            prefix = self.pool.rankings[r, t, : self.pointer[r, t]]
            g = grades[prefix[prefix >= 0]]
            g = g[g >= 0]  # pending documents are not counted
            rel[r] = np.sum(g >= self.level)
            non[r] = np.sum(g < self.level)
        return rel, non

    def next_in_topic(self, t: int) -> int:
        rel, non = self.counts(t)
        means = beta_mean(rel, non)
        best, best_mean = -1, -np.inf
        for r in self.tiebreak[t]:
            item = self.advance(int(r), t)
            if item >= 0 and means[r] > best_mean:
                best, best_mean = item, means[r]
        return best


@dataclass(frozen=True)
class MaxMeanBandit(Strategy):
    """MM-NS (see the module documentation)."""

    name = StrategyName.MM_NS

    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        return MaxMeanSelector(pool, judgements, level, np.random.default_rng(seed))
