"""A Bayesian model of which pooled documents are relevant, given their ranks in every run.

For document ``d`` of topic ``t`` ranked at ``k_r(d)`` by run ``r`` (within the pool depth
``D``; unranked runs contribute nothing),

``logit P(rel_d) = a_t + (b1 + b1_t) log(eps + mean_r phi_r(d) / log(D + 1)) + b2 log(share of runs
ranking d) + (1/R) sum_r [k_r(d) > 0] (c_r + w_r phi_r(d))``, ``phi_r(d) = log(D + 1) -
log k_r(d)``

over the ``R`` runs, so each run has a logistic rank-relevance curve in log-rank (its
deviation from the common curve of the fused evidence), a document's runs combine through the
log of their mean evidence (a run that does not rank it adds 0), and runs and topics are
partially pooled through Gaussian priors around population means
(:class:`PoolingModelSettings`). The posterior of the parameters is the
Laplace approximation at the MAP (Newton's method on the exact gradient and Hessian of the
Bernoulli log-likelihood plus the Gaussian log-prior); a refit after new judgements starts from
the previous MAP, so a few Newton steps suffice.
"""

from __future__ import annotations

import numpy as np

from probrank.exceptions import InputDataError
from probrank.models.pooling.settings import PoolingModelSettings

__all__ = ["PoolingRelevanceModel"]


