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

:meth:`BradleyTerryLaplace.botorch_model
<probrank.posteriors.CandidateSetPosterior.botorch_model>` exposes it to BoTorch
(:class:`~probrank.posteriors.preference.PreferenceUtilityModel`) over its candidates only:
a point is a candidate's datapoint row (its feature vector when built by
:meth:`~BradleyTerryLaplace.from_features`, else its index as a one-column row ``[i]``), and
``condition_on_observations`` / ``fantasize`` condition copies on judgements between
candidates.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.posteriors.base import CandidateSetPosterior
from probrank.posteriors.indices import candidate_index
from probrank.posteriors.newton import LaplaceFit, Link, difference_rows, laplace_fit
from probrank.posteriors.preference import match_rows

__all__ = ["BradleyTerryLaplace", "Link", "candidate_index", "rbf_kernel"]


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


class BradleyTerryLaplace(CandidateSetPosterior):
    """Pairwise-preference model with a Gaussian prior and a Laplace posterior.

    A :class:`~probrank.posteriors.base.CandidateSetPosterior` over its candidates only (a
    point that is not a candidate's datapoint row is refused); the Newton solve is
    :func:`~probrank.posteriors.newton.laplace_fit`.

    Args:
        prior_mean: `n` prior means ``m0``.
        prior_covariance: `n x n` symmetric positive-definite prior covariance ``K``.
        scale: The likelihood scale ``s`` (> 0): larger means noisier judgements.
        link: ``"logistic"`` (Bradley-Terry) or ``"probit"``.
        max_iter: Newton iterations per update.
        tol: Stop when the largest change of ``f`` in a step is below ``tol``.
        features: `n x d` rows that stand for the candidates in BoTorch (default: their
            indices as an `n x 1` column).

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
        features: Tensor | None = None,
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
        rows = (
            torch.arange(mean.shape[0], dtype=torch.float64).unsqueeze(-1)
            if features is None
            else features
        )
        super().__init__(rows, jitter=0.0)
        if self.features.shape[0] != mean.shape[0]:
            raise InputDataError(
                f"features have {self.features.shape[0]} rows for {mean.shape[0]} candidates"
            )
        self.prior_mean = mean
        self.prior_covariance = 0.5 * (cov + cov.T)
        self.scale = float(scale)
        self.link = parse_enum(Link, link, "link")
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self._fit = self._laplace()
        self._covariance = self._fit.covariance()

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
            features: `n x d` candidate features (also the model's BoTorch datapoints).
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
        return cls(mean, kernel, features=features, **kwargs)  # type: ignore[arg-type]

    def posterior(self) -> MultivariateNormal:
        """The Laplace posterior: mean = MAP `n`, covariance `n x n` (float64, copies)."""
        return MultivariateNormal(
            self._fit.mode.clone(), DenseLinearOperator(self._covariance.clone())
        )

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
        return MultivariateNormal(self._fit.mode[index], DenseLinearOperator(covariance))

    def _extend(self, rows: Tensor) -> None:
        raise InputDataError(
            "BradleyTerryLaplace knows only its candidates: every point must be a row of "
            "its datapoints (the candidates' features, or their indices as `n x 1` rows)"
        )

    def _condition(self, new: list[tuple[int, int]]) -> None:
        self._fit = self._laplace()
        self._covariance = self._fit.covariance()

    def predictive(
        self, prior_mean: Tensor, cross_covariance: Tensor, prior_covariance: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The Laplace posterior's predictive at other points (the GP conditional).

        With prior ``N(m, K)`` over the `n` candidates and ``q(f) = N(f_hat, Sigma)``::

            mean_* = m_* + K_*n K^-1 (f_hat - m)
            cov_*  = K_** - K_*n K^-1 K_n* + K_*n K^-1 Sigma K^-1 K_n*

        (computed without ``K^-1``: :meth:`~probrank.posteriors.newton.LaplaceFit.predictive`).
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
        if cross.shape[-1] != self.num_candidates or cross.shape[:-1] != m_new.shape:
            raise InputDataError(
                f"cross_covariance must be {tuple(m_new.shape)} x {self.num_candidates}, got "
                f"{tuple(cross.shape)}"
            )
        return self._fit.predictive(m_new, cross, prior_covariance)

    def _laplace(self) -> LaplaceFit:
        rows = difference_rows(self._comparisons, self.num_candidates, self.scale)
        return laplace_fit(
            self.prior_mean,
            self.prior_covariance,
            rows,
            self.link,
            max_iter=self.max_iter,
            tol=self.tol,
        )

    def __repr__(self) -> str:
        return (
            f"BradleyTerryLaplace(n={self.num_candidates}, judgements={len(self._comparisons)}, "
            f"link={self.link.value!r}, scale={self.scale})"
        )
