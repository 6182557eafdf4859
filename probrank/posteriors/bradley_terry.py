"""A Gaussian-prior Bradley-Terry preference model with a closed-form Laplace posterior.

Model over the utilities ``f`` of one question's `n` candidates::

    f ~ N(m0, K)
    P(a preferred to b | f) = L((f_a - f_b) / s)

with ``L`` the logistic function (Bradley-Terry) or the standard normal CDF (probit,
Thurstone), and ``s`` a scale. ``m0`` is e.g. a warm-start or cosine score, ``K`` a kernel over
the candidates' feature vectors (:meth:`BradleyTerryLaplace.from_features`), so that a
judgement about two answers also moves answers that resemble them.

The posterior is the Laplace approximation (Chu & Ghahramani, 2005), recomputed from the prior
and all judgements after each one: Newton's method to the MAP ``f_hat`` (the log posterior is
concave for both links) and ``Sigma = (K^-1 + W)^-1`` with ``W`` the negative Hessian of the
log likelihood at ``f_hat``. Writing ``W = D^T Lambda D`` (``D`` the `c x n` judgement
difference matrix, ``Lambda`` diagonal) the inverse goes through the `c x c` matrix
``I + Lambda^1/2 D K D^T Lambda^1/2`` (eigenvalues >= 1), so ``K`` is never inverted. Newton
steps are damped by step halving until the log posterior increases. Everything runs in
float64 and is deterministic: the same judgements in any order give the same posterior.

:meth:`BradleyTerryLaplace.botorch_model` exposes it to BoTorch
(:class:`~probrank.posteriors.preference.PreferenceUtilityModel`) over its candidates only:
a point is a candidate's datapoint row (its feature vector when built by
:meth:`~BradleyTerryLaplace.from_features`, else its index as a one-column row ``[i]``), and
``condition_on_observations`` / ``fantasize`` condition copies on judgements between
candidates.
"""

from __future__ import annotations

import copy
import math
import warnings
from enum import Enum

import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from probrank._options import parse_enum
from probrank.exceptions import ConvergenceWarning, InputDataError
from probrank.posteriors.indices import candidate_index, judgement
from probrank.posteriors.preference import PreferenceUtilityModel, comparison_pairs, match_rows

__all__ = ["BradleyTerryLaplace", "Link", "candidate_index", "rbf_kernel"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class Link(str, Enum):
    """The pairwise likelihood ``P(a preferred to b) = L((f_a - f_b) / s)``."""

    LOGISTIC = "logistic"
    """Bradley-Terry: ``L(z) = 1 / (1 + exp(-z))``."""
    PROBIT = "probit"
    """Thurstone: ``L(z) = Phi(z)``, the standard normal CDF."""


def _log_likelihood_terms(z: Tensor, link: Link) -> tuple[Tensor, Tensor, Tensor]:
    """``log L(z)``, its first derivative and the negated second derivative."""
    if link is Link.LOGISTIC:
        log_lik = torch.nn.functional.logsigmoid(z)
        grad = torch.sigmoid(-z)
        return log_lik, grad, torch.sigmoid(z) * grad
    log_lik = torch.special.log_ndtr(z)
    grad = torch.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_lik)
    return log_lik, grad, grad * (z + grad)


def rbf_kernel(
    features: Tensor,
    *,
    lengthscale: float | None = None,
    outputscale: float = 1.0,
    jitter: float = 1e-6,
) -> Tensor:
    """Squared-exponential kernel over candidate features, plus jitter.

    ``k(x, y) = outputscale * exp(-|x - y|^2 / (2 lengthscale^2)) + jitter * [x is y]``.

    Args:
        features: `n x d` candidate feature vectors (e.g. embeddings).
        lengthscale: Default: the median pairwise distance (1.0 if that is 0).
        outputscale: Prior variance of each utility.
        jitter: Added to the diagonal.

    Returns:
        `n x n` float64 covariance.
    """
    if features.dim() != 2:
        raise InputDataError(f"features must be n x d, got shape {tuple(features.shape)}")
    x = features.detach().to("cpu", torch.float64)
    distance = torch.cdist(x, x)
    if lengthscale is None:
        off_diagonal = distance[~torch.eye(x.shape[0], dtype=torch.bool)]
        median = float(off_diagonal.median()) if off_diagonal.numel() else 0.0
        lengthscale = median if median > 0 else 1.0
    if not lengthscale > 0 or not outputscale > 0 or jitter < 0:
        raise InputDataError(
            f"need lengthscale > 0, outputscale > 0, jitter >= 0; got {lengthscale}, "
            f"{outputscale}, {jitter}"
        )
    kernel = outputscale * torch.exp(-0.5 * (distance / lengthscale) ** 2)
    return kernel + jitter * torch.eye(x.shape[0], dtype=torch.float64)


