"""The interface of pooling strategies: a :class:`Strategy` is configuration; its
:meth:`Strategy.start` opens a :class:`Selector` on a pool and the judgements so far, which
proposes documents (``propose``), learns their grades (``observe``) and estimates the runs'
measures (``estimate``); a selector that explores (``bayesian``) also checks its relevance
model on the explored documents (``explored_check``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum

import numpy as np

from probrank.pooling.checks import ExploredCheck
from probrank.pooling.estimates import PoolEstimates, point_estimates
from probrank.pooling.pool import Judgements, Pool

__all__ = ["Selector", "Strategy", "StrategyName", "TopicSelector"]


class StrategyName(str, Enum):
    """The pooling strategies, by name."""

    DEPTH_K = "depth-k"
    """Depth-k pooling: each topic's documents in order of their best rank over the runs."""
    MTF = "mtf"
    """Move-to-front (Cormack, Palmer & Clarke 1998)."""
    MM_NS = "mm-ns"
    """The MaxMean non-stationary bandit (Losada, Parapar & Barreiro 2017)."""
    ACTIVE_SAMPLING = "active-sampling"
    """Active sampling with Horvitz-Thompson estimators (Li & Kanoulas 2017)."""
    BAYESIAN = "bayesian"
    """Posterior over relevance; judge where it most sharpens the system ranking."""


class Selector(ABC):
    """A strategy at work on one pool.

    Args:
        pool: The pool.
        judgements: The judgements so far (shared: the caller adds to it before ``observe``).
        level: Grades >= ``level`` are relevant.
        rng: The random generator of the strategy's choices.
    """

    def __init__(
        self, pool: Pool, judgements: Judgements, level: int, rng: np.random.Generator
    ) -> None:
        self.pool = pool
        self.judgements = judgements
        self.level = level
        self.rng = rng

    @property
    def batch_size(self) -> int:
        """Documents this strategy likes to propose between two observations."""
        return self.pool.num_topics

    @abstractmethod
    def propose(self, k: int) -> np.ndarray:
        """Up to ``k`` distinct unjudged items to judge next, in order, `<= k`."""

    def observe(self, items: np.ndarray, grades: np.ndarray) -> None:  # noqa: B027
        """Learn the grades of ``items`` (already added to the judgements); by default
        nothing to learn."""

    def estimate(self, *, seed: int = 0) -> PoolEstimates:
        """The runs' measures from the judgements so far (default: unjudged not relevant)."""
        return point_estimates(self.judgements, level=self.level)

    def explored_check(self, *, seed: int = 0) -> ExploredCheck | None:
        """The held-out check of the strategy's relevance model on its uniformly explored
        documents (:mod:`probrank.pooling.checks`); None for a strategy without one."""
        return None

    def explored_predictions(self) -> dict[int, np.ndarray]:
        """The uniformly explored items proposed so far, each with its posterior predictive
        P(relevant) per draw when it was chosen, `s` (the newest, for an item proposed twice):
        what :meth:`explored_check` tests, for a caller that keeps them (the judging page
        stores them with the judgements). Empty for a strategy that does not explore."""
        return {}


class Strategy(ABC):
    """A pooling strategy: configuration only; ``start`` opens a :class:`Selector`."""

    name: StrategyName

    @abstractmethod
    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        """A selector over ``pool`` that continues from ``judgements``."""

    def for_fresh_starts(self) -> Strategy:
        """The strategy as callers use it that start it afresh for every choice of one or a
        few documents (the judging page, ``pool next``): by default itself."""
        return self


class TopicSelector(Selector):
    """A strategy that chooses within each topic: ``propose`` serves the topics with the
    fewest judgements first, one document per topic per turn (so every topic gets the same
    share of the budget while it has documents left), each chosen by :meth:`next_in_topic`.
    Documents proposed but not yet observed count as taken."""

    def __init__(
        self, pool: Pool, judgements: Judgements, level: int, rng: np.random.Generator
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        self.pending = np.zeros(pool.num_items, dtype=bool)
        self.pointer = np.zeros((pool.num_runs, pool.num_topics), dtype=np.int64)
        self.exhausted = np.zeros(pool.num_topics, dtype=bool)

    def taken(self, item: int) -> bool:
        """Whether ``item`` is judged or proposed."""
        return bool(self.pending[item] or self.judgements.grades[item] >= 0)

    def advance(self, r: int, t: int) -> int:
        """Move run ``r``'s pointer in topic ``t`` past taken documents; its next item, or -1."""
        ranking = self.pool.rankings[r, t]
        p = int(self.pointer[r, t])
        while p < len(ranking) and ranking[p] >= 0 and self.taken(int(ranking[p])):
            p += 1
        self.pointer[r, t] = p
        return int(ranking[p]) if p < len(ranking) and ranking[p] >= 0 else -1

    @abstractmethod
    def next_in_topic(self, t: int) -> int:
        """The next item of topic ``t`` (not taken), or -1 when none is left."""

    def propose(self, k: int) -> np.ndarray:
        judged = self.judgements.judged
        counts = np.bincount(
            self.pool.item_topic[judged | self.pending], minlength=self.pool.num_topics
        )
        chosen: list[int] = []
        while len(chosen) < k and not self.exhausted.all():
            order = [t for t in np.argsort(counts, kind="stable") if not self.exhausted[t]]
            progressed = False
            for t in order:
                if len(chosen) >= k:
                    break
                item = self.next_in_topic(int(t))
                if item < 0:
                    self.exhausted[t] = True
                    continue
                self.pending[item] = True
                counts[t] += 1
                chosen.append(item)
                progressed = True
            if not progressed:
                break
        return np.array(chosen, dtype=np.int64)

    def observe(self, items: np.ndarray, grades: np.ndarray) -> None:
        self.pending[items] = False
