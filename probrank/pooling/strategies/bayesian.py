"""The ``bayesian`` strategy: a posterior over the relevance of every unjudged document, the
runs' measures by sampling it, and judgements chosen where they most sharpen the ranking.

* **Relevance**: :class:`~probrank.models.pooling.PoolingRelevanceModel` (each run's logistic
  rank-relevance curve in log-rank, partially pooled across runs and topics; MAP + Laplace),
  fitted on the judgements (relevant: grade >= level), refitted after every batch from the
  previous MAP.
* **Measures** (:func:`bayesian_estimates`): per draw, parameters from the Laplace posterior,
  each unjudged document's relevance from its Bernoulli, judged documents as judged; the grade
  of a sampled-relevant document is drawn from the judged relevant grades (a non-relevant
  one's from the judged non-relevant grades) for nDCG@10. Relevant documents outside the pool
  are estimated per topic and draw as the larger of Chao1 (bias-corrected:
  ``f1 (f1 - 1) / (2 (f2 + 1))``, ``f1``/``f2``: relevant documents that exactly one/two runs
  retrieve) and an extrapolation of the topic's discovery curve beyond the pool depth ``D``:
  relevant documents keep arriving at about the same number per doubling of the depth (TREC
  DL 2021: 297 first met at best ranks 26-50, 251 at 51-100; Robust03: 671 and 750), so the
  pool misses ``K`` more doublings' worth, ``K`` times the topic's relevant documents first met
  at best ranks in ``(D/2, D]`` (:func:`last_doubling`, from the same draw; with
  ``unpooled_window=2`` the relevant documents per doubling over ``(D/4, D]``), with one
  ``K ~ unpooled_doublings * LogNormal(0, unpooled_sd^2)`` per draw shared by the topics
  (Chao1 is a lower bound, and correlated runs make it far too low; :func:`unpooled_draws`);
  they count in the number of relevant documents of AP. MAP and nDCG@10 of every run per
  draw, vectorised (:func:`probrank.pooling.measures.run_measures`): means, 90% intervals,
  P(A > B).
* **Acquisition** (:class:`Acquisition`). Each batch is shared equally among the topics
  (those with the fewest judgements first: MAP weighs topics equally, and a topic never
  sampled would keep the model's errors); within a topic the highest scores are judged.
  ``influence`` (the default) scores ``d`` by ``v_d * mean_r prior_r(d)^2``: its relevance
  variance ``v_d = p_d (1 - p_d)`` (posterior predictive) times the mean square of the
  AP-prior weight of its ranks (Aslam et al. 2006; its influence on the runs' AP); an
  ``explore_share`` of each topic's batch is drawn uniformly from its unjudged documents
  instead, so that the model sees the deep, rarely retrieved documents whose relevance it
  would otherwise extrapolate (and over-predict) from the top ranks. Their predictive
  P(relevant) when chosen is kept, so that once judged they check the model where the
  estimates extrapolate (:meth:`BayesianSelector.explored_check`, :mod:`probrank.pooling.checks`;
  with ``posterior="nuts"`` the predictive checked is the Laplace's the strategy chooses with).
  ``pairwise`` is a first-order proxy of the expected reduction of the ranking's
  uncertainty: judging document ``d`` removes its relevance variance ``v_d = p_d (1 - p_d)``
  (posterior predictive) from every difference of two runs' MAP, by
  ``v_d (s_a(d) - s_b(d))^2``, with ``s_r(d)`` the derivative of run ``r``'s AP with respect to
  ``d``'s relevance at the expected relevances (:func:`ap_sensitivities`); the pairs weigh by
  how much their order is in doubt, the posterior density of their MAP difference at zero
  (:func:`pair_weights`). So ``d`` scores ``v_d sum_{a<b} w_ab (s_a(d) - s_b(d))^2`` (a
  quadratic form in the pairs' Laplacian). Only ranking-relevant documents would leave the
  model uncalibrated where it never looks (deep, rarely retrieved documents), so a
  ``calibration_share`` of each topic's batch goes to the largest relevance variances
  ``v_d`` instead (uncertainty sampling). The first ``warmup_per_topic`` documents of each
  topic, before the first fit, are judged in depth-k order.

The estimates work for any judgements of any pool, so also for runs that took no part in
choosing the documents: build the pool from every run, read the judgements with
:meth:`~probrank.pooling.pool.Judgements.from_qrels`, call :func:`bayesian_estimates`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np

from probrank.exceptions import InputDataError
from probrank.models._settings import check_positive, check_positive_int
from probrank.models.pooling import PoolingModelSettings, PoolingRelevanceModel
from probrank.pooling.checks import ExploredCheck, ExploredRecord
from probrank.pooling.estimates import PoolEstimates
from probrank.pooling.measures import ideal_dcg, run_measures
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies.active import ap_prior
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName
from probrank.pooling.strategies.depth import DepthKSelector

__all__ = [
    "Acquisition",
    "Bayesian",
    "BayesianSelector",
    "ap_sensitivities",
    "bayesian_estimates",
    "fit_relevance",
    "grade_draws",
    "last_doubling",
    "pair_weights",
    "unpooled_draws",
]


class Acquisition(str, Enum):
    """How the ``bayesian`` strategy scores an unjudged document (see the module docs)."""

    INFLUENCE = "influence"
    """``v_d * mean_r prior_r(d)^2``: relevance variance times the mean square AP-prior
    weight of the document's ranks (its influence on the runs' AP), on ``1 - explore_share``
    of each topic's batch, uniform draws from its unjudged documents on the rest."""
    PAIRWISE = "pairwise"
    """``v_d * sum_{a<b} w_ab (s_a(d) - s_b(d))^2`` on ``1 - calibration_share`` of each
    topic's batch, relevance variance ``v_d`` alone on the rest."""


