"""Multivariate normals over candidate utilities with low-rank (root) covariances."""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import RootLinearOperator
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["low_rank_mvn", "sample_mvn"]


def low_rank_mvn(mean: Tensor, root: Tensor) -> MultivariateNormal:
    """``N(mean, root root^T)`` with a lazy covariance (the `q x q` matrix is never formed).

    Args:
        mean: `batch_shape x q` means.
        root: `batch_shape x q x r` covariance root.

    Returns:
        A :class:`gpytorch.distributions.MultivariateNormal` with a ``RootLinearOperator``.
    """
    if root.shape[:-1] != mean.shape:
        raise InputDataError(
            f"root of shape {tuple(root.shape)} does not match mean of shape {tuple(mean.shape)}"
        )
    return MultivariateNormal(mean, RootLinearOperator(root))


def sample_mvn(samples: Tensor) -> MultivariateNormal:
    """Gaussian with the sample mean and sample covariance of ``samples``.

    The covariance root is the centred samples over ``sqrt(S - 1)`` (rank at most ``S - 1``).

    Args:
        samples: `S x batch_shape x q` draws of the utilities (``S >= 2``).

    Returns:
        A :class:`gpytorch.distributions.MultivariateNormal` over the `q` utilities.
    """
    if samples.shape[0] < 2:
        raise InputDataError(f"need at least 2 samples, got {samples.shape[0]}")
    mean = samples.mean(0)
    centred = (samples - mean) / (samples.shape[0] - 1) ** 0.5
    return low_rank_mvn(mean, centred.movedim(0, -1))
