"""The one candidate posterior: a Gaussian over one question's candidates that learns from
judgements and is a BoTorch ``Model`` at its edge.

:class:`CandidateSetPosterior` is the abstraction every candidate model in probrank implements:

* the closed-form Laplace posteriors:
  :class:`~probrank.posteriors.bradley_terry.BradleyTerryLaplace` (a kernel prior over the
  candidates),
  :class:`~probrank.posteriors.laplace.LastLayerLaplacePosterior` (the Siamese network's last
  layer) and :class:`~probrank.posteriors.head.HeadLaplacePosterior` (any relevance head of
  :mod:`probrank.nn.heads`, e.g. the RFF GP head of :class:`~probrank.models.GPFRanker`);
* the neural posteriors updated by SGD: MC dropout, SWAG, the deep ensemble
  (:mod:`probrank.posteriors.neural`, :mod:`probrank.posteriors.swag`);
* GPPL (BoTorch's ``PairwiseGP``, :mod:`probrank.posteriors.gppl`).

Its surface:

* ``posterior()``: the joint ``MultivariateNormal`` over the `n` candidates (mean `n`,
  covariance `n x n`); ``posterior_at(X)``: the same at any `batch_shape x q x d` points
  (candidates' rows, or new rows where the model supports them);
* ``update(winner, loser)`` / ``update_many``: condition in place on judgements;
  ``conditioned(X, comparisons)``: a conditioned copy;
* ``botorch_model()``: a BoTorch ``Model``
  (:class:`~probrank.posteriors.preference.PreferenceUtilityModel`) whose
  ``condition_on_observations`` / ``fantasize`` call ``conditioned``.

The two protocols of :mod:`probrank.posteriors.protocol` are the structural parts of this
class that other code needs: :class:`~probrank.posteriors.protocol.PreferenceModel`
(``posterior()`` + ``update``, what an interactive session drives, so a user's own model with
those two methods plugs in) and :class:`~probrank.posteriors.protocol.ConditionablePosterior`
(``posterior_at`` + ``conditioned``, what the BoTorch adapter needs).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import copy
from abc import ABC, abstractmethod

import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.posteriors.indices import judgement
from probrank.posteriors.preference import PreferenceUtilityModel, comparison_pairs, match_rows

__all__ = ["CandidateSetPosterior", "check_candidate_features"]


def check_candidate_features(
    features: Tensor, in_features: int | None = None, *, min_candidates: int = 2
) -> Tensor:
    """`n x d` candidate features as a float64 copy; ``n >= min_candidates``.

    Raises:
        InputDataError: Wrong shape, too few candidates or non-finite values.
    """
    x = torch.as_tensor(features).detach().to("cpu", torch.float64).clone()
    if x.dim() != 2 or x.shape[0] < min_candidates:
        raise InputDataError(
            f"features must be n x d with n >= {min_candidates}, got {tuple(x.shape)}"
        )
    if in_features is not None and x.shape[1] != in_features:
        raise InputDataError(f"features have width {x.shape[1]}, the network {in_features}")
    if not bool(torch.isfinite(x).all()):
        raise InputDataError("features hold NaN or infinite values")
    return x


class CandidateSetPosterior(ABC):
    """Base class: a posterior over `n` candidates that conditions on judgements.

    Subclasses implement :meth:`posterior_at` and ``_condition``, and extend
    ``_extend`` when they accept new points (the default refuses them) and ``_copy``
    when a deep copy is wasteful.

    Args:
        features: `n x d` candidate features (the BoTorch datapoints).
        jitter: Diagonal added to sample covariances.
        min_candidates: The fewest candidates accepted (2; 0 for models that grow).
    """

    def __init__(self, features: Tensor, *, jitter: float = 1e-6, min_candidates: int = 2) -> None:
        if jitter < 0:
            raise InputDataError(f"jitter must be non-negative, got {jitter}")
        self.features = check_candidate_features(features, min_candidates=min_candidates)
        self.jitter = float(jitter)
        self._comparisons: list[tuple[int, int]] = []
        self._cached: MultivariateNormal | None = None

    @property
    def num_candidates(self) -> int:
        return int(self.features.shape[0])

    @property
    def datapoints(self) -> Tensor:
        """`n x d` float64 rows that stand for the candidates in BoTorch."""
        return self.features

    @property
    def comparisons(self) -> list[tuple[int, int]]:
        """The ``(winner, loser)`` judgements conditioned on so far (a copy)."""
        return list(self._comparisons)

    def posterior(self) -> MultivariateNormal:
        """The joint posterior over the `n` candidates: mean `n`, covariance `n x n`."""
        if self._cached is None:
            self._cached = self.posterior_at(self.features)
        return self._cached

    @abstractmethod
    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """Joint posterior of the utilities at `batch_shape x q x d` features."""

    def update(self, winner: int, loser: int) -> None:
        """Condition on "candidate ``winner`` was preferred to ``loser``".

        Raises:
            InputDataError: Indices out of range or equal.
        """
        self.update_many([(winner, loser)])

    def update_many(self, judgements: list[tuple[int, int]]) -> None:
        """Condition on several ``(winner, loser)`` judgements with one update.

        Raises:
            InputDataError: Indices out of range or equal.
        """
        checked = [judgement(w, ell, self.num_candidates) for w, ell in judgements]
        if checked:
            self._comparisons.extend(checked)
            self._condition(checked)
            self._cached = None

    @abstractmethod
    def _condition(self, new: list[tuple[int, int]]) -> None:
        """Refresh the state after ``new`` was appended to ``self._comparisons``."""

    def _extend(self, rows: Tensor) -> None:
        """Add `k x d` new candidate rows (after the existing `n`), with no judgement."""
        self.features = torch.cat([self.features, rows])

    def _copy(self) -> CandidateSetPosterior:
        """An independent copy (conditioning it leaves ``self`` alone)."""
        return copy.deepcopy(self)

    def conditioned(self, X: Tensor, comparisons: Tensor) -> CandidateSetPosterior:
        """A copy updated with ``comparisons`` between the points ``X`` (``self`` unchanged).

        A point equal to a candidate's feature row is that candidate; other points become
        new candidates of the copy (appended after the `n`) where the model accepts them. The
        copy takes one update for all the comparisons (:meth:`update_many`); a point compared
        with itself is skipped.

        Args:
            X: `n' x d` points.
            comparisons: `m x 2` integer ``(winner, loser)`` rows indexing the points.
        """
        if X.dim() != 2:
            raise InputDataError(f"X must be n' x d, got {tuple(X.shape)}")
        points = self._check_x(X, self.features.shape[1])
        if not bool(torch.isfinite(points).all()):
            raise InputDataError("points hold NaN or infinite values")
        index = match_rows(self.features, X)
        new_rows = points[index < 0]
        distinct, inverse = (
            torch.unique(new_rows, dim=0, return_inverse=True)
            if new_rows.shape[0]
            else (new_rows, torch.zeros(0, dtype=torch.long))
        )
        index[index < 0] = self.num_candidates + inverse
        pairs = [(int(index[w]), int(index[ell]))
                 for w, ell in comparison_pairs(comparisons, X.shape[0])]  # fmt: skip
        model = self._copy()
        if distinct.shape[0]:
            model._extend(distinct)
        model.update_many([(w, ell) for w, ell in pairs if w != ell])
        return model

    def botorch_model(self, noise_variance: float = 0.0) -> PreferenceUtilityModel:
        """A BoTorch ``Model`` whose ``posterior(X)`` is :meth:`posterior_at` (current state)
        and which conditions copies on judgements (see
        :mod:`probrank.posteriors.preference`).

        Args:
            noise_variance: Judgement noise added to the utilities' variance when BoTorch
                asks for observation noise (e.g. when fantasizing comparisons).
        """
        return PreferenceUtilityModel(self, self.datapoints, noise_variance=noise_variance)

    def _check_x(self, X: Tensor, width: int) -> Tensor:
        if X.dim() < 2 or X.shape[-1] != width:
            raise InputDataError(f"X must be batch_shape x q x {width}, got shape {tuple(X.shape)}")
        return X.to(torch.float64)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n={self.num_candidates}, judgements={len(self._comparisons)})"
        )
