"""The preference-model protocol an :class:`~probrank.interactive.session.InteractiveSession`
drives.

A preference model holds a joint posterior over the utilities of one question's `n`
candidates and updates it after each pairwise judgement. Anything with these two methods
plugs in: the closed-form :class:`~probrank.interactive.bradley_terry.BradleyTerryLaplace`, or
an adapter over a neural utility model whose update is a few epochs of SGD.

Contract (the session's durability relies on it): a model built by the same factory and fed the
same judgements in the same order has the same posterior, so that a session log can be replayed.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gpytorch.distributions import MultivariateNormal

__all__ = ["PreferenceModel"]


@runtime_checkable
class PreferenceModel(Protocol):
    """A posterior over one question's candidate utilities that learns from judgements."""

    def posterior(self) -> MultivariateNormal:
        """The current joint posterior: mean `n`, covariance `n x n`."""
        ...

    def update(self, winner: int, loser: int) -> None:
        """Condition on one judgement: candidate ``winner`` was preferred to ``loser``."""
        ...
