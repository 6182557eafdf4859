"""Random-Fourier-feature GP output layer with a Laplace posterior (SNGP, eqs. 2-5).

``Phi(h) = sqrt(2 / L) cos(-W h / l + b)`` with fixed ``W ~ N(0, 1)`` (`L x d`) and
``b ~ U(0, 2 pi)`` approximates the RBF kernel ``exp(-||h - h'||^2 / (2 l^2))``; the output
``f = Phi^T beta`` with prior ``beta ~ N(0, I / prior_precision)`` is then a GP. After MAP
training, the Laplace posterior precision is ``prior_precision I + sum_i w_i Phi_i Phi_i^T`` with
``w_i = p_i (1 - p_i)`` (Bernoulli) or ``1 / noise`` (Gaussian, where Laplace is exact),
computed exactly in a final pass over the training data, or by the minibatch momentum update
of SNGP eq. 5 (:class:`MomentumForm`: bias-corrected and scaled to the data size by default, or
the paper's verbatim form starting from the prior). The predictive of a candidate is
``N(Phi^T beta, Phi^T Sigma Phi)`` and its probability the mean-field
``sigmoid(m / sqrt(1 + lambda v))``, ``lambda = pi / 8``.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
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
    "MomentumForm",
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


class MomentumForm(str, Enum):
    """How :meth:`LaplaceLinear.momentum_update` turns minibatches into a precision."""

    CORRECTED = "corrected"
    """``D_t = m D_{t-1} + (1 - m) (N / B) S_t`` from ``D_0 = 0`` with Adam-style bias
    correction, precision ``prior I + D_t / (1 - m^t)``: a weighted mean of unbiased estimates
    of the exact pass's ``sum_i w_i phi_i phi_i^T`` (``S_t``: the batch sum, ``N``: data size)."""
    PAPER = "paper"
    """SNGP eq. 5 verbatim: ``P_0 = prior I``, ``P_t = m P_{t-1} + (1 - m) S_t`` (the batch sum
    unscaled, so the data term tends to one batch's worth and the prior decays as ``m^t``)."""


_EXACT, _CORRECTED, _PAPER = 0, 1, 2
_FORM_CODES = {MomentumForm.CORRECTED: _CORRECTED, MomentumForm.PAPER: _PAPER}


