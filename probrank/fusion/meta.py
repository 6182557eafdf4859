"""META fusion: score distributions of relevant and non-relevant documents (Manmatha, Rath &
Feng 2001, "Modeling score distributions for combining the outputs of search engines", SIGIR).

For one run and topic, the list's scores ``s`` (its top ``depth``) are modelled as a mixture

``p(s) = w N(s; mean, std^2) + (1 - w) rate exp(-rate (s - shift))``,

a Gaussian for the relevant documents and an exponential, starting at the list's lowest score
``shift``, for the non-relevant ones. The mixture is fitted by expectation-maximisation (EM)
and each document is scored by its posterior probability of relevance
``P(relevant | s) = w N(s) / p(s)``; META fusion sums these posteriors over runs (Manmatha et
al. average them, which ranks identically).

Numerics and degenerate lists:

* EM runs on scores shifted by ``shift`` and divided by their standard deviation, so the
  floors below are relative to the list's spread: the Gaussian's std is kept at or above
  :data:`MIN_STD` (1% of the list's std; a Gaussian collapsing on one score has unbounded
  likelihood), the mixing weight in ``[1e-6, 1 - 1e-6]``.
* EM starts from soft responsibilities equal to the min-max normalised scores (a
  deterministic start); ``n_init > 1`` adds restarts from uniform random responsibilities,
  drawn from a generator seeded by ``seed`` and the list's own scores, so that a list's fit does
  not depend on the other lists in the batch nor on their order. The fit with the highest
  log-likelihood wins.
* Convergence: the relative change of the log-likelihood falls to ``tol`` or below
  (``|l_t - l_{t-1}| <= tol * max(1, |l_t|)``). A list that has not converged after ``max_iter``
  iterations keeps its last parameters and a :class:`~probrank.exceptions.ConvergenceWarning` is
  raised (one per call).
* The Gaussian's tail falls faster than the exponential's, so the posterior decreases again
  above :attr:`ScoreMixture.peak`: on the six Robust03 runs (top 100), the top document of 356
  of the 600 lists is not the list's most probably relevant one. ``monotone=True`` holds the
  posterior at its peak above it; the default keeps Manmatha et al.'s posterior. (Fused at
  depth 100 and evaluated with :func:`probrank.evaluation.evaluate`: P@5 0.522 for META, 0.544
  for ``monotone=True``, 0.568 for CombSUM with min-max.)
* A list with fewer than :data:`MIN_DISTINCT_SCORES` distinct scores (one or two documents, or
  constant scores) identifies no mixture. It falls back to the min-max normalised score as its
  "posterior" (1.0 for every document of a constant list, as
  :attr:`~probrank.fusion.normalize.Normalization.MINMAX`); its :class:`ScoreMixture` has
  ``fallback=True``, ``mean`` = the highest score, ``weight`` = the mean fallback score,
  ``std = rate = log_likelihood = 0``, ``n_iter = 0``. Nothing is NaN.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from probrank.data.trec import Run
from probrank.exceptions import ConvergenceWarning, InputDataError
from probrank.fusion.comb import check_runs, collect_lists, combine, combsum_rule
from probrank.fusion.normalize import check_depth, top_documents

__all__ = [
    "META_MAX_ITER",
    "MIN_DISTINCT_SCORES",
    "MIN_STD",
    "ScoreMixture",
    "fit_score_mixture",
    "fit_score_mixtures",
    "meta_fusion",
    "meta_scores",
]

MIN_DISTINCT_SCORES = 3
"""Lists with fewer distinct scores use the min-max fallback instead of a fitted mixture."""
META_MAX_ITER = 1000
"""Default EM iterations of :func:`meta_scores` and :func:`meta_fusion`: on the six Robust03
runs of the QLFusion experiments (top 100) 3% of the 600 lists need more than 200 EM
iterations and all converge within 500."""
MIN_STD = 1e-2
"""Floor of the Gaussian's std, as a fraction of the list's (population) std."""
_MIN_WEIGHT = 1e-6
_TINY = 1e-300
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class ScoreMixture:
    """A fitted Gaussian (relevant) + shifted exponential (non-relevant) score mixture.

    Attributes:
        weight: Mixing weight ``w`` of the Gaussian: the prior probability of relevance.
        mean: Mean of the Gaussian, in score units (the highest score for a fallback).
        std: Standard deviation of the Gaussian, in score units.
        rate: Rate of the exponential, per score unit.
        shift: Where the exponential starts: the lowest fitted score.
        log_likelihood: Log-likelihood of the fitted scores (densities in score units).
        converged: Whether EM met its tolerance.
        n_iter: EM iterations (M-steps after the initial one) run.
        fallback: True for a list with too few distinct scores (see the module docstring).
    """

    weight: float
    mean: float
    std: float
    rate: float
    shift: float
    log_likelihood: float
    converged: bool
    n_iter: int
    fallback: bool = False

    @property
    def peak(self) -> float:
        """The score where ``P(relevant | score)`` is highest: ``mean + rate * std**2``.

        The posterior's log-odds, ``-(s - mean)^2 / (2 std^2) + rate s + const``, is a concave
        parabola: above ``peak`` the Gaussian's tail falls faster than the exponential's and the
        posterior decreases again (for a fallback: the highest score).
        """
        if self.fallback:
            return self.mean
        return max(self.mean + self.rate * self.std**2, self.shift)

    def posterior_relevant(
        self, scores: ArrayLike, *, monotone: bool = False
    ) -> NDArray[np.float64]:
        """``P(relevant | score)`` for each score.

        Scores below ``shift`` are treated as ``shift`` (the exponential has no mass below it).

        Args:
            scores: Scores of any shape.
            monotone: Hold the posterior at its maximum for scores above :attr:`peak`, so that
                it never decreases with the score (the "convexity" assumption that a higher
                score never means less likely relevant; Robertson 2007, "On score distributions
                and relevance", ECIR). False gives the model's posterior, as Manmatha et al.

        Returns:
            Posterior probabilities in ``[0, 1]``, same shape, float64.
        """
        s = np.asarray(scores, dtype=np.float64)
        if self.fallback:
            span = self.mean - self.shift
            if not span > 0.0:
                return np.ones_like(s)
            return np.clip((s - self.shift) / span, 0.0, 1.0)
        x = np.maximum(s - self.shift, 0.0)
        if monotone:
            x = np.minimum(x, self.peak - self.shift)
        log_g = (
            math.log(self.weight)
            - math.log(self.std)
            - _LOG_SQRT_2PI
            - 0.5 * ((x - (self.mean - self.shift)) / self.std) ** 2
        )
        log_e = math.log1p(-self.weight) + math.log(self.rate) - self.rate * x
        return np.asarray(expit(log_g - log_e), dtype=np.float64)


def _e_step(
    x: NDArray[np.float64],
    mask: NDArray[np.bool_],
    weight: NDArray[np.float64],
    mu: NDArray[np.float64],
    sigma: NDArray[np.float64],
    rate: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Responsibilities `B x n` of the Gaussian and log-likelihoods `B` (masked)."""
    log_g = (
        np.log(weight)[:, None]
        - np.log(sigma)[:, None]
        - _LOG_SQRT_2PI
        - 0.5 * ((x - mu[:, None]) / sigma[:, None]) ** 2
    )
    log_e = (np.log1p(-weight) + np.log(rate))[:, None] - rate[:, None] * x
    log_p = np.logaddexp(log_g, log_e)
    resp = np.where(mask, np.exp(log_g - log_p), 0.0)
    return resp, np.where(mask, log_p, 0.0).sum(axis=1)


def _m_step(
    x: NDArray[np.float64], mask: NDArray[np.bool_], resp: NDArray[np.float64]
) -> tuple[NDArray[np.float64], ...]:
    """Mixture parameters `B` each from responsibilities `B x n` (standardised units)."""
    count = mask.sum(axis=1)
    w_rel = np.where(mask, resp, 0.0)
    w_non = np.where(mask, 1.0 - resp, 0.0)
    r_sum = np.maximum(w_rel.sum(axis=1), _TINY)
    weight = np.clip(w_rel.sum(axis=1) / count, _MIN_WEIGHT, 1.0 - _MIN_WEIGHT)
    mu = (w_rel * x).sum(axis=1) / r_sum
    var = (w_rel * (x - mu[:, None]) ** 2).sum(axis=1) / r_sum
    sigma = np.sqrt(np.maximum(var, MIN_STD**2))
    rate = np.maximum(w_non.sum(axis=1), _TINY) / np.maximum((w_non * x).sum(axis=1), _TINY)
    return weight, mu, sigma, rate


def _run_em(
    x: NDArray[np.float64],
    mask: NDArray[np.bool_],
    resp0: NDArray[np.float64],
    max_iter: int,
    tol: float,
) -> tuple[tuple[NDArray[np.float64], ...], NDArray[np.float64], NDArray[np.bool_], NDArray]:
    """EM from initial responsibilities; rows freeze once converged."""
    params = _m_step(x, mask, resp0)
    _, loglik = _e_step(x, mask, *params)
    converged = np.zeros(x.shape[0], dtype=bool)
    n_iter = np.zeros(x.shape[0], dtype=np.int64)
    for _ in range(max_iter):
        active = ~converged
        if not active.any():
            break
        idx = np.flatnonzero(active)
        resp, _ = _e_step(x[idx], mask[idx], *(p[idx] for p in params))
        new_params = _m_step(x[idx], mask[idx], resp)
        _, new_loglik = _e_step(x[idx], mask[idx], *new_params)
        for p, q in zip(params, new_params, strict=True):
            p[idx] = q
        change = np.abs(new_loglik - loglik[idx])
        loglik[idx] = new_loglik
        n_iter[idx] += 1
        converged[idx] = change <= tol * np.maximum(1.0, np.abs(new_loglik))
    return params, loglik, converged, n_iter


def _list_seed(scores: NDArray[np.float64]) -> int:
    return zlib.crc32(np.sort(scores).tobytes())


def fit_score_mixtures(
    lists: Sequence[ArrayLike],
    *,
    max_iter: int = 200,
    tol: float = 1e-8,
    seed: int = 0,
    n_init: int = 1,
) -> list[ScoreMixture]:
    """Fit one Gaussian + exponential mixture per score list, all lists in one batched EM.

    Each list's fit is the same as :func:`fit_score_mixture` on it alone; no warning is
    raised here (callers count ``converged`` themselves).

    Args:
        lists: Score lists (any lengths ``>= 1``), finite.
        max_iter: Maximum EM iterations per list.
        tol: Relative log-likelihood tolerance.
        seed: Seed of the random restarts (unused with ``n_init=1``).
        n_init: EM starts per list: the deterministic one, plus ``n_init - 1`` random ones.

    Returns:
        One :class:`ScoreMixture` per list, in order.

    Raises:
        InputDataError: an empty or non-finite list, or bad ``max_iter``, ``tol``, ``n_init``.
    """
    if max_iter < 1 or n_init < 1:
        raise InputDataError(f"max_iter and n_init must be >= 1, got {max_iter}, {n_init}")
    if not (math.isfinite(tol) and tol >= 0.0):
        raise InputDataError(f"tol must be a finite number >= 0, got {tol}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
    arrays = [np.asarray(s, dtype=np.float64).ravel() for s in lists]
    results: list[ScoreMixture | None] = [None] * len(arrays)
    fit_index: list[int] = []
    for i, s in enumerate(arrays):
        if s.size == 0 or not np.isfinite(s).all():
            raise InputDataError(f"score list {i} is empty or holds a non-finite value")
        if np.unique(s).size < MIN_DISTINCT_SCORES:
            low, high = float(np.min(s)), float(np.max(s))
            post = np.ones_like(s) if high == low else (s - low) / (high - low)
            results[i] = ScoreMixture(
                weight=float(post.mean()),
                mean=high,
                std=0.0,
                rate=0.0,
                shift=low,
                log_likelihood=0.0,
                converged=True,
                n_iter=0,
                fallback=True,
            )
        else:
            fit_index.append(i)
    if fit_index:
        for i, mixture in zip(
            fit_index,
            _fit_batch([arrays[i] for i in fit_index], max_iter, tol, seed, n_init),
            strict=True,
        ):
            results[i] = mixture
    return [r for r in results if r is not None]


def _fit_batch(
    arrays: list[NDArray[np.float64]], max_iter: int, tol: float, seed: int, n_init: int
) -> list[ScoreMixture]:
    width = max(a.size for a in arrays)
    batch = len(arrays)
    x = np.zeros((batch, width))
    mask = np.zeros((batch, width), dtype=bool)
    shift = np.empty(batch)
    scale = np.empty(batch)
    for b, s in enumerate(arrays):
        shift[b] = np.min(s)
        scale[b] = (s - shift[b]).std()
        x[b, : s.size] = (s - shift[b]) / scale[b]
        mask[b, : s.size] = True
    counts = mask.sum(axis=1)
    params, loglik, converged, n_iter = _run_em(
        x, mask, x / x.max(axis=1, keepdims=True), max_iter, tol
    )
    for start in range(1, n_init):
        resp0 = np.zeros_like(x)
        for b, s in enumerate(arrays):
            rng = np.random.default_rng([seed, _list_seed(s), start])
            resp0[b, : s.size] = rng.uniform(size=s.size)
        new_params, new_loglik, new_converged, new_n_iter = _run_em(x, mask, resp0, max_iter, tol)
        better = new_loglik > loglik
        for p, q in zip(params, new_params, strict=True):
            p[better] = q[better]
        loglik[better] = new_loglik[better]
        converged[better] = new_converged[better]
        n_iter[better] = new_n_iter[better]
    weight, mu, sigma, rate = params
    loglik = loglik - counts * np.log(scale)
    return [
        ScoreMixture(
            weight=float(weight[b]),
            mean=float(shift[b] + mu[b] * scale[b]),
            std=float(sigma[b] * scale[b]),
            rate=float(rate[b] / scale[b]),
            shift=float(shift[b]),
            log_likelihood=float(loglik[b]),
            converged=bool(converged[b]),
            n_iter=int(n_iter[b]),
        )
        for b in range(batch)
    ]


def fit_score_mixture(
    scores: ArrayLike,
    *,
    max_iter: int = 200,
    tol: float = 1e-8,
    seed: int = 0,
    n_init: int = 1,
) -> ScoreMixture:
    """Fit a Gaussian (relevant) + shifted exponential (non-relevant) mixture by EM.

    Args:
        scores: `n` finite scores of one list (any order).
        max_iter: Maximum EM iterations.
        tol: Relative log-likelihood tolerance.
        seed: Seed of the random restarts (unused with ``n_init=1``).
        n_init: EM starts: the deterministic one plus ``n_init - 1`` random ones.

    Returns:
        The fitted mixture (a documented fallback for fewer than three distinct scores).

    Warns:
        ConvergenceWarning: EM did not converge within ``max_iter`` iterations.

    Raises:
        InputDataError: empty or non-finite scores, or bad options.
    """
    (mixture,) = fit_score_mixtures([scores], max_iter=max_iter, tol=tol, seed=seed, n_init=n_init)
    if not mixture.converged:
        warnings.warn(
            f"META EM did not converge in {max_iter} iterations (tol={tol})",
            ConvergenceWarning,
            stacklevel=2,
        )
    return mixture


def _posterior_lists(
    runs: Sequence[Run],
    depth: int | None,
    max_iter: int,
    tol: float,
    seed: int,
    n_init: int,
    monotone: bool,
) -> list[dict[str, dict[str, float]]]:
    depth = check_depth(depth)
    keys: list[tuple[int, str, list[str]]] = []
    lists: list[NDArray[np.float64]] = []
    for r, run in enumerate(runs):
        for qid, docs in run.as_dict().items():
            top = top_documents(docs, depth)
            if top:
                keys.append((r, qid, [d for d, _ in top]))
                lists.append(np.array([s for _, s in top], dtype=np.float64))
    mixtures = fit_score_mixtures(lists, max_iter=max_iter, tol=tol, seed=seed, n_init=n_init)
    failed = sum(not m.converged for m in mixtures)
    if failed:
        warnings.warn(
            f"META EM did not converge for {failed} of {len(mixtures)} lists in {max_iter} "
            f"iterations (tol={tol}); their last estimates are used",
            ConvergenceWarning,
            stacklevel=3,
        )
    out: list[dict[str, dict[str, float]]] = [{qid: {} for qid in run.as_dict()} for run in runs]
    for (r, qid, doc_ids), scores, mixture in zip(keys, lists, mixtures, strict=True):
        post = mixture.posterior_relevant(scores, monotone=monotone)
        out[r][qid] = dict(zip(doc_ids, post.tolist(), strict=True))
    return out


def meta_scores(
    run: Run,
    *,
    depth: int | None = None,
    max_iter: int = META_MAX_ITER,
    tol: float = 1e-8,
    seed: int = 0,
    n_init: int = 1,
    monotone: bool = False,
) -> Run:
    """Replace each score by ``P(relevant | score)`` under the list's fitted mixture.

    Args:
        run: The run (raw scores); not modified.
        depth: Fit on and keep each query's top ``depth`` documents; ``None``: all.
        max_iter, tol, seed, n_init: As in :func:`fit_score_mixture` (but up to
            :data:`META_MAX_ITER` iterations by default).
        monotone: See :meth:`ScoreMixture.posterior_relevant`.

    Returns:
        A new run of posteriors with the same name and tag, cut at ``depth``.

    Warns:
        ConvergenceWarning: once, if EM did not converge for some lists.
    """
    check_runs([run])
    (lists,) = _posterior_lists([run], depth, max_iter, tol, seed, n_init, monotone)
    return Run(lists, name=run.name, tag=run.tag)


def meta_fusion(
    runs: Sequence[Run],
    *,
    depth: int | None = None,
    max_iter: int = META_MAX_ITER,
    tol: float = 1e-8,
    seed: int = 0,
    n_init: int = 1,
    monotone: bool = False,
    name: str = "meta",
) -> Run:
    """META: the sum over runs of each document's posterior probability of relevance.

    Args:
        runs: Raw runs (no normalisation needed: the fit is invariant to affine rescaling).
        depth: Fit on each list's top ``depth`` documents; ``None``: all.
        max_iter, tol, seed, n_init: As in :func:`fit_score_mixture` (but up to
            :data:`META_MAX_ITER` iterations by default).
        monotone: See :meth:`ScoreMixture.posterior_relevant`.
        name: The fused run's name.

    Returns:
        The fused run.

    Warns:
        ConvergenceWarning: once, if EM did not converge for some lists.
    """
    check_runs(runs)
    posteriors = _posterior_lists(runs, depth, max_iter, tol, seed, n_init, monotone)
    return combine(collect_lists([r.name for r in runs], posteriors), combsum_rule, name)
