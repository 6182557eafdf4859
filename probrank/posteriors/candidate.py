"""Gaussian posteriors over the utilities of a set of candidates (one posterior currency).

Low-rank ``RootLinearOperator`` covariances for RFF/Laplace heads (root ``Phi L^{-T}``, `q x L`)
and sample covariances for MC dropout, ensembles and SWAG (root: centred samples, `q x S`);
the `q x q` matrix is never formed unless asked for. A sample covariance of `S` draws has rank
at most ``S - 1``; :func:`with_jitter` adds a small diagonal so that BoTorch (and anyone else)
can take a Cholesky factor of the `q x q` covariance when ``q >= S``.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import (
    DiagLinearOperator,
    LowRankRootAddedDiagLinearOperator,
    LowRankRootLinearOperator,
    RootLinearOperator,
)
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.nn.mvn import low_rank_mvn, sample_mvn

__all__ = ["jittered_sample_mvn", "low_rank_mvn", "sample_mvn", "with_jitter"]


def with_jitter(mvn: MultivariateNormal, jitter: float) -> MultivariateNormal:
    """The same Gaussian with ``jitter`` added to every variance.

    A ``RootLinearOperator`` covariance becomes a ``LowRankRootAddedDiagLinearOperator``
    (root plus diagonal, still lazy: Woodbury solves, cheap Cholesky); any other covariance gets
    ``add_diagonal``.

    Args:
        mvn: `batch_shape x q` Gaussian.
        jitter: Non-negative diagonal to add (0 returns ``mvn``).
    """
    if jitter < 0:
        raise InputDataError(f"jitter must be non-negative, got {jitter}")
    if jitter == 0:
        return mvn
    covariance = mvn.lazy_covariance_matrix
    diagonal = torch.full_like(mvn.mean, float(jitter))
    if isinstance(covariance, RootLinearOperator):
        root = covariance.root.to_dense()
        lazy = LowRankRootAddedDiagLinearOperator(
            LowRankRootLinearOperator(root), DiagLinearOperator(diagonal)
        )
        return MultivariateNormal(mvn.mean, lazy)
    return MultivariateNormal(mvn.mean, covariance.add_diagonal(diagonal))


def jittered_sample_mvn(samples: Tensor, jitter: float) -> MultivariateNormal:
    """:func:`sample_mvn` of `S x batch_shape x q` draws plus ``jitter`` on the diagonal."""
    return with_jitter(sample_mvn(samples), jitter)