class LaplaceLinear(nn.Module):
    """Linear output ``f = phi^T beta + bias`` with a Gaussian prior and a Laplace posterior on
    ``beta`` (the bias is a point estimate).

    The covariance ``Sigma`` (and its root ``L^{-T}``, ``L L^T = Sigma^{-1}``) is computed once
    (in float64) the first time it is needed after the precision changes and then reused, so a
    predictive variance ``diag(Phi Sigma Phi^T) = rowsum((Phi Sigma) * Phi)`` costs one GEMM.

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
        self.momentum_decay: Tensor
        self.momentum_form: Tensor
        self.register_buffer("data_precision", torch.zeros(in_features, in_features))
        # product of the momenta so far (1: no momentum update) and the form's code (0: exact)
        self.register_buffer("momentum_decay", torch.ones((), dtype=torch.float64))
        self.register_buffer("momentum_form", torch.zeros((), dtype=torch.long))
        self._version = 0
        self._cache: dict[str, Tensor] = {}
        self._cache_key: tuple[int, torch.dtype, torch.device] | None = None

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

    def _changed(self) -> None:
        self._version += 1
        self._cache = {}

    def reset_precision(self) -> None:
        """Forget the data part of the precision (start of a new pass)."""
        self.data_precision.zero_()
        self.momentum_decay.fill_(1.0)
        self.momentum_form.fill_(_EXACT)
        self._changed()

    @torch.no_grad()
    def accumulate_precision(self, phi: Tensor) -> None:
        """Exact pass: add ``sum_i w_i phi_i phi_i^T`` of `... x L` features.

        Raises:
            InputDataError: After momentum updates without :meth:`reset_precision`.
        """
        if int(self.momentum_form) != _EXACT:
            raise InputDataError("the precision holds momentum updates: reset_precision() first")
        self.data_precision += self._batch_precision(phi)
        self._changed()

    @torch.no_grad()
    def momentum_update(
        self,
        phi: Tensor,
        momentum: float,
        num_data: int | None = None,
        form: str | MomentumForm = MomentumForm.CORRECTED,
    ) -> None:
        """One minibatch step of the momentum precision (SNGP eq. 5, see :class:`MomentumForm`).

        Args:
            phi: `B x L` features of one minibatch (computed in evaluation mode).
            momentum: ``m`` in [0, 1).
            num_data: Training-set size ``N`` (``"corrected"``: the batch sum is scaled by
                ``N / B``; ``None`` leaves it unscaled). Ignored by ``"paper"``.
            form: ``"corrected"`` (default) or ``"paper"``; must not change between steps.

        Raises:
            InputDataError: ``momentum`` outside [0, 1), or a change of ``form``.
        """
        if not 0 <= momentum < 1:
            raise InputDataError(f"momentum must be in [0, 1), got {momentum}")
        code = _FORM_CODES[parse_enum(MomentumForm, form, "form")]
        current = int(self.momentum_form)
        if current == _EXACT and bool(self.data_precision.any()):
            raise InputDataError("the precision holds an exact pass: reset_precision() first")
        if current not in (_EXACT, code):
            raise InputDataError("momentum form changed between steps: reset_precision() first")
        self.momentum_form.fill_(code)
        batch = phi.reshape(-1, phi.shape[-1]).shape[0]
        scale = 1.0 if num_data is None or code == _PAPER else num_data / batch
        update = self._batch_precision(phi) * scale
        self.data_precision.mul_(momentum).add_((1 - momentum) * update)
        self.momentum_decay.mul_(momentum)
        self._changed()

    @property
    def precision(self) -> Tensor:
        """`L x L` posterior precision (``prior_precision I + D`` after an exact pass)."""
        eye = torch.eye(
            self.data_precision.shape[0],
            dtype=self.data_precision.dtype,
            device=self.data_precision.device,
        )
        decay = float(self.momentum_decay)
        code = int(self.momentum_form)
        if code == _CORRECTED:
            return self.prior_precision * eye + self.data_precision / (1.0 - decay)
        if code == _PAPER:
            return self.prior_precision * decay * eye + self.data_precision
        return self.prior_precision * eye + self.data_precision

    def _cached(self, name: str) -> Tensor:
        key = (self._version, self.data_precision.dtype, self.data_precision.device)
        if key != self._cache_key:
            self._cache, self._cache_key = {}, key
        if name not in self._cache:
            dtype = self.data_precision.dtype
            if "cholesky" not in self._cache:
                chol = torch.linalg.cholesky(self.precision.double())
                self._cache["cholesky64"] = chol
                self._cache["cholesky"] = chol.to(dtype)
            chol = self._cache["cholesky64"]
            if name == "covariance":
                self._cache[name] = torch.cholesky_inverse(chol).to(dtype)
            elif name == "root":
                eye = torch.eye(chol.shape[0], dtype=chol.dtype, device=chol.device)
                inverse = torch.linalg.solve_triangular(chol, eye, upper=False)
                self._cache[name] = inverse.T.contiguous().to(dtype)
        return self._cache[name]

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: object) -> None:
        # states saved before the momentum buffers existed, or with the old Cholesky buffer
        state_dict.pop(prefix + "precision_cholesky", None)
        state_dict.setdefault(prefix + "momentum_decay", torch.ones((), dtype=torch.float64))
        state_dict.setdefault(prefix + "momentum_form", torch.zeros((), dtype=torch.long))
        super()._load_from_state_dict(state_dict, prefix, *args)  # type: ignore[arg-type]
        self._changed()

    @property
    def precision_cholesky(self) -> Tensor:
        """`L x L` lower Cholesky factor ``L`` of the precision (cached)."""
        return self._cached("cholesky")

    @property
    def covariance(self) -> Tensor:
        """`L x L` posterior covariance ``Sigma`` (cached until the precision changes)."""
        return self._cached("covariance")

    def covariance_root(self, phi: Tensor) -> Tensor:
        """`... x q x L` root ``R = Phi L^{-T}`` with ``R R^T = Phi Sigma Phi^T`` (one GEMM)."""
        return phi @ self._cached("root").to(phi.dtype)

    def predictive_variance(self, phi: Tensor) -> Tensor:
        """`...` variances ``diag(Phi Sigma Phi^T) = rowsum((Phi Sigma) * Phi)`` (one GEMM)."""
        sigma = self.covariance.to(phi.dtype)
        return ((phi @ sigma) * phi).sum(-1).clamp_min(0.0)

    def predictive(self, phi: Tensor) -> tuple[Tensor, Tensor]:
        """Predictive mean `...` and variance `...` of ``f`` at `... x L` features."""
        return self(phi), self.predictive_variance(phi)

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
