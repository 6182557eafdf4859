"""Active sampling with Horvitz-Thompson estimators (Li & Kanoulas 2017).

Variant: each round, every topic draws documents *with replacement* from a distribution
``q`` over its pool until it has its share of new distinct documents; ``q`` is a mixture over
the runs of the AP-prior (Aslam, Pavlu & Yilmaz 2006: a document at rank ``k`` of a depth-``D``
ranking weighs ``(1 + sum_{i=k}^{D} 1/i) / (2D)``), with run weights proportional to the runs'
current estimated MAP (uniform in the first round; ``active=False`` keeps them uniform). After
rounds ``j`` with distributions ``q_j`` and ``n_j`` draws, a document's inclusion probability is
``pi_d = 1 - prod_j (1 - q_jd)^{n_j}`` and a pair's ``pi_de = 1 - prod (1 - q_jd)^{n_j} -
prod (1 - q_je)^{n_j} + prod (1 - q_jd - q_je)^{n_j}``.

Estimator (per topic): the number of relevant documents ``R^ = sum_{d in S} rel_d / pi_d``; the
sum of precisions at relevant documents of a run, ``sum_d rel_d prec@k_d``, by
``sum_{d in S} rel_d / (k_d pi_d) + sum_{e above d, both in S} rel_d rel_e / (k_d pi_de)``;
AP^ is their ratio (each term unbiased given the distributions; the ratio is consistent).
nDCG@10: the DCG by ``sum_{d in S, k_d <= 10} g_d / (pi_d log2(k_d + 1))`` over the ideal DCG of
the judged grades. Intervals are the points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probrank.pooling.estimates import PoolEstimates
from probrank.pooling.measures import CUTOFF, ideal_dcg
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName

__all__ = [
    "ActiveSampling",
    "ActiveSamplingSelector",
    "ap_prior",
    "horvitz_thompson",
    "inclusion_probabilities",
]


def ap_prior(depth: int) -> np.ndarray:
    """The AP-prior weight of ranks ``1..depth``, `depth` (sums to 1)."""
    inverse = 1.0 / np.arange(1, depth + 1)
    tail = np.cumsum(inverse[::-1])[::-1]
    return (1.0 + tail) / (2.0 * depth)


def inclusion_probabilities(
    history: list[tuple[np.ndarray, int]], items: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusion probabilities of ``items`` and of their pairs after sampling rounds.

    Args:
        history: ``(q, n)`` per round: the distribution over the topic's items, `n_t`, and
            the number of draws with replacement.
        items: Positions (in the topic) of the sampled items, `m`.

    Returns:
        ``(pi, pi_pairs)``, `m` and `m x m` (the diagonal holds ``pi``).
    """
    log_single = np.zeros(len(items))
    log_pair = np.zeros((len(items), len(items)))
    for q, n in history:
        qs = q[items]
        log_single += n * np.log1p(-np.minimum(qs, 1.0))
        both = np.minimum(qs[:, None] + qs[None, :], 1.0)
        log_pair += n * np.log1p(-both)
    single = np.exp(log_single)
    pi = 1.0 - single
    pairs = 1.0 - single[:, None] - single[None, :] + np.exp(log_pair)
    np.fill_diagonal(pairs, pi)
    return pi, pairs


def horvitz_thompson(
    ranks: np.ndarray, relevant: np.ndarray, pi: np.ndarray, pi_pairs: np.ndarray
) -> tuple[float, np.ndarray]:
    """Horvitz-Thompson estimates of one topic from a sample.

    Args:
        ranks: Ranks of the sampled items in each run, `num_runs x m` (0: unranked).
        relevant: Relevance of the sampled items (0/1), `m`.
        pi: Inclusion probabilities, `m`.
        pi_pairs: Pairwise inclusion probabilities, `m x m`.

    Returns:
        ``(R^, sums)``: the estimated number of relevant documents and each run's estimated
        sum of precisions at its relevant documents, `num_runs`.
    """
    rel = np.asarray(relevant, dtype=np.float64)
    total = float(np.sum(rel / pi))
    sums = np.zeros(ranks.shape[0])
    for r in range(ranks.shape[0]):
        k = ranks[r].astype(np.float64)
        on = (k > 0) & (rel > 0)
        if not on.any():
            continue
        idx = np.flatnonzero(on)
        kk = k[idx]
        single = np.sum(1.0 / (kk * pi[idx]))
        above = kk[None, :] < kk[:, None]  # [d, e]: e ranked above d
        pair = np.sum(above / (kk[:, None] * pi_pairs[np.ix_(idx, idx)]))
        sums[r] = single + pair
    return total, sums


