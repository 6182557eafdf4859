"""The protocols of a posterior over one question's candidate utilities.

Both are the structural parts of the one candidate posterior,
:class:`~probrank.posteriors.base.CandidateSetPosterior`, which every posterior in
:mod:`probrank.posteriors` subclasses; they exist so that code that needs only part of it (a
session, the BoTorch adapter) also accepts a user's own model with those methods.

:class:`PreferenceModel` is what an :class:`~probrank.interactive.session.InteractiveSession`
drives: a joint posterior over the utilities of one question's `n` candidates
(``posterior()``) that is updated after each pairwise judgement (``update(winner, loser)``).
Anything with these two methods plugs in: every posterior in :mod:`probrank.posteriors` (the
closed-form :class:`~probrank.posteriors.bradley_terry.BradleyTerryLaplace`, the last-layer
Laplace, MC dropout, SWAG, the deep ensemble and GPPL), or a user's own model.

Contract (a session's durability relies on it): a model built by the same factory and fed the
same judgements in the same order has the same posterior, so that a session log can be
replayed.

:class:`ConditionablePosterior` is what the BoTorch adapter
(:class:`~probrank.posteriors.preference.PreferenceUtilityModel`) needs of a member: the
posterior at any points (``posterior_at``) and a copy conditioned on comparisons
(``conditioned``). Every posterior in :mod:`probrank.posteriors` implements both protocols and
offers ``botorch_model()``, a BoTorch ``Model`` over its candidates.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
from typing import Protocol, runtime_checkable

from gpytorch.distributions import MultivariateNormal
from torch import Tensor

__all__ = ["ConditionablePosterior", "PreferenceModel"]


@runtime_checkable
class PreferenceModel(Protocol):
    """A posterior over one question's candidate utilities that learns from judgements."""

    def posterior(self) -> MultivariateNormal:
        """The current joint posterior: mean `n`, covariance `n x n`."""
        ...

    def update(self, winner: int, loser: int) -> None:
        """Condition on one judgement: candidate ``winner`` was preferred to ``loser``."""
        ...


class ConditionablePosterior(Protocol):
    """A posterior over candidate utilities that BoTorch can query and condition."""

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """Joint posterior of the utilities at `batch_shape x q x d` points."""
        ...

    def conditioned(self, X: Tensor, comparisons: Tensor) -> ConditionablePosterior:
        """A copy updated with ``comparisons`` (`m x 2` rows ``(winner, loser)`` indexing
        the `n'` rows of the `n' x d` points ``X``); ``self`` is left unchanged."""
        ...