class BradleyTerryLaplace:
    """Pairwise-preference model with a Gaussian prior and a Laplace posterior.

    Implements the :class:`~probrank.posteriors.protocol.PreferenceModel` protocol.

    Args:
        prior_mean: `n` prior means ``m0``.
        prior_covariance: `n x n` symmetric positive-definite prior covariance ``K``.
        scale: The likelihood scale ``s`` (> 0): larger means noisier judgements.
        link: ``"logistic"`` (Bradley-Terry) or ``"probit"``.
        max_iter: Newton iterations per update.
        tol: Stop when the largest change of ``f`` in a step is below ``tol``.

    Raises:
        InputDataError: Shapes disagree, the covariance is not symmetric positive definite, or
            an option is out of range.
    """

    def __init__(
        self,
        prior_mean: Tensor,
        prior_covariance: Tensor,
        *,
        scale: float = 1.0,
        link: str | Link = Link.LOGISTIC,
        max_iter: int = 100,
        tol: float = 1e-10,
    ) -> None:
        mean = torch.as_tensor(prior_mean).detach().to("cpu", torch.float64).clone()
        cov = torch.as_tensor(prior_covariance).detach().to("cpu", torch.float64).clone()
        if mean.dim() != 1 or cov.shape != (mean.shape[0], mean.shape[0]):
            raise InputDataError(
                f"prior_mean must be n and prior_covariance n x n, got {tuple(mean.shape)} and "
                f"{tuple(cov.shape)}"
            )
        if mean.shape[0] < 2:
            raise InputDataError(f"need at least 2 candidates, got {mean.shape[0]}")
        if not (torch.isfinite(mean).all() and torch.isfinite(cov).all()):
            raise InputDataError("prior mean or covariance holds NaN or infinite values")
        if not torch.allclose(cov, cov.T, rtol=1e-8, atol=1e-12):
            raise InputDataError("prior_covariance is not symmetric")
        if torch.linalg.cholesky_ex(cov).info != 0:
            raise InputDataError("prior_covariance is not positive definite (add jitter)")
        if not scale > 0 or max_iter < 1 or not tol > 0:
            raise InputDataError(
                f"need scale > 0, max_iter >= 1, tol > 0; got {scale}, {max_iter}, {tol}"
            )
        self.prior_mean = mean
        self.prior_covariance = 0.5 * (cov + cov.T)
        self.scale = float(scale)
        self.link = parse_enum(Link, link, "link")
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self._comparisons: list[tuple[int, int]] = []
        self._mode = mean.clone()
        self._covariance = self.prior_covariance.clone()
        self._features: Tensor | None = None

    @classmethod
    def from_features(
        cls,
        features: Tensor,
        prior_mean: Tensor | None = None,
        *,
        lengthscale: float | None = None,
        outputscale: float = 1.0,
        jitter: float = 1e-6,
        **kwargs: object,
    ) -> BradleyTerryLaplace:
        """Prior covariance from an RBF kernel over candidate features (:func:`rbf_kernel`).

        Args:
            features: `n x d` candidate features.
            prior_mean: `n` prior means (default zeros).
            lengthscale: Kernel lengthscale (default: median pairwise distance).
            outputscale: Prior variance of each utility.
            jitter: Added to the kernel diagonal.
            **kwargs: ``scale``, ``link``, ``max_iter``, ``tol`` of the constructor.
        """
        kernel = rbf_kernel(
            features, lengthscale=lengthscale, outputscale=outputscale, jitter=jitter
        )
        mean = (
            torch.zeros(kernel.shape[0], dtype=torch.float64) if prior_mean is None else prior_mean
        )
        model = cls(mean, kernel, **kwargs)  # type: ignore[arg-type]
        model._features = features.detach().to("cpu", torch.float64).clone()
        return model

    @property
    def num_candidates(self) -> int:
        return int(self.prior_mean.shape[0])

    @property
    def comparisons(self) -> list[tuple[int, int]]:
        """The ``(winner, loser)`` judgements conditioned on so far (a copy)."""
        return list(self._comparisons)

    def posterior(self) -> MultivariateNormal:
        """The Laplace posterior: mean = MAP `n`, covariance `n x n` (float64, copies)."""
        return MultivariateNormal(self._mode.clone(), DenseLinearOperator(self._covariance.clone()))

    def update(self, winner: int, loser: int) -> None:
        """Add the judgement "``winner`` preferred to ``loser``" and recompute the posterior.

        Raises:
            InputDataError: Indices out of range or equal.
        """
        self.update_many([(winner, loser)])

    def update_many(self, judgements: list[tuple[int, int]]) -> None:
        """Add several ``(winner, loser)`` judgements and recompute the posterior once (the
        same posterior as adding them one by one).

        Raises:
            InputDataError: Indices out of range or equal.
        """
        checked = [judgement(w, ell, self.num_candidates) for w, ell in judgements]
        if checked:
            self._comparisons.extend(checked)
            self._mode, self._covariance = self._laplace()

    @property
    def datapoints(self) -> Tensor:
        """`n x d` rows that stand for the candidates in BoTorch: the features given to
        :meth:`from_features`, else the indices as an `n x 1` column (float64)."""
        if self._features is not None:
            return self._features
        return torch.arange(self.num_candidates, dtype=torch.float64).unsqueeze(-1)

    def _indices(self, X: Tensor) -> Tensor:
        index = match_rows(self.datapoints, X)
        if bool((index < 0).any()):
            raise InputDataError(
                "BradleyTerryLaplace knows only its candidates: every point must be a row of "
                "its datapoints (the candidates' features, or their indices as `n x 1` rows)"
            )
        return index

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """The posterior of the candidates whose datapoint rows are the points ``X``.

        Args:
            X: `batch_shape x q x d` rows of :attr:`datapoints`.

        Returns:
            An MVN with mean `batch_shape x q` and dense covariance (float64).

        Raises:
            InputDataError: A point is not a candidate's row.
        """
        if X.dim() < 2:
            raise InputDataError(f"X must be batch_shape x q x d, got {tuple(X.shape)}")
        index = self._indices(X)
        covariance = self._covariance[index.unsqueeze(-1), index.unsqueeze(-2)]
        return MultivariateNormal(self._mode[index], DenseLinearOperator(covariance))

    def conditioned(self, X: Tensor, comparisons: Tensor) -> BradleyTerryLaplace:
        """A copy updated with ``comparisons`` between the candidates at the points ``X``.

        Args:
            X: `n' x d` rows of :attr:`datapoints`.
            comparisons: `m x 2` integer ``(winner, loser)`` rows indexing ``X``; a point
                compared with itself is skipped.

        Returns:
            A new model (``self`` is unchanged).
        """
        if X.dim() != 2:
            raise InputDataError(f"X must be n' x d, got {tuple(X.shape)}")
        index = self._indices(X).tolist()
        pairs = [(index[w], index[ell]) for w, ell in comparison_pairs(comparisons, len(index))]
        model = copy.deepcopy(self)
        model.update_many([(w, ell) for w, ell in pairs if w != ell])
        return model

    def botorch_model(self, noise_variance: float = 0.0) -> PreferenceUtilityModel:
        """A BoTorch ``Model`` over the candidates (current state; see the module doc).

        Args:
            noise_variance: Judgement noise added to the utilities' variance when BoTorch
                asks for observation noise (e.g. when fantasizing comparisons).
        """
        return PreferenceUtilityModel(self, self.datapoints, noise_variance=noise_variance)

    def predictive(
        self, prior_mean: Tensor, cross_covariance: Tensor, prior_covariance: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The Laplace posterior's predictive at other points (the GP conditional).

        With prior ``N(m, K)`` over the `n` candidates and ``q(f) = N(f_hat, Sigma)``::

            mean_* = m_* + K_*n K^-1 (f_hat - m)
            cov_*  = K_** - K_*n K^-1 K_n* + K_*n K^-1 Sigma K^-1 K_n*

        At the candidates themselves (``K_*n = K``) this returns ``f_hat`` and ``Sigma``.

        Args:
            prior_mean: `batch_shape x q` prior means ``m_*`` of the new points.
            cross_covariance: `batch_shape x q x n` prior covariances ``K_*n``.
            prior_covariance: `batch_shape x q x q` prior covariance ``K_**``.

        Returns:
            ``(mean, covariance)``: `batch_shape x q` and `batch_shape x q x q` (float64).
        """
        m_new = prior_mean.to(torch.float64)
        cross = cross_covariance.to(torch.float64)
        k_new = prior_covariance.to(torch.float64)
        if cross.shape[-1] != self.num_candidates or cross.shape[:-1] != m_new.shape:
            raise InputDataError(
                f"cross_covariance must be {tuple(m_new.shape)} x {self.num_candidates}, got "
                f"{tuple(cross.shape)}"
            )
        chol = torch.linalg.cholesky(self.prior_covariance)
        a = torch.cholesky_solve(cross.transpose(-1, -2), chol)  # K^-1 K_n*: n x q
        mean = m_new + (a.transpose(-1, -2) @ (self._mode - self.prior_mean).unsqueeze(-1)).squeeze(
            -1
        )
        covariance = k_new - cross @ a + a.transpose(-1, -2) @ self._covariance @ a
        return mean, 0.5 * (covariance + covariance.transpose(-1, -2))

    # -- internals ---------------------------------------------------------------------------

    def _difference_matrix(self) -> Tensor:
        c, n = len(self._comparisons), self.num_candidates
        d = torch.zeros(c, n, dtype=torch.float64)
        rows = torch.arange(c)
        index = torch.tensor(self._comparisons, dtype=torch.long)
        d[rows, index[:, 0]] = 1.0
        d[rows, index[:, 1]] = -1.0
        return d

    def _log_posterior(self, a: Tensor, d: Tensor) -> tuple[Tensor, Tensor]:
        centred = self.prior_covariance @ a
        log_lik, _, _ = _log_likelihood_terms(
            d @ (self.prior_mean + centred) / self.scale, self.link
        )
        return log_lik.sum() - 0.5 * a @ centred, centred

    def _woodbury(self, d: Tensor, f: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Gradient of the log likelihood, ``S = Lambda^1/2`` and ``chol(I + S D K D^T S)``."""
        z = d @ f / self.scale
        _, grad, neg_hess = _log_likelihood_terms(z, self.link)
        sqrt_lambda = neg_hess.clamp(min=0.0).sqrt() / self.scale
        sdk = sqrt_lambda.unsqueeze(-1) * (d @ self.prior_covariance)
        b = torch.eye(d.shape[0], dtype=torch.float64) + sdk @ (d.T * sqrt_lambda)
        return d.T @ grad / self.scale, sqrt_lambda, torch.linalg.cholesky(b)

    def _laplace(self) -> tuple[Tensor, Tensor]:
        k, m = self.prior_covariance, self.prior_mean
        d = self._difference_matrix()
        a = torch.zeros_like(m)  # f = m + K a
        objective, centred = self._log_posterior(a, d)
        converged = False
        for _ in range(self.max_iter):
            f = m + centred
            grad, sqrt_lambda, chol = self._woodbury(d, f)
            # Newton target: f_new - m = (K^-1 + W)^-1 (W (f - m) + grad) = K a_new
            w_centred = d.T @ (sqrt_lambda**2 * (d @ centred))
            b = w_centred + grad
            rhs = sqrt_lambda * (d @ (k @ b))
            correction = torch.cholesky_solve(rhs.unsqueeze(-1), chol).squeeze(-1)
            a_new = b - d.T @ (sqrt_lambda * correction)
            step, moved = 1.0, False
            for _ in range(40):  # damped Newton: halve the step until the objective increases
                candidate = a + step * (a_new - a)
                new_objective, new_centred = self._log_posterior(candidate, d)
                if new_objective >= objective - 1e-12 * abs(float(objective)):
                    moved = True
                    break
                step *= 0.5
            if not moved:  # no ascent left at machine precision: we are at the mode
                converged = True
                break
            change = float((new_centred - centred).abs().max())
            a, objective, centred = candidate, new_objective, new_centred
            if change < self.tol:
                converged = True
                break
        if not converged:
            warnings.warn(
                f"Laplace Newton iterations did not converge in {self.max_iter} steps "
                f"({len(self._comparisons)} judgements)",
                ConvergenceWarning,
                stacklevel=3,
            )
        mode = m + centred
        _, sqrt_lambda, chol = self._woodbury(d, mode)
        v = torch.linalg.solve_triangular(chol, sqrt_lambda.unsqueeze(-1) * (d @ k), upper=False)
        covariance = k - v.T @ v
        return mode, 0.5 * (covariance + covariance.T)

    def __repr__(self) -> str:
        return (
            f"BradleyTerryLaplace(n={self.num_candidates}, judgements={len(self._comparisons)}, "
            f"link={self.link.value!r}, scale={self.scale})"
        )
