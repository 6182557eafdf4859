"""Random-Fourier-feature GP output layer with a Laplace posterior (SNGP, eqs. 2-5).

``Phi(h) = sqrt(2 / L) cos(-W h / l + b)`` with fixed ``W ~ N(0, 1)`` (`L x d`) and
``b ~ U(0, 2 pi)`` approximates the RBF kernel ``exp(-||h - h'||^2 / (2 l^2))``; the output
``f = Phi^T beta`` with prior ``beta ~ N(0, I / prior_precision)`` is then a GP. After MAP
training, the Laplace posterior precision is ``prior_precision I + sum_i w_i Phi_i Phi_i^T`` with
``w_i = p_i (1 - p_i)`` (Bernoulli) or ``1 / noise`` (Gaussian, where Laplace is exact),
computed exactly in a final pass over the training data, or by the minibatch momentum update
``D_t = m D_{t-1} + (1 - m) (N / B) sum_batch w_i Phi_i Phi_i^T`` (SNGP eq. 5 with the batch sum
scaled to the data size ``N``; ``num_data=None`` gives the paper's unscaled form). The
predictive of a candidate is ``N(Phi^T beta, Phi^T Sigma Phi)`` and its probability the
mean-field ``sigmoid(m / sqrt(1 + lambda v))``, ``lambda = pi / 8``.
"""

from __future__ import annotations

import math
from enum import Enum

import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.nn.mvn import low_rank_mvn

__all__ = [
    "LaplaceLinear",
    "OutputLikelihood",
    "RFFGaussianProcess",
    "RandomFourierFeatures",
    "mean_field_probability",
]


def mean_field_probability(mean: Tensor, variance: Tensor, factor: float = math.pi / 8) -> Tensor:
    """Mean-field approximation of ``E[sigmoid(f)]``, ``f ~ N(mean, variance)``.

    Args:
        mean: `...` predictive means.
        variance: `...` predictive variances.
        factor: ``lambda`` in ``sigmoid(m / sqrt(1 + lambda v))``; pi / 8 matches the probit.

    Returns:
        `...` probabilities.
    """
    return torch.sigmoid(mean / torch.sqrt(1.0 + factor * variance))


class RandomFourierFeatures(nn.Module):
    """Fixed random Fourier features of the RBF kernel.

    Args:
        in_features: Input width ``d``.
        num_features: Number of features ``L``.
        lengthscale: RBF lengthscale ``l``.
        seed: Seed of ``W`` and ``b``.
    """

    def __init__(
        self, in_features: int, num_features: int = 1024, lengthscale: float = 1.0, seed: int = 0
    ) -> None:
        super().__init__()
        if num_features < 1 or in_features < 1:
            raise InputDataError(f"need positive widths, got {in_features}, {num_features}")
        if not lengthscale > 0:
            raise InputDataError(f"lengthscale must be positive, got {lengthscale}")
        generator = torch.Generator().manual_seed(seed)
        self.lengthscale = float(lengthscale)
        self.weight: Tensor
        self.offset: Tensor
        self.register_buffer("weight", torch.randn(num_features, in_features, generator=generator))
        self.register_buffer("offset", 2 * math.pi * torch.rand(num_features, generator=generator))

    @property
    def num_features(self) -> int:
        return int(self.weight.shape[0])

    def forward(self, h: Tensor) -> Tensor:
        """`... x d` inputs -> `... x L` features."""
        weight = self.weight.to(h.dtype)
        projection = -(h / self.lengthscale) @ weight.T + self.offset.to(h.dtype)
        return math.sqrt(2.0 / self.num_features) * torch.cos(projection)


class OutputLikelihood(str, Enum):
    """Likelihood whose Hessian weights the Laplace precision."""

    BERNOULLI = "bernoulli"
    """``w_i = p_i (1 - p_i)`` with ``p_i = sigmoid(f_i)`` (classification)."""
    GAUSSIAN = "gaussian"
    """``w_i = 1 / noise`` (regression; Laplace equals the exact posterior)."""


