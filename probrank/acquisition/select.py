"""The pair-selection strategies by name, and :func:`select_pair`.

A strategy is any callable ``(posterior, asked, generator) -> (i, j)`` (the
:class:`PairStrategy` protocol); the built-in ones subclass
:class:`~probrank.acquisition.pairs.OpenPairStrategy` (which reads the posterior and the open
pairs once; a new rule implements only ``choose``) and are registered under the members of
:class:`Strategy`. Every strategy scores pairs from one joint posterior over the question's
candidates, never returns a pair asked before (in either order) and raises
:class:`~probrank.acquisition.pairs.ExhaustedPairsError` when every pair has been asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Protocol

import torch

from probrank._options import parse_enum
from probrank.acquisition.ei import ExpectedImprovementPair
from probrank.acquisition.eubo import ExpectedUtilityOfBestOption
from probrank.acquisition.random_pair import RandomPair
from probrank.acquisition.thompson import ThompsonPair
from probrank.acquisition.unc import UncertaintySampling
from probrank.exceptions import InputDataError

__all__ = ["STRATEGIES", "PairStrategy", "Strategy", "resolve_strategy", "select_pair"]


class PairStrategy(Protocol):
    """Chooses the next pair of candidates to show the user."""

    def __call__(
        self,
        posterior: object,
        asked: Iterable[tuple[int, int]] = (),
        generator: torch.Generator | None = None,
    ) -> tuple[int, int]: ...


class Strategy(str, Enum):
    """Built-in pair-selection strategies."""

    EI = "ei"
    """The paper's eq. 1: the best candidate by posterior mean against the candidate with the
    maximal expected improvement over it, using the joint covariance
    (:mod:`probrank.acquisition.ei`). Deterministic."""
    EUBO = "eubo"
    """The pair with the highest expected utility of the best option, ``E[max(f_a, f_b)]``,
    over all pairs at once (:mod:`probrank.acquisition.eubo`). Deterministic."""
    UNC = "unc"
    """Uncertainty sampling: the two candidates whose ``sigmoid(mean)`` is closest to 0.5
    (:mod:`probrank.acquisition.unc`); ignores the posterior variance. Deterministic."""
    THOMPSON = "thompson"
    """The argmax of each of two joint posterior draws (:mod:`probrank.acquisition.thompson`).
    Stochastic: uses the generator."""
    RANDOM = "random"
    """A uniformly random unasked pair. Stochastic: uses the generator."""


STRATEGIES: Mapping[Strategy, PairStrategy] = MappingProxyType(
    {
        Strategy.EI: ExpectedImprovementPair(),
        Strategy.EUBO: ExpectedUtilityOfBestOption(),
        Strategy.UNC: UncertaintySampling(),
        Strategy.THOMPSON: ThompsonPair(),
        Strategy.RANDOM: RandomPair(),
    }
)


def resolve_strategy(strategy: str | Strategy | PairStrategy) -> PairStrategy:
    """The strategy object for a name, a :class:`Strategy` member or a callable.

    Raises:
        InputDataError: An unknown name (the message lists the choices) or a non-callable.
    """
    if isinstance(strategy, str):
        return STRATEGIES[parse_enum(Strategy, strategy.lower(), "strategy")]
    if not callable(strategy):
        raise InputDataError(f"strategy must be a name or a callable, got {strategy!r}")
    return strategy


def select_pair(
    posterior: object,
    asked: Iterable[tuple[int, int]] = (),
    strategy: str | Strategy | PairStrategy = Strategy.EI,
    generator: torch.Generator | None = None,
) -> tuple[int, int]:
    """The next pair of candidates to ask about.

    Args:
        posterior: Joint posterior over one question's `n` candidates: a gpytorch
            ``MultivariateNormal`` (mean `n`, covariance `n x n`, dense or lazy) or a BoTorch
            ``GPyTorchPosterior`` wrapping one.
        asked: Unordered pairs ``(i, j)`` asked already (either order).
        strategy: A :class:`Strategy` name or member, or any :class:`PairStrategy`.
        generator: Randomness for the stochastic strategies (the global RNG when None).

    Returns:
        Two distinct candidate indices forming a pair not in ``asked``.

    Raises:
        ExhaustedPairsError: Every pair has been asked.
        InputDataError: Unknown strategy, malformed posterior or asked pairs.
    """
    chosen = resolve_strategy(strategy)
    i, j = chosen(posterior, asked, generator)
    return int(i), int(j)