def fit_relevance(
    judgements: Judgements,
    *,
    level: int = 1,
    settings: PoolingModelSettings | None = None,
    model: PoolingRelevanceModel | None = None,
) -> PoolingRelevanceModel:
    """Fit (or refit) the relevance model on the judged items of a pool."""
    pool = judgements.pool
    judged = np.flatnonzero(judgements.judged)
    model = model or PoolingRelevanceModel(settings)
    return model.fit(
        pool.ranks[:, judged],
        pool.item_topic[judged],
        (judgements.grades[judged] >= level).astype(np.float64),
        num_topics=pool.num_topics,
        depth=pool.depth,
    )


def _grade_sampler(grades: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    judged = grades[grades >= 0]
    relevant = judged[judged >= level]
    other = judged[judged < level]
    return (
        relevant if len(relevant) else np.array([level]),
        other if len(other) else np.array([0]),
    )


def sample_grades(
    judgements: Judgements,
    model: PoolingRelevanceModel,
    *,
    level: int,
    num_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of every item's grade: judged ones as judged, the rest from the posterior,
    `num_samples x num_items` (:func:`grade_draws` of the model's posterior draws of
    P(relevant))."""
    pool = judgements.pool
    probs = model.posterior(pool.ranks, pool.item_topic, num_samples=num_samples, seed=rng)
    return grade_draws(judgements, probs, level=level, rng=rng)


def grade_draws(
    judgements: Judgements,
    probabilities: np.ndarray,
    *,
    level: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of every item's grade given each draw's P(relevant) of the items: an unjudged
    item is relevant with that probability and takes a grade of the judged relevant (or
    other) items at random; judged items keep their grades.

    Args:
        judgements: The judgements.
        probabilities: P(relevant) of every item per draw, `s x num_items`.
        level: Grades >= ``level`` are relevant.
        rng: Generator of the draws.

    Returns:
        `s x num_items` float64.
    """
    relevant = rng.random(probabilities.shape) < probabilities
    rel_grades, other_grades = _grade_sampler(judgements.grades, level)
    grades = np.where(
        relevant,
        rng.choice(rel_grades, size=probabilities.shape),
        rng.choice(other_grades, size=probabilities.shape),
    ).astype(np.float64)
    judged = judgements.judged
    grades[:, judged] = judgements.grades[judged]
    return grades


def chao1_unpooled(pool: Pool, relevant: np.ndarray) -> np.ndarray:
    """Bias-corrected Chao1 estimate of each topic's relevant documents outside the pool.

    Args:
        pool: The pool.
        relevant: Relevance of the items per draw (0/1), `s x num_items`.

    Returns:
        `s x num_topics`.
    """
    retrieved_by = (pool.ranks > 0).sum(axis=0)
    f1 = np.zeros((relevant.shape[0], pool.num_topics))
    f2 = np.zeros_like(f1)
    np.add.at(f1.T, pool.item_topic, (relevant * (retrieved_by == 1)).T)
    np.add.at(f2.T, pool.item_topic, (relevant * (retrieved_by == 2)).T)
    return np.maximum(f1 * (f1 - 1.0), 0.0) / (2.0 * (f2 + 1.0))


def last_doubling(pool: Pool, relevant: np.ndarray, doublings: int = 1) -> np.ndarray:
    """Each topic's relevant items per doubling of the pool depth, over its last
    ``doublings`` doublings: those whose best rank over the runs lies in
    ``(D / 2^doublings, D]``, divided by ``doublings`` (with 1: the relevant items first met in
    ``(D/2, D]``).

    Args:
        pool: The pool (depth ``D``).
        relevant: Relevance of the items per draw (0/1 or bool), `s x num_items`.
        doublings: How many of the last doublings of the depth to average over.

    Returns:
        `s x num_topics`.
    """
    best = np.where(pool.ranks > 0, pool.ranks, pool.depth + 1).min(axis=0)
    late = (best > pool.depth / 2**doublings) & (best <= pool.depth)
    out = np.zeros((relevant.shape[0], pool.num_topics))
    np.add.at(out.T, pool.item_topic, (relevant * late).T)
    return out / doublings


def unpooled_draws(
    pool: Pool,
    relevant: np.ndarray,
    rng: np.random.Generator,
    *,
    doublings: float = 0.0,
    sd: float = 0.5,
    window: int = 1,
    expected: np.ndarray | None = None,
) -> np.ndarray:
    """Each topic's relevant documents outside the pool, per draw of the items' relevance:
    the larger of Chao1 (``chao1_unpooled``) and ``K`` times the topic's relevant items
    per doubling over the last ``window`` doublings of the depth (:func:`last_doubling`), one
    ``K ~ doublings * LogNormal(0, sd^2)`` per draw shared by the topics (``doublings`` 0:
    Chao1 alone).

    Args:
        pool: The pool.
        relevant: Relevance of the items per draw (0/1 or bool), `s x num_items`.
        rng: Generator of the ``K`` draws.
        doublings: Prior median of ``K``.
        sd: Prior sd of ``log K``.
        window: Doublings of the depth averaged over.
        expected: Each draw's P(relevant) of the items (judged ones 0/1), `s x num_items`:
            when given, ``K`` multiplies the relevant items per doubling the draw expects
            instead of those it drew (the count without the draw's Bernoulli noise;
            ``benchmarks/pooling_check.py``); Chao1 still counts the drawn ones.

    Returns:
        `s x num_topics`.
    """
    extra = chao1_unpooled(pool, relevant.astype(np.float64))
    if doublings > 0:
        k = doublings * np.exp(rng.normal(0.0, sd, size=(relevant.shape[0], 1)))
        counted = relevant if expected is None else expected
        extra = np.maximum(extra, k * last_doubling(pool, counted, window))
    return extra


def bayesian_estimates(
    judgements: Judgements,
    *,
    level: int = 1,
    settings: PoolingModelSettings | None = None,
    model: PoolingRelevanceModel | None = None,
    num_samples: int = 200,
    seed: int | np.random.Generator = 0,
    unpooled_doublings: float = 0.0,
    unpooled_sd: float = 0.5,
    unpooled_window: int = 1,
) -> PoolEstimates:
    """Posterior of every run's MAP and nDCG@10 given the judgements so far.

    Args:
        judgements: The judgements (of any pool: a run need not have chosen them).
        level: Grades >= ``level`` are relevant.
        settings: The relevance model's settings (when ``model`` is not given).
        model: A relevance model already fitted on ``judgements``.
        num_samples: Posterior draws.
        seed: Seed or generator.
        unpooled_doublings: Prior median of ``K``, the doublings of the pool depth whose
            relevant documents the pool misses (0, the default here: Chao1 alone; the
            strategy's default is 2).
        unpooled_sd: Prior sd of ``log K``; each draw takes one ``K`` shared by the topics
            (as the pool's blind spot is). A topic's unpooled relevant documents are the
            larger of Chao1 and ``K`` times its relevant documents per doubling of the depth
            over the last ``unpooled_window`` doublings (:func:`last_doubling`).
        unpooled_window: Doublings of the depth (``(D / 2^window, D]``) whose relevant
            documents per doubling ``K`` multiplies (1: best ranks 51-100 of a depth-100
            pool; 2: 26-100, which with ``posterior="nuts"`` estimated DL 2021's better,
            models/pooling/README.md).

    Returns:
        Means, 90% intervals, P(A > B) of MAP for every pair and the draws.
    """
    rng = np.random.default_rng(seed)
    if model is None:
        model = fit_relevance(judgements, level=level, settings=settings)
    pool = judgements.pool
    maps = np.zeros((num_samples, pool.num_runs))
    ndcgs = np.zeros_like(maps)
    chunk = 25
    for start in range(0, num_samples, chunk):
        n = min(chunk, num_samples - start)
        grades = sample_grades(judgements, model, level=level, num_samples=n, rng=rng)
        extra = unpooled_draws(
            pool,
            grades >= level,
            rng,
            doublings=unpooled_doublings,
            sd=unpooled_sd,
            window=unpooled_window,
        )
        ideal = ideal_dcg(pool, grades)
        m, d = run_measures(pool, grades, level=level, extra_relevant=extra, ideal=ideal)
        maps[start : start + n] = m
        ndcgs[start : start + n] = d
    return PoolEstimates.from_draws(pool.run_names, {"map": maps, "ndcg_cut_10": ndcgs})


def ap_sensitivities(pool: Pool, expected: np.ndarray) -> np.ndarray:
    """How much each item's relevance moves each run's AP, at the expected relevances.

    For run ``r`` and the item at rank ``k`` of a topic with expected relevances ``p``, the
    derivative of AP ``= (1/R) sum_k rel_k prec@k`` with respect to ``rel_k``:
    ``((1 + sum_{i<k} p_i) / k + sum_{j>k} p_j / j - AP_r) / R``, ``R = sum p`` over the
    topic (pool items).

    Args:
        pool: The pool.
        expected: Expected relevance of every item (judged: 0/1), `num_items`.

    Returns:
        `num_runs x num_items` (0 where the run does not rank the item).
    """
    valid = pool.rankings >= 0
    p = np.where(valid, expected[np.where(valid, pool.rankings, 0)], 0.0)  # runs x topics x D
    k = np.arange(1, pool.depth + 1, dtype=np.float64)
    before = np.cumsum(p, axis=-1) - p
    after = np.cumsum((p / k)[..., ::-1], axis=-1)[..., ::-1] - p / k
    total = np.bincount(pool.item_topic, weights=expected, minlength=pool.num_topics)
    total = np.maximum(total, 1.0)[None, :, None]
    ap = ((1.0 + before) / k * p).sum(axis=-1, keepdims=True) / total
    value = ((1.0 + before) / k + after - ap) / total
    out = np.zeros((pool.num_runs, pool.num_items))
    runs, topics, ranks = np.nonzero(valid)
    out[runs, pool.rankings[runs, topics, ranks]] = value[runs, topics, ranks]
    return out


def pair_weights(draws: np.ndarray | None, num_runs: int) -> np.ndarray:
    """How much each pair of runs' order is in doubt: the posterior density of their MAP
    difference at zero, ``phi(mu / sigma) / sigma`` (``mu``, ``sigma``: the mean and sd of the
    difference over ``draws``, `s x num_runs`), `num_runs x num_runs` (zero diagonal)."""
    if draws is None or len(draws) < 2:
        return np.ones((num_runs, num_runs)) - np.eye(num_runs)
    mean = draws.mean(axis=0)
    cov = np.cov(draws, rowvar=False)
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
    sd = np.sqrt(np.maximum(var, 1e-10))
    z = (mean[:, None] - mean[None, :]) / sd
    weights = np.exp(-0.5 * z**2) / sd
    np.fill_diagonal(weights, 0.0)
    return weights


def _equal_shares(k: int, judged: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Split ``k`` judgements over topics so that their judged counts stay as equal as
    possible (fewest judged first), never beyond a topic's size, `num_topics`."""
    quota = np.zeros(len(sizes), dtype=np.int64)
    count = judged.astype(np.int64).copy()
    for _ in range(k):
        open_ = np.flatnonzero(count < sizes)
        if len(open_) == 0:
            break
        t = open_[np.argmin(count[open_])]
        quota[t] += 1
        count[t] += 1
    return quota


def _explored_slots(quota: int, share: float, judged: int, by_count: bool) -> int:
    """How many of a topic's ``quota`` documents in a batch are explored (or, with
    ``pairwise``, chosen by variance alone) rather than by the score.

    Per batch: ``quota - round((1 - share) * quota)``, so a topic given one or two documents
    in a batch explores none. ``by_count``: as many as the multiples of ``1 / share`` that the
    topic's judged count crosses from ``judged`` to ``judged + quota`` (every fifth judgement
    with 0.2), whatever the batches.
    """
    if by_count:
        return int(share * (judged + quota) + 1e-9) - int(share * judged + 1e-9)
    return quota - round((1.0 - share) * quota)


class BayesianSelector(Selector):
    """The ``bayesian`` strategy at work (see the module documentation)."""

    def __init__(
        self,
        pool: Pool,
        judgements: Judgements,
        level: int,
        rng: np.random.Generator,
        *,
        strategy: Bayesian,
    ) -> None:
        super().__init__(pool, judgements, level, rng)
        self.strategy = strategy
        self.model = PoolingRelevanceModel(strategy.model)
        self.fitted_at = -1
        prior = ap_prior(pool.depth)
        weights = np.where(pool.ranks > 0, prior[np.maximum(pool.ranks, 1) - 1], 0.0)
        self.influence = (weights**2).mean(axis=0)  # items
        self.warmup = DepthKSelector(pool, judgements, level, rng)
        self.explored = ExploredRecord()

    @property
    def batch_size(self) -> int:
        share = round(self.strategy.batch_share * self.pool.num_items)
        return max(self.pool.num_topics, share)

    def _refit(self) -> None:
        if self.fitted_at != len(self.judgements):
            fit_relevance(self.judgements, level=self.level, model=self.model)
            self.fitted_at = len(self.judgements)

    def propose(self, k: int) -> np.ndarray:
        judged = self.judgements.judged
        if len(self.judgements) < self.strategy.warmup_per_topic * self.pool.num_topics:
            return self.warmup.propose(k)
        self._refit()
        pool = self.pool
        rng = self.rng
        predictive = self.model.posterior(
            pool.ranks,
            pool.item_topic,
            num_samples=self.strategy.acquisition_samples,
            seed=rng,
            mcmc=False,  # with posterior="nuts" the chain runs for the estimates only
        )
        probs = predictive.mean(axis=0)
        variance = np.where(judged, -np.inf, probs * (1.0 - probs))
        if self.strategy.acquisition is Acquisition.INFLUENCE:
            score = variance * self.influence
            share = self.strategy.explore_share
        else:
            expected = np.where(judged, (self.judgements.grades >= self.level).astype(float), probs)
            sensitivity = ap_sensitivities(pool, expected)
            draws = bayesian_estimates(
                self.judgements,
                level=self.level,
                model=self.model,
                num_samples=self.strategy.acquisition_samples,
                seed=rng,
            ).draws
            weights = pair_weights(draws["map"] if draws is not None else None, pool.num_runs)
            laplacian = np.diag(weights.sum(axis=1)) - weights
            spread = np.einsum("rn,rn->n", sensitivity, laplacian @ sensitivity)
            # judged items: -inf (not -inf x 0 = nan where their spread is 0)
            score = np.where(judged, -np.inf, probs * (1.0 - probs) * np.maximum(spread, 0.0))
            share = self.strategy.calibration_share
        counts = np.bincount(pool.item_topic[judged], minlength=pool.num_topics)
        quota = _equal_shares(k, counts, np.diff(pool.topic_start))
        chosen, explored = [], []
        by_count = self.strategy.explore_by_count
        for t in np.flatnonzero(quota):
            items = pool.topic_items(int(t))
            ranked = quota[t] - _explored_slots(int(quota[t]), share, int(counts[t]), by_count)
            best = items[np.argsort(-score[items], kind="stable")[:ranked]]
            rest = np.setdiff1d(items, best)
            if self.strategy.acquisition is Acquisition.INFLUENCE:
                rest = rest[np.isfinite(variance[rest])]
                rest = rng.permutation(rest)[: quota[t] - ranked]
                explored.append(rest)
            else:
                rest = rest[np.argsort(-variance[rest], kind="stable")[: quota[t] - ranked]]
            chosen.append(np.concatenate([best, rest]))
        out = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        out = out[np.isfinite(variance[out])]
        out = out[np.argsort(-score[out], kind="stable")].astype(np.int64)
        if explored:
            uniform = np.concatenate(explored).astype(np.int64)
            self.explored.add(uniform, predictive[:, uniform])
            if by_count:  # the explored first: their turn is now
                out = np.concatenate([uniform, out[~np.isin(out, uniform)]])
        return out

    def observe(self, items: np.ndarray, grades: np.ndarray) -> None:
        self.warmup.observe(items, grades)

    def explored_check(self, *, seed: int = 0) -> ExploredCheck | None:
        """The relevant documents found among the judged uniformly explored documents
        against the model's predictive distribution when it chose them
        (:meth:`~probrank.pooling.checks.ExploredRecord.check`); None before any is judged
        (or with ``acquisition="pairwise"``, which explores by variance, not uniformly)."""
        return self.explored.check(self.judgements, level=self.level, seed=seed)

    def explored_predictions(self) -> dict[int, np.ndarray]:
        return self.explored.predictions()

    def estimate(self, *, seed: int = 0) -> PoolEstimates:
        self._refit()
        return bayesian_estimates(
            self.judgements,
            level=self.level,
            model=self.model,
            num_samples=self.strategy.estimate_samples,
            seed=seed,
            unpooled_doublings=self.strategy.unpooled_doublings,
            unpooled_sd=self.strategy.unpooled_sd,
            unpooled_window=self.strategy.unpooled_window,
        )


@dataclass(frozen=True)
class Bayesian(Strategy):
    """The ``bayesian`` strategy (see the module documentation).

    Attributes:
        model: The relevance model's settings.
        batch_share: Documents judged between two refits, as a share of the pool.
        warmup_per_topic: Documents per topic judged in depth-k order before the first fit.
        acquisition: The acquisition score.
        calibration_share: With ``pairwise``: share of each topic's batch chosen by relevance
            variance alone (the rest by the ranking score): keeps the model calibrated where
            the ranking score never looks.
        acquisition_samples: Posterior draws behind the acquisition's relevance variances.
        estimate_samples: Posterior draws behind the estimates.
        explore_share: With ``influence``: share of each topic's batch drawn uniformly from
            its unjudged documents (the rest by the influence score): ``quota - round((1 -
            share) * quota)`` of a topic's ``quota`` documents, so a topic given one or two
            in a batch explores none of them (a simulation's last, partial batch before a
            budget).
        explore_by_count: Explore by each topic's running count of judgements instead: every
            ``1 / explore_share``-th judgement of a topic, whatever the batches, the explored
            documents first in the batch. For one document or a few at a time, where the
            per-batch share rounds to none: :meth:`for_fresh_starts` sets it (the judging
            page, ``pool next``).
        unpooled_doublings: Prior median of the doublings of the pool depth whose relevant
            documents the pool misses (0: Chao1 alone; see :func:`bayesian_estimates`).
        unpooled_sd: Prior sd of the log of those doublings. 0.3 puts the doublings that fit
            TREC DL 2021 (2.27) and Robust03 (3.67) at 0.4 and 2 sd from the median 2; the
            earlier 0.15 put Robust03's at 4 sd, and over 20 seeds its 90% intervals covered
            0.74-0.88 at 5-30% on both collections (0.3: 0.78-0.93; models/pooling/README.md).
        unpooled_window: The last doublings of the depth whose relevant documents per
            doubling are extrapolated (see :func:`bayesian_estimates`).
    """

    model: PoolingModelSettings = field(default_factory=PoolingModelSettings)
    batch_share: float = 0.005
    warmup_per_topic: int = 5
    acquisition: Acquisition = Acquisition.INFLUENCE
    calibration_share: float = 0.5
    explore_share: float = 0.2
    explore_by_count: bool = False
    acquisition_samples: int = 64
    estimate_samples: int = 200
    unpooled_doublings: float = 2.0
    unpooled_sd: float = 0.3
    unpooled_window: int = 1
    name = StrategyName.BAYESIAN

    def __post_init__(self) -> None:
        if not isinstance(self.explore_by_count, bool):
            raise InputDataError(
                f"explore_by_count must be true or false, got {self.explore_by_count!r}"
            )
        check_positive("unpooled_sd", self.unpooled_sd)
        check_positive_int("unpooled_window", self.unpooled_window)

    def for_fresh_starts(self) -> Bayesian:
        """This strategy exploring by count (``explore_by_count``): started afresh for each
        choice of one or a few documents, a topic's per-batch share of exploration would
        round to none."""
        return replace(self, explore_by_count=True)

    def start(
        self, pool: Pool, judgements: Judgements, *, level: int = 1, seed: int = 0
    ) -> Selector:
        return BayesianSelector(pool, judgements, level, np.random.default_rng(seed), strategy=self)
