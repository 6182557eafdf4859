"""Laplace posterior on the last layer of the Siamese network, updated in closed form.

The warm-start network gives each candidate a utility ``m(x)`` and a last hidden representation
``phi(x)`` (10 units). The per-question utility is modelled as::

    f(x) = m(x) + phi(x)^T delta + e(x),   delta ~ N(0, I / lambda),   e(x) ~ N(0, s_r^2)

i.e. the last layer's weights may move away from the warm start by ``delta`` (a Gaussian
prior: weight decay ``lambda``), plus an optional independent per-candidate residual (``s_r^2``,
``residual_variance``, 0 for the pure last-layer Laplace). Over the `n` candidates this is the
Gaussian prior ``N(m, Phi Phi^T / lambda + s_r^2 I)``; judgements enter through the
Bradley-Terry likelihood ``P(a over b) = sigmoid((f_a - f_b) / s)`` and the posterior is the
Laplace approximation computed in closed form by Newton's method
(:class:`~probrank.posteriors.bradley_terry.BradleyTerryLaplace`), exactly, after every
judgement: no SGD, deterministic. With ``residual_variance = 0`` it is the weight-space Laplace
posterior of ``delta`` pushed through ``phi`` (rank 10 plus jitter).

``posterior_at(X)`` for other features is the Gaussian-process conditional of the same model
(the residual kernel is ``s_r^2`` where two feature rows are identical, else 0).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.bradley_terry import BradleyTerryLaplace, Link
from probrank.posteriors.neural import (
    CandidateSetPosterior,
    as_float64_copy,
    check_candidate_features,
)
from probrank.posteriors.preference import distinct_rows, identical_rows

__all__ = ["LastLayerLaplacePosterior"]


def _identical_rows(a: Tensor, b: Tensor) -> Tensor:
    """`... x p x q` 1.0 where row ``i`` of ``a`` equals row ``j`` of ``b`` exactly."""
    return identical_rows(a, b).to(torch.float64)


class LastLayerLaplacePosterior(CandidateSetPosterior):
    """Closed-form Laplace posterior over the last-layer deviation of the Siamese network.

    Candidates with identical feature rows (the same answer text twice) are one point of the
    model: they share a utility, a judgement between two of them carries no information (it is
    recorded, the posterior does not move), and the covariance over the `n` candidates gets
    ``jitter`` on its diagonal so that it stays positive definite.

    Args:
        net: The warm-start network (copied, not modified).
        features: `n x d` candidate features.
        prior_precision: ``lambda > 0`` of ``delta ~ N(0, I / lambda)``.
        residual_variance: ``s_r^2 >= 0``, independent per-candidate variance.
        scale: Likelihood scale ``s > 0`` (larger: noisier judgements).
        link: ``"logistic"`` (Bradley-Terry) or ``"probit"``.
        jitter: A nugget added to ``s_r^2`` (so that the prior covariance of the distinct
            points is positive definite) and to the diagonal of returned covariances.
    """

    def __init__(
        self,
        net: SiameseUtilityNet,
        features: Tensor,
        *,
        prior_precision: float = 1.0,
        residual_variance: float = 0.0,
        scale: float = 1.0,
        link: str | Link = Link.LOGISTIC,
        jitter: float = 1e-6,
    ) -> None:
        super().__init__(features, jitter=jitter)
        if not prior_precision > 0 or residual_variance < 0:
            raise InputDataError(
                f"need prior_precision > 0 and residual_variance >= 0, got {prior_precision}, "
                f"{residual_variance}"
            )
        self.net = as_float64_copy(net)
        check_candidate_features(self.features, self.net.in_features)
        self.prior_precision = float(prior_precision)
        self.residual_variance = float(residual_variance)
        self.points, self.point_of = torch.unique(self.features, dim=0, return_inverse=True)
        mean, covariance = self._prior(self.points)
        self.laplace = BradleyTerryLaplace(mean, covariance, scale=scale, link=link)

    def _embed(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Utilities `...` and last hidden representations `... x h` of `... x d` rows (each
        distinct row through the network once: BoTorch batches repeat the candidates)."""
        rows, inverse = distinct_rows(x.reshape(-1, x.shape[-1]))
        with torch.no_grad():
            phi = self.net.embed(rows)
            utility = self.net.output(phi).squeeze(-1)
        return utility[inverse].reshape(x.shape[:-1]), phi[inverse].reshape(*x.shape[:-1], -1)

    def _kernel(self, a: Tensor, phi_a: Tensor, b: Tensor, phi_b: Tensor) -> Tensor:
        """``phi_a phi_b^T / lambda + (s_r^2 + jitter) [a_i == b_j]``."""
        covariance = phi_a @ phi_b.transpose(-1, -2) / self.prior_precision
        return covariance + (self.residual_variance + self.jitter) * _identical_rows(a, b)

    def _prior(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, phi = self._embed(x)
        return mean, self._kernel(x, phi, x, phi)

    def _output(self, mean: Tensor, covariance: Tensor) -> MultivariateNormal:
        eye = torch.eye(covariance.shape[-1], dtype=covariance.dtype)
        return MultivariateNormal(mean, DenseLinearOperator(covariance + self.jitter * eye))

    def posterior(self) -> MultivariateNormal:
        """The Laplace posterior at the `n` candidates (mean `n`, dense covariance `n x n`)."""
        if self._cached is None:
            point = self.laplace.posterior()
            index = self.point_of
            covariance = point.covariance_matrix[index][:, index]
            self._cached = self._output(point.mean[index], covariance)
        return self._cached

    def _points_embedding(self) -> Tensor:
        """`p x h` last hidden representations of the distinct points (cached)."""
        cached = getattr(self, "_phi_points", None)
        if cached is None or cached[0] is not self.points:
            cached = (self.points, self._embed(self.points)[1])
            self._phi_points = cached
        return cached[1]

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """The GP conditional at `batch_shape x q x d` features."""
        x = self._check_x(X, self.net.in_features)
        prior_mean, phi_x = self._embed(x)
        prior_covariance = self._kernel(x, phi_x, x, phi_x)
        cross = self._kernel(x, phi_x, self.points, self._points_embedding())
        mean, covariance = self.laplace.predictive(prior_mean, cross, prior_covariance)
        return self._output(mean, covariance)

    def _extend(self, rows: Tensor) -> None:
        """New candidates: the distinct points and the Laplace over them are rebuilt, and the
        judgements so far replayed (the Laplace posterior does not depend on their order)."""
        super()._extend(rows)
        scale, link = self.laplace.scale, self.laplace.link
        self.points, self.point_of = torch.unique(self.features, dim=0, return_inverse=True)
        mean, covariance = self._prior(self.points)
        self.laplace = BradleyTerryLaplace(mean, covariance, scale=scale, link=link)
        self._condition(self._comparisons)

    def _condition(self, new: list[tuple[int, int]]) -> None:
        pairs = [(int(self.point_of[w]), int(self.point_of[ell])) for w, ell in new]
        # identical answers: nothing to learn
        self.laplace.update_many([(first, second) for first, second in pairs if first != second])
