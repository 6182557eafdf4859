"""What every pair-selection strategy shares: the joint Gaussian, the asked pairs, the masks.

A strategy sees one question's candidates through a single joint posterior over their
utilities, a :class:`gpytorch.distributions.MultivariateNormal` with mean `n` and covariance
`n x n` (dense or a lazy ``LinearOperator``, e.g. the low-rank ``RootLinearOperator`` of a
Laplace/RFF head), or the BoTorch ``GPyTorchPosterior`` that wraps one. It reads the mean
vector and the covariance matrix once and scores every pair from them; no posterior is ever
rebuilt per pair. All selection arithmetic runs on CPU in float64.

Pairs are unordered: ``(i, j)`` and ``(j, i)`` are the same question to the user, and a pair
that has been asked in either order is never offered again.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from linear_operator.operators import RootLinearOperator
from torch import Tensor
from torch.distributions import MultivariateNormal as TorchMultivariateNormal

from probrank.exceptions import InputDataError
from probrank.posteriors.indices import candidate_index

__all__ = [
    "ExhaustedPairsError",
    "JointGaussian",
    "OpenPairStrategy",
    "best_open_pair",
    "candidate_index",
    "joint_gaussian",
    "normalize_asked",
    "strict_upper",
    "unasked_matrix",
]


class ExhaustedPairsError(InputDataError):
    """Every unordered pair of candidates has been asked already; there is nothing to offer."""


@dataclass(frozen=True)
class JointGaussian:
    """The mean vector and covariance matrix of one question's candidate utilities.

    Attributes:
        mean: `n` posterior means (float64, CPU).
        covariance: `n x n` symmetric posterior covariance (float64, CPU).
        root: `n x r` matrix with ``root @ root.T == covariance`` when the posterior's
            covariance is a ``RootLinearOperator`` (a low-rank head), else None.
    """

    mean: Tensor
    covariance: Tensor
    root: Tensor | None = None

    @property
    def num_candidates(self) -> int:
        return int(self.mean.shape[0])


def joint_gaussian(posterior: object) -> JointGaussian:
    """Read the mean and covariance of a joint posterior over `n` candidates (`n >= 2`).

    Args:
        posterior: A gpytorch (or torch) ``MultivariateNormal`` with event shape `n` and no
            batch dimensions other than size-1 ones (a BoTorch `1 x q` posterior), or a BoTorch
            posterior with a ``distribution`` attribute holding one (e.g. ``GPyTorchPosterior``
            from a single-output model).

    Returns:
        The :class:`JointGaussian` (copies; the posterior is not modified).

    Raises:
        InputDataError: Not a multivariate normal, batched, fewer than 2 candidates, or
            non-finite values.
    """
    distribution = getattr(posterior, "distribution", posterior)
    if not isinstance(distribution, TorchMultivariateNormal):
        raise InputDataError(
            f"posterior must be a MultivariateNormal (or wrap one), got {type(posterior).__name__}"
        )
    if distribution.batch_shape.numel() != 1 or len(distribution.event_shape) != 1:
        raise InputDataError(
            "posterior must be one joint MultivariateNormal over n candidates, got batch shape "
            f"{tuple(distribution.batch_shape)} and event shape {tuple(distribution.event_shape)}"
        )
    n = int(distribution.event_shape[0])
    if n < 2:
        raise InputDataError(f"need at least 2 candidates to form a pair, got {n}")
    mean = distribution.mean.detach().to("cpu", torch.float64).reshape(n).clone()
    root = _root_of(distribution, n)
    if root is not None:
        covariance = root @ root.T
    else:
        lazy = getattr(distribution, "lazy_covariance_matrix", None)
        dense = lazy.to_dense() if lazy is not None else distribution.covariance_matrix
        dense = dense.detach().to("cpu", torch.float64).reshape(n, n)
        covariance = 0.5 * (dense + dense.T)
    if not (torch.isfinite(mean).all() and torch.isfinite(covariance).all()):
        raise InputDataError("posterior mean or covariance holds NaN or infinite values")
    return JointGaussian(mean=mean, covariance=covariance, root=root)


def _root_of(distribution: TorchMultivariateNormal, n: int) -> Tensor | None:
    lazy = getattr(distribution, "lazy_covariance_matrix", None)
    if not isinstance(lazy, RootLinearOperator):
        return None
    root = lazy.root.to_dense().detach().to("cpu", torch.float64)
    return root.reshape(n, root.shape[-1]).clone()


def normalize_asked(asked: Iterable[tuple[int, int]], n: int) -> frozenset[tuple[int, int]]:
    """The asked pairs as a set of ``(low, high)`` index tuples, validated against `n`.

    Args:
        asked: Pairs ``(i, j)`` already asked, in any order, repeats allowed.
        n: Number of candidates.

    Raises:
        InputDataError: A pair that is not two distinct integers in ``[0, n)``.
    """
    pairs: set[tuple[int, int]] = set()
    for pair in asked:
        try:
            first, second = pair
        except (TypeError, ValueError):
            raise InputDataError(f"an asked pair must be two indices, got {pair!r}") from None
        i, j = candidate_index(first, n), candidate_index(second, n)
        if i == j:
            raise InputDataError(f"an asked pair must name two different candidates, got {pair!r}")
        pairs.add((min(i, j), max(i, j)))
    return frozenset(pairs)


def unasked_matrix(n: int, asked: frozenset[tuple[int, int]]) -> Tensor:
    """Which unordered pairs are still open, as a symmetric `n x n` bool matrix.

    Entry ``[i, j]`` is True when ``i != j`` and ``{i, j}`` has not been asked.

    Raises:
        ExhaustedPairsError: Every pair has been asked.
    """
    open_pairs = ~torch.eye(n, dtype=torch.bool)
    if asked:
        index = torch.tensor(sorted(asked), dtype=torch.long)
        open_pairs[index[:, 0], index[:, 1]] = False
        open_pairs[index[:, 1], index[:, 0]] = False
    if not open_pairs.any():
        raise ExhaustedPairsError(f"all {n * (n - 1) // 2} pairs of {n} candidates were asked")
    return open_pairs


def strict_upper(n: int) -> Tensor:
    """`n x n` bool mask of the strict upper triangle (``i < j``).

    Built by comparing index vectors rather than with ``torch.triu``, whose CPU kernel always
    dispatches to the thread pool and costs milliseconds on a busy machine even for tiny inputs.
    """
    index = torch.arange(n)
    return index.unsqueeze(-1) < index.unsqueeze(-2)


def best_open_pair(scores: Tensor, open_pairs: Tensor) -> tuple[int, int]:
    """The open pair ``(i, j)``, ``i < j``, with the largest symmetric score.

    Ties go to the first pair in row-major order (smallest ``i``, then smallest ``j``).

    Args:
        scores: `n x n` scores (only the upper triangle is read).
        open_pairs: `n x n` bool from :func:`unasked_matrix`.
    """
    n = scores.shape[0]
    upper = open_pairs & strict_upper(n)
    keyed = torch.where(upper, scores, torch.full_like(scores, float("-inf")))
    flat = int(torch.argmax(keyed.reshape(-1)).item())
    i, j = divmod(flat, n)
    if not bool(upper[i, j]):  # every open score is -inf or NaN: fall back to the first open pair
        i, j = (int(v) for v in upper.nonzero()[0])
    return i, j


class OpenPairStrategy(ABC):
    """Base of the built-in strategies: read the posterior and the open pairs once, then pick.

    Subclasses implement :meth:`choose` on the validated :class:`JointGaussian` and the open
    pairs; calling the strategy (the :class:`~probrank.acquisition.select.PairStrategy`
    protocol) does the shared reading and validation.
    """

    def __call__(
        self,
        posterior: object,
        asked: Iterable[tuple[int, int]] = (),
        generator: torch.Generator | None = None,
    ) -> tuple[int, int]:
        """Select the next pair.

        Args:
            posterior: Joint posterior over `n` candidates (see :func:`joint_gaussian`).
            asked: Unordered pairs asked already.
            generator: Source of any randomness (the global RNG when None; deterministic
                rules ignore it).

        Returns:
            Two distinct candidate indices whose pair has not been asked.

        Raises:
            ExhaustedPairsError: Every pair has been asked.
        """
        gaussian = joint_gaussian(posterior)
        n = gaussian.num_candidates
        return self.choose(gaussian, unasked_matrix(n, normalize_asked(asked, n)), generator)

    @abstractmethod
    def choose(
        self, gaussian: JointGaussian, open_pairs: Tensor, generator: torch.Generator | None
    ) -> tuple[int, int]:
        """The pair to ask, given the `n` means, the `n x n` covariance and the `n x n` bool
        matrix of open pairs (symmetric, at least one True)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
