"""Test helpers that ship with the package: fixed posteriors behind BoTorch's ``Model`` API.

:class:`FixedPosteriorModel` turns one known joint Gaussian over `n` candidates into a BoTorch
model, so that BoTorch's own acquisition functions (``ExpectedImprovement``,
``qExpectedImprovement``, ``AnalyticExpectedUtilityOfBestOption``, ...) can be run unchanged
against a posterior whose every number is known, and compared with probrank's closed forms.
A candidate is addressed by its index, stored as a one-dimensional feature::

    model = FixedPosteriorModel(random_mvn(5, generator=torch.Generator().manual_seed(0)))
    X = torch.tensor([[[0.0], [3.0]]])         # `1 x 2 x 1`: candidates 0 and 3
    model.posterior(X).distribution            # MVN with mean[[0, 3]], cov[[0, 3]][:, [0, 3]]
"""

from __future__ import annotations

from typing import Any

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator, RootLinearOperator
from torch import Tensor

from probrank.acquisition.pairs import joint_gaussian
from probrank.exceptions import InputDataError

__all__ = ["FixedPosteriorModel", "random_mvn"]


class FixedPosteriorModel(Model):
    """A single-output BoTorch model whose posterior over candidates is fixed in advance.

    Args:
        posterior: Joint posterior over the `n` candidates (a gpytorch ``MultivariateNormal``
            or a BoTorch posterior wrapping one). It is copied; its dtype is kept.

    Attributes:
        datapoints: `n x 1` candidate features, the indices ``0, ..., n - 1`` (BoTorch's
            preference acquisition functions read the dtype and device from it).
    """

    _num_outputs = 1
    fixed_mean: Tensor
    fixed_covariance: Tensor
    datapoints: Tensor

    def __init__(self, posterior: object) -> None:
        super().__init__()
        gaussian = joint_gaussian(posterior)
        distribution = getattr(posterior, "distribution", posterior)
        dtype = distribution.mean.dtype  # type: ignore[attr-defined]
        n = gaussian.num_candidates
        self.register_buffer("fixed_mean", gaussian.mean.to(dtype))
        self.register_buffer("fixed_covariance", gaussian.covariance.to(dtype))
        self.register_buffer("datapoints", torch.arange(n, dtype=dtype).unsqueeze(-1))

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    @property
    def num_candidates(self) -> int:
        return int(self.fixed_mean.shape[0])

    def candidate_indices(self, X: Tensor) -> Tensor:
        """Integer candidate indices of ``X``.

        Args:
            X: `batch_shape x q x 1` candidate indices stored as floats.

        Returns:
            `batch_shape x q` long indices.

        Raises:
            InputDataError: ``X`` is not `... x q x 1`, or holds a non-integral or out-of-range
                value.
        """
        if X.dim() < 2 or X.shape[-1] != 1:
            raise InputDataError(f"X must be batch_shape x q x 1, got shape {tuple(X.shape)}")
        values = X[..., 0]
        index = torch.round(values).long()
        if not torch.equal(index.to(values.dtype), values):
            raise InputDataError("X must hold integral candidate indices")
        if index.numel() and (index.min() < 0 or index.max() >= self.num_candidates):
            raise InputDataError(
                f"candidate index out of range for {self.num_candidates} candidates"
            )
        return index

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior of the `q` candidates named in each batch of ``X``.

        Args:
            X: `batch_shape x q x 1` candidate indices.
            output_indices: Only ``None`` or ``[0]``.
            observation_noise: Ignored (the fixed posterior has no observation noise).
            posterior_transform: Applied to the posterior if given.

        Returns:
            ``GPyTorchPosterior`` with mean `batch_shape x q x 1`.
        """
        if output_indices not in (None, [0]):
            raise InputDataError(f"FixedPosteriorModel has one output, got {output_indices}")
        index = self.candidate_indices(X)
        mean = self.fixed_mean[index]
        covariance = self.fixed_covariance[index.unsqueeze(-1), index.unsqueeze(-2)]
        posterior = GPyTorchPosterior(MultivariateNormal(mean, DenseLinearOperator(covariance)))
        return posterior_transform(posterior) if posterior_transform is not None else posterior


def random_mvn(
    n: int,
    *,
    rank: int | None = None,
    scale: float = 1.0,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> MultivariateNormal:
    """A random correlated Gaussian over `n` candidates, for tests.

    Args:
        n: Number of candidates.
        rank: With a rank `r`, the covariance is a lazy ``RootLinearOperator`` ``R R^T``
            (`n x r` root, as a low-rank head produces); without, a dense full-rank matrix
            ``A A^T / n + 0.1 I``.
        scale: Standard deviation of the means (and of the root entries).
        generator: Source of randomness.
        dtype: Floating dtype.

    Returns:
        A gpytorch ``MultivariateNormal`` with mean `n` and covariance `n x n`.
    """
    mean = scale * torch.randn(n, generator=generator, dtype=dtype)
    if rank is not None:
        root = scale * torch.randn(n, rank, generator=generator, dtype=dtype) / rank**0.5
        return MultivariateNormal(mean, RootLinearOperator(root))
    a = scale * torch.randn(n, n, generator=generator, dtype=dtype)
    covariance = a @ a.T / n + 0.1 * scale**2 * torch.eye(n, dtype=dtype)
    return MultivariateNormal(mean, covariance)