class PoolingRelevanceModel:
    """Rank-relevance curves of runs, partially pooled across runs and topics (MAP + Laplace).

    Args:
        settings: Priors and fitting options.

    Attributes:
        mean: The MAP parameters after ``fit``: `2 * num_runs + 2 * num_topics + 5` (slopes
            ``w``, retrieved effects ``c``, topic offsets ``a``, topic deviations ``b1_t`` of
            the fused evidence's coefficient, the coefficients ``b1, b2`` of the
            fused evidence, then ``mu_w, mu_c, mu_a``).
        covariance_factor: Lower Cholesky factor of the Laplace covariance (inverse Hessian).
    """

    def __init__(self, settings: PoolingModelSettings | None = None):
        self.settings = settings or PoolingModelSettings()
        self.mean: np.ndarray | None = None
        self.covariance_factor: np.ndarray | None = None
        self._shape: tuple[int, int, int] | None = None

    # ----------------------------------------------------------------- features
    @staticmethod
    def rank_features(ranks: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The per-run features of items.

        Args:
            ranks: 1-based ranks, 0 where unranked, `num_runs x n`.
            depth: The pool depth ``D``.

        Returns:
            ``(slope_feature, retrieved)``, both `num_runs x n` float64:
            ``(log(D + 1) - log(k)) / num_runs`` and ``1 / num_runs`` where ranked, 0
            elsewhere.
        """
        scale = 1.0 / ranks.shape[0]
        retrieved = (ranks > 0) * scale
        slope = np.where(ranks > 0, np.log(depth + 1.0) - np.log(np.maximum(ranks, 1)), 0.0)
        return slope * scale, retrieved

    @staticmethod
    def fused_features(ranks: np.ndarray, depth: int) -> np.ndarray:
        """The runs' combined evidence: ``log(eps + mean_r phi_r / log(D + 1))`` with
        ``phi_r = log(D + 1) - log(k_r)`` (0 where unranked, ``eps = 1e-3``), and the log of
        the share of runs that rank the item, `2 x n`."""
        phi = np.where(ranks > 0, np.log(depth + 1.0) - np.log(np.maximum(ranks, 1)), 0.0)
        fused = np.log(_EPS + phi.mean(axis=0) / np.log(depth + 1.0))
        share = np.log(np.maximum((ranks > 0).mean(axis=0), 1.0 / (2 * ranks.shape[0])))
        return np.vstack([fused, share])

    def _design(self, ranks: np.ndarray, topics: np.ndarray, depth: int) -> np.ndarray:
        _num_runs, num_topics, _ = self._checked_shape()
        slope, retrieved = self.rank_features(ranks, depth)
        onehot = np.zeros((len(topics), num_topics))
        onehot[np.arange(len(topics)), topics] = 1.0
        hyper = np.zeros((len(topics), 3))
        fused = self.fused_features(ranks, depth)
        return np.hstack([slope.T, retrieved.T, onehot, onehot * fused[0][:, None], fused.T, hyper])

    def _checked_shape(self) -> tuple[int, int, int]:
        if self._shape is None:
            raise InputDataError("the pooling model is not fitted: call fit first")
        return self._shape

    def _fitted(self) -> tuple[np.ndarray, np.ndarray]:
        if self.mean is None or self.covariance_factor is None:
            raise InputDataError("the pooling model is not fitted: call fit first")
        return self.mean, self.covariance_factor

    def _prior_precision(self, num_runs: int, num_topics: int) -> np.ndarray:
        s = self.settings
        size = 2 * num_runs + 2 * num_topics + 5
        precision = np.zeros((size, size))
        topic_slopes = np.arange(2 * num_runs + num_topics, 2 * num_runs + 2 * num_topics)
        precision[topic_slopes, topic_slopes] = 1.0 / s.topic_slope_scale**2
        precision[size - 5, size - 5] = precision[size - 4, size - 4] = 1.0 / s.hyper_scale**2
        groups = [
            (np.arange(num_runs), size - 3, s.run_scale),
            (np.arange(num_runs, 2 * num_runs), size - 2, s.retrieved_scale),
            (np.arange(2 * num_runs, 2 * num_runs + num_topics), size - 1, s.topic_scale),
        ]
        for members, hyper, scale in groups:
            tau = 1.0 / scale**2
            # sum_i (theta_i - mu)^2 * tau, expanded
            precision[members, members] += tau
            precision[members, hyper] -= tau
            precision[hyper, members] -= tau
            precision[hyper, hyper] += tau * len(members) + 1.0 / s.hyper_scale**2
        return precision

    # ----------------------------------------------------------------- fitting
    def fit(
        self,
        ranks: np.ndarray,
        topics: np.ndarray,
        labels: np.ndarray,
        *,
        num_topics: int,
        depth: int,
    ) -> PoolingRelevanceModel:
        """Fit the MAP and the Laplace covariance on judged items.

        Args:
            ranks: Ranks of the judged items in every run, `num_runs x n` (0: unranked).
            topics: Topic index of each judged item, `n`.
            labels: Relevance of each judged item (0 or 1), `n`.
            num_topics: Topics in the pool (offsets of unjudged topics come from the prior).
            depth: The pool depth.

        Returns:
            ``self``; a second ``fit`` with the same runs and topics starts from this MAP.
        """
        ranks = np.asarray(ranks)
        labels = np.asarray(labels, dtype=np.float64)
        topics = np.asarray(topics, dtype=np.int64)
        if ranks.ndim != 2 or ranks.shape[1] != len(labels) or len(topics) != len(labels):
            raise InputDataError("ranks must be num_runs x n with n labels and n topics")
        shape = (ranks.shape[0], num_topics, depth)
        if self._shape != shape:
            self.mean = None
        self._shape = shape
        design = self._design(ranks, topics, depth)
        precision = self._prior_precision(ranks.shape[0], num_topics)
        theta = self.mean.copy() if self.mean is not None else np.zeros(design.shape[1])
        for _ in range(self.settings.max_iterations):
            prob = _sigmoid(design @ theta)
            gradient = design.T @ (labels - prob) - precision @ theta
            hessian = (design.T * (prob * (1.0 - prob))) @ design + precision
            step = np.linalg.solve(hessian, gradient)
            theta = theta + step
            if np.max(np.abs(step)) < self.settings.tolerance:
                break
        prob = _sigmoid(design @ theta)
        hessian = (design.T * (prob * (1.0 - prob))) @ design + precision
        self.mean = theta
        # covariance = hessian^-1 = (L L^T)^-1 = L^-T L^-1: draws are mean + L^-T z
        self.covariance_factor = np.linalg.cholesky(hessian)
        return self

    # ----------------------------------------------------------------- posterior
    def sample_parameters(self, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of the parameters from the Laplace posterior, `num_samples x num_params`."""
        mean, factor = self._fitted()
        z = rng.standard_normal((len(mean), num_samples))
        from scipy.linalg import solve_triangular

        offsets = solve_triangular(factor.T, z, lower=False)
        return (mean[:, None] + offsets).T

    def logits(self, ranks: np.ndarray, topics: np.ndarray, parameters: np.ndarray) -> np.ndarray:
        """Logits of relevance of items under parameter draws.

        Args:
            ranks: Ranks of the items in every run, `num_runs x n`.
            topics: Topic index of each item, `n`.
            parameters: Parameter draws, `s x num_params` (or one vector, `num_params`).

        Returns:
            `s x n` (or `n` for one vector).
        """
        num_runs, num_topics, depth = self._checked_shape()
        single = parameters.ndim == 1
        params = np.atleast_2d(parameters)
        slope, retrieved = self.rank_features(ranks, depth)
        w = params[:, :num_runs]
        c = params[:, num_runs : 2 * num_runs]
        a = params[:, 2 * num_runs : 2 * num_runs + num_topics]
        fused = self.fused_features(ranks, depth)
        start = 2 * num_runs + num_topics
        slopes = params[:, start : start + num_topics]
        beta = params[:, start + num_topics : start + num_topics + 2]
        out = w @ slope + c @ retrieved + a[:, topics] + beta @ fused + slopes[:, topics] * fused[0]
        return out[0] if single else out

    def predict(self, ranks: np.ndarray, topics: np.ndarray) -> np.ndarray:
        """P(relevant) of items at the MAP, `n` (for ranks `num_runs x n`)."""
        mean, _ = self._fitted()
        return _sigmoid(self.logits(ranks, topics, mean))

    def posterior(
        self,
        ranks: np.ndarray,
        topics: np.ndarray,
        num_samples: int | None = None,
        seed: int | np.random.Generator = 0,
    ) -> np.ndarray:
        """Posterior draws of P(relevant) of items, `num_samples x n`.

        Args:
            ranks: Ranks of the items in every run, `num_runs x n` (0: unranked).
            topics: Topic index of each item, `n`.
            num_samples: Draws (default: the settings').
            seed: A seed or a numpy generator.
        """
        rng = np.random.default_rng(seed)
        draws = self.sample_parameters(num_samples or self.settings.num_samples, rng)
        return _sigmoid(self.logits(ranks, topics, draws))

    def run_curves(self, ranks: np.ndarray) -> np.ndarray:
        """Each run's fitted rank-relevance curve at the mean topic: P(rel) at the MAP of a
        document that only run ``r`` ranks, at ``ranks`` (`m`), `num_runs x m`."""
        num_runs, num_topics, _ = self._checked_shape()
        mean, _ = self._fitted()
        params = mean.copy()
        params[2 * num_runs : 2 * num_runs + num_topics] = mean[-1]  # every topic at mu_a
        params[2 * num_runs + num_topics : 2 * num_runs + 2 * num_topics] = 0.0
        k = np.asarray(ranks, dtype=np.int64)
        topics = np.zeros(len(k), dtype=np.int64)
        curves = np.zeros((num_runs, len(k)))
        for r in range(num_runs):
            alone = np.zeros((num_runs, len(k)), dtype=np.int64)
            alone[r] = k
            curves[r] = _sigmoid(self.logits(alone, topics, params))
        return curves


_EPS = 1e-3


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))