class LaplaceLinear(nn.Module):
    """Linear output ``f = phi^T beta + bias`` with a Gaussian prior and a Laplace posterior on
    ``beta`` (the bias is a point estimate).

    Args:
        in_features: Feature width ``L``.
        prior_precision: Prior precision of ``beta`` (1 gives ``N(0, I)``).
        likelihood: ``"bernoulli"`` or ``"gaussian"`` (:class:`OutputLikelihood`).
        noise: Observation noise variance of the Gaussian likelihood.
        bias: Learn a bias.
    """

    def __init__(
        self,
        in_features: int,
        prior_precision: float = 1.0,
        likelihood: str | OutputLikelihood = OutputLikelihood.BERNOULLI,
        noise: float = 1.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not prior_precision > 0 or not noise > 0:
            raise InputDataError(
                f"prior_precision and noise must be positive, got {prior_precision}, {noise}"
            )
        self.prior_precision = float(prior_precision)
        self.likelihood = parse_enum(OutputLikelihood, likelihood, "likelihood")
        self.noise = float(noise)
        self.beta = nn.Parameter(torch.zeros(in_features))
        self.bias: nn.Parameter | None = nn.Parameter(torch.zeros(())) if bias else None
        self.data_precision: Tensor
        self.precision_cholesky: Tensor
        self.register_buffer("data_precision", torch.zeros(in_features, in_features))
        self.register_buffer("precision_cholesky", torch.zeros(0))

    def forward(self, phi: Tensor) -> Tensor:
        """`... x L` features -> `...` posterior-mean outputs (logits)."""
        out = phi @ self.beta.to(phi.dtype)
        return out + self.bias.to(phi.dtype) if self.bias is not None else out

    def prior_penalty(self) -> Tensor:
        """``prior_precision / 2 ||beta||^2``, the negative log prior up to a constant."""
        return 0.5 * self.prior_precision * self.beta.pow(2).sum()

    def _weights(self, phi: Tensor) -> Tensor:
        if self.likelihood is OutputLikelihood.GAUSSIAN:
            return torch.full(phi.shape[:-1], 1.0 / self.noise, dtype=phi.dtype, device=phi.device)
        p = torch.sigmoid(self(phi))
        return p * (1 - p)

    def _batch_precision(self, phi: Tensor) -> Tensor:
        phi = phi.detach().reshape(-1, phi.shape[-1]).to(self.data_precision.dtype)
        weights = self._weights(phi).detach()
        return (phi * weights.unsqueeze(-1)).T @ phi

    def reset_precision(self) -> None:
        """Forget the data part of the precision (start of a new pass)."""
        self.data_precision.zero_()
        self.precision_cholesky = torch.zeros(0, device=self.data_precision.device)

    @torch.no_grad()
    def accumulate_precision(self, phi: Tensor) -> None:
        """Exact pass: add ``sum_i w_i phi_i phi_i^T`` of `... x L` features."""
        self.data_precision += self._batch_precision(phi)
        self.precision_cholesky = torch.zeros(0, device=self.data_precision.device)

    @torch.no_grad()
    def momentum_update(self, phi: Tensor, momentum: float, num_data: int | None = None) -> None:
        """Minibatch update ``D = m D + (1 - m) (N / B) sum_batch w_i phi_i phi_i^T``.

        Args:
            phi: `B x L` features of one minibatch.
            momentum: ``m`` in [0, 1).
            num_data: Training-set size ``N``; ``None`` leaves the batch sum unscaled.
        """
        if not 0 <= momentum < 1:
            raise InputDataError(f"momentum must be in [0, 1), got {momentum}")
        batch = phi.reshape(-1, phi.shape[-1]).shape[0]
        scale = 1.0 if num_data is None else num_data / batch
        update = self._batch_precision(phi) * scale
        self.data_precision.mul_(momentum).add_((1 - momentum) * update)
        self.precision_cholesky = torch.zeros(0, device=self.data_precision.device)

    @property
    def precision(self) -> Tensor:
        """`L x L` posterior precision ``prior_precision I + D``."""
        eye = torch.eye(self.data_precision.shape[0], dtype=self.data_precision.dtype)
        return self.prior_precision * eye.to(self.data_precision.device) + self.data_precision

    def _cholesky(self) -> Tensor:
        if self.precision_cholesky.numel() == 0:
            self.precision_cholesky = torch.linalg.cholesky(self.precision)
        return self.precision_cholesky

    @property
    def covariance(self) -> Tensor:
        """`L x L` posterior covariance ``Sigma`` (formed explicitly: for tests and small L)."""
        return torch.cholesky_inverse(self._cholesky())

    def covariance_root(self, phi: Tensor) -> Tensor:
        """`... x q x L` root ``R`` with ``R R^T = Phi Sigma Phi^T`` (``R = Phi L^{-T}``)."""
        chol = self._cholesky().to(phi.dtype)
        flat = phi.reshape(-1, phi.shape[-1])
        root = torch.linalg.solve_triangular(chol, flat.T, upper=False).T
        return root.reshape(phi.shape)

    def predictive(self, phi: Tensor) -> tuple[Tensor, Tensor]:
        """Predictive mean `...` and variance `...` of ``f`` at `... x L` features."""
        return self(phi), self.covariance_root(phi).pow(2).sum(-1)

    def posterior(self, phi: Tensor) -> MultivariateNormal:
        """Joint posterior of ``f`` at `batch_shape x q x L` features (low-rank covariance)."""
        return low_rank_mvn(self(phi), self.covariance_root(phi))


class RFFGaussianProcess(nn.Module):
    """RFF GP output layer: :class:`RandomFourierFeatures` then :class:`LaplaceLinear`.

    Args:
        in_features: Input width ``d``.
        num_features: ``L`` (default 1024).
        lengthscale: RBF lengthscale.
        normalize_input: Layer-normalise inputs before the features (no affine parameters).
        prior_precision: Prior precision of ``beta``.
        likelihood: ``"bernoulli"`` or ``"gaussian"``.
        noise: Gaussian noise variance.
        mean_field_factor: ``lambda`` of the mean-field probability.
        seed: Seed of the random features.
    """

    def __init__(
        self,
        in_features: int,
        num_features: int = 1024,
        lengthscale: float = 1.0,
        normalize_input: bool = False,
        prior_precision: float = 1.0,
        likelihood: str | OutputLikelihood = OutputLikelihood.BERNOULLI,
        noise: float = 1.0,
        mean_field_factor: float = math.pi / 8,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.features = RandomFourierFeatures(in_features, num_features, lengthscale, seed)
        self.norm = nn.LayerNorm(in_features, elementwise_affine=False) if normalize_input else None
        self.output = LaplaceLinear(num_features, prior_precision, likelihood, noise)
        self.mean_field_factor = mean_field_factor

    def phi(self, h: Tensor) -> Tensor:
        """`... x d` inputs -> `... x L` random features."""
        return self.features(self.norm(h) if self.norm is not None else h)

    def forward(self, h: Tensor) -> Tensor:
        """`... x d` inputs -> `...` MAP logits ``Phi^T beta + bias``."""
        return self.output(self.phi(h))

    def predictive(self, h: Tensor) -> tuple[Tensor, Tensor]:
        """Predictive mean and variance, each `...`."""
        return self.output.predictive(self.phi(h))

    def predict_proba(self, h: Tensor) -> Tensor:
        """`...` mean-field probabilities."""
        mean, variance = self.predictive(h)
        return mean_field_probability(mean, variance, self.mean_field_factor)

    def posterior(self, h: Tensor) -> MultivariateNormal:
        """MVN over `batch_shape x q` candidates from `batch_shape x q x d` inputs."""
        return self.output.posterior(self.phi(h))