class ActiveSamplingSelector(Selector):
    """Active sampling (see the module documentation)."""

    def __init__(
        self,
        pool: Pool,
        judgements: Judgements,
        level: int,
        rng: np.random.Generator,
        *,
        active: bool,
        round_share: float,
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        self.active = active
        self.round_share = round_share
        prior = ap_prior(pool.depth)
        # each run's AP-prior over each topic's items: runs x items (zero where unranked)
        self.weights = np.where(pool.ranks > 0, prior[np.maximum(pool.ranks, 1) - 1], 0.0)
        self.run_weights = np.full(pool.num_runs, 1.0 / pool.num_runs)
        self.history: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(pool.num_topics)]
        self.sampled: list[list[int]] = [[] for _ in range(pool.num_topics)]

    @property
    def batch_size(self) -> int:
        return max(self.pool.num_topics, round(self.round_share * self.pool.num_items))

    def _distribution(self, t: int) -> np.ndarray:
        items = self.pool.topic_items(t)
        q = self.run_weights @ self.weights[:, items]
        total = q.sum()
        return q / total if total > 0 else np.full(len(items), 1.0 / len(items))

    def propose(self, k: int) -> np.ndarray:
        judged = self.judgements.judged
        free = np.array(
            [np.sum(~judged[self.pool.topic_items(t)]) for t in range(self.pool.num_topics)]
        )
        quota = np.zeros(self.pool.num_topics, dtype=np.int64)
        # share k among the topics with documents left, one at a time in turn
        for _ in range(k):
            open_ = np.flatnonzero(quota < free)
            if len(open_) == 0:
                break
            quota[open_[np.argmin(quota[open_])]] += 1
        chosen: list[int] = []
        for t in range(self.pool.num_topics):
            if quota[t] == 0:
                continue
            items = self.pool.topic_items(t)
            q = self._distribution(t)
            seen = set(self.sampled[t])
            new: list[int] = []
            draws = 0
            while len(new) < quota[t]:
                batch = self.rng.choice(len(items), size=max(2 * quota[t], 16), p=q)
                for pos in batch.tolist():
                    draws += 1
                    if pos not in seen:
                        seen.add(pos)
                        if not judged[items[pos]]:
                            new.append(pos)
                        if len(new) >= quota[t]:
                            break
            self.history[t].append((q, draws))
            self.sampled[t].extend(sorted(set(seen) - set(self.sampled[t])))
            chosen.extend(int(items[p]) for p in new)
        return np.array(chosen, dtype=np.int64)

    def observe(self, items: np.ndarray, grades: np.ndarray) -> None:
        if self.active:
            maps = self.estimate().mean["map"]
            if maps.sum() > 0:
                self.run_weights = (maps + 1e-3) / (maps + 1e-3).sum()

    def estimate(self, *, seed: int = 0) -> PoolEstimates:
        pool = self.pool
        grades = self.judgements.grades
        ap = np.zeros((pool.num_runs, pool.num_topics))
        dcg = np.zeros((pool.num_runs, pool.num_topics))
        known = np.maximum(grades, 0).astype(np.float64)
        ideal = ideal_dcg(pool, known[None, :])[0]
        discount = 1.0 / np.log2(np.arange(2, CUTOFF + 2))
        for t in range(pool.num_topics):
            positions = np.array(
                [p for p in self.sampled[t] if grades[pool.topic_start[t] + p] >= 0],
                dtype=np.int64,
            )
            if len(positions) == 0:
                continue
            items = pool.topic_start[t] + positions
            pi, pairs = inclusion_probabilities(self.history[t], positions)
            rel = (grades[items] >= self.level).astype(np.float64)
            ranks = pool.ranks[:, items]
            total, sums = horvitz_thompson(ranks, rel, pi, pairs)
            if total > 0:
                ap[:, t] = sums / total
            top = (ranks > 0) & (ranks <= CUTOFF)
            gain = np.where(top, known[items] / pi * discount[np.clip(ranks, 1, CUTOFF) - 1], 0.0)
            if ideal[t] > 0:
                dcg[:, t] = gain.sum(axis=1) / ideal[t]
        has = pool.rankings[:, :, 0] >= 0
        count = np.maximum(has.sum(axis=1), 1)
        values = {
            "map": (ap * has).sum(axis=1) / count,
            "ndcg_cut_10": (dcg * has).sum(axis=1) / count,
        }
        return PoolEstimates.from_points(pool.run_names, values)


@dataclass(frozen=True)
class ActiveSampling(Strategy):
    """Active sampling (see the module documentation).

    Attributes:
        active: Re-weight the runs by their estimated MAP after each round.
        round_share: Documents per round, as a share of the pool.
    """

    active: bool = True
    round_share: float = 0.01
    name = StrategyName.ACTIVE_SAMPLING

    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        return ActiveSamplingSelector(
            pool,
            judgements,
            level,
            np.random.default_rng(seed),
            active=self.active,
            round_share=self.round_share,
        )
