"""Any relevance head's posterior, conditioned in closed form on judgements and labels.

A head of :mod:`probrank.nn.heads` gives a joint Gaussian over the logits of any set of
feature rows, consistently (a Gaussian process over feature rows): the RFF GP heads (SNGP,
GPF) ``N(Phi beta_hat, Phi Sigma Phi^T)`` with the low-rank root ``Phi L^{-T}``; MC dropout and
the deep ensemble the sample moments of fixed function draws (root: the centred draws); the
deterministic head a point mass widened by a tiny variance on identical rows. Taking that
posterior as the prior ``N(m(x), k(x, x'))``, :class:`HeadLaplacePosterior` adds judgements
("a preferred to b", Bradley-Terry at scale ``s``) and binary relevance labels
(``P(y = 1) = sigmoid(f)``) and computes the Laplace posterior in function space
(:func:`~probrank.posteriors.newton.laplace_fit`: a Newton solve in as many dimensions as
there are observations, never a refit of the head).

For the RFF GP heads this is exactly the weight-space Laplace update of the output weights:
the precision over the random-feature weights ``beta`` gains the low-rank term
``Phi_o^T D^T Lambda D Phi_o`` of the new observations and the mean moves to the new mode, as
refitting the Laplace posterior of ``beta`` from scratch with the head's posterior as the prior
gives (``tests/models/gpf_ranker/test_conditioning.py`` checks the two against each other).
Conditioning on ``A`` then ``B`` equals conditioning on both at once: the Laplace is always
recomputed from the head's posterior and every observation so far.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import copy
from collections.abc import Callable
from typing import cast

import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator, DiagLinearOperator, RootLinearOperator
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.posteriors.base import CandidateSetPosterior, check_candidate_features
from probrank.posteriors.indices import candidate_index
from probrank.posteriors.newton import LaplaceFit, Link, difference_rows, laplace_fit
from probrank.posteriors.preference import identical_rows, match_rows

__all__ = ["HeadLaplacePosterior", "PriorParts", "prior_parts"]

PriorParts = tuple[Tensor, Tensor, Tensor]
"""``(mean `... x q`, root `... x q x r`, variance on identical rows `... x q`)`` (float64)."""


def prior_parts(mvn: MultivariateNormal) -> PriorParts:
    """A head's joint Gaussian over `q` rows as mean, covariance root and identical-row variance.

    Raises:
        InputDataError: A covariance that is neither a root (``RootLinearOperator``) nor
            diagonal: its cross-covariance with other rows is unknown.
    """
    covariance = mvn.lazy_covariance_matrix
    mean = mvn.mean.detach().to(torch.float64)
    if isinstance(covariance, RootLinearOperator):
        root = covariance.root.to_dense().detach().to(torch.float64)
        return mean, root, torch.zeros_like(mean)
    if isinstance(covariance, DiagLinearOperator):
        diagonal = covariance.diagonal().detach().to(torch.float64)
        return mean, mean.new_zeros(*mean.shape, 0), diagonal
    raise InputDataError(
        f"the head's posterior has a {type(covariance).__name__} covariance; conditioning needs "
        "a covariance root (RootLinearOperator) or a diagonal one"
    )


def _kernel(a: PriorParts, x_a: Tensor, b: PriorParts, x_b: Tensor) -> Tensor:
    """`... x p x q` prior covariance ``R_a R_b^T + v_a [x_a == x_b]``."""
    covariance = a[1] @ b[1].transpose(-1, -2)
    if bool((a[2] != 0).any()):
        same = identical_rows(x_a, x_b).to(torch.float64)
        covariance = covariance + a[2].unsqueeze(-1) * same
    return covariance


class HeadLaplacePosterior(CandidateSetPosterior):
    """A head's posterior over feature rows, conditioned on judgements and labels.

    Args:
        prior: ``X -> MultivariateNormal``: `batch_shape x q x d` float64 rows to the head's
            joint posterior of their logits (root or diagonal covariance, see
            :func:`prior_parts`), e.g. ``head.posterior``.
        features: `n x d` candidate rows (``n >= 0``; points met later in
            ``conditioned`` are added).
        scale: Judgement likelihood scale ``s > 0``.
        jitter: Added to the diagonal of returned covariances.
        max_iter: Newton iterations.
        tol: Newton tolerance.
    """

    def __init__(
        self,
        prior: Callable[[Tensor], MultivariateNormal],
        features: Tensor,
        *,
        scale: float = 1.0,
        jitter: float = 1e-6,
        max_iter: int = 100,
        tol: float = 1e-10,
    ) -> None:
        super().__init__(features, jitter=jitter, min_candidates=0)
        if not scale > 0 or max_iter < 1 or not tol > 0:
            raise InputDataError(
                f"need scale > 0, max_iter >= 1, tol > 0; got {scale}, {max_iter}, {tol}"
            )
        self._prior_fn = prior
        self.scale = float(scale)
        self.link = Link.LOGISTIC  # the heads' logits are Bernoulli logits
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self._labels: list[tuple[int, float]] = []
        self._parts = self._prior(self.features)
        self._fit = self._laplace()

    def _prior(self, x: Tensor) -> PriorParts:
        with torch.no_grad():
            return prior_parts(self._prior_fn(x))

    @property
    def labels(self) -> list[tuple[int, float]]:
        """The ``(candidate, label)`` relevance labels conditioned on so far (a copy)."""
        return list(self._labels)

    def _rows(self) -> Tensor:
        n = self.num_candidates
        judged = difference_rows(self._comparisons, n, self.scale)
        labelled = torch.zeros(len(self._labels), n, dtype=torch.float64)
        for row, (index, label) in enumerate(self._labels):
            labelled[row, index] = 2.0 * label - 1.0
        return torch.cat([judged, labelled])

    def _laplace(self) -> LaplaceFit:
        mean, _, _ = self._parts
        covariance = _kernel(self._parts, self.features, self._parts, self.features)
        return laplace_fit(
            mean, covariance, self._rows(), self.link, max_iter=self.max_iter, tol=self.tol
        )

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """The conditioned posterior at `batch_shape x q x d` rows (dense `q x q`, float64)."""
        x = self._check_x(X, self.features.shape[1])
        parts = self._prior(x)
        cross = _kernel(parts, x, self._parts, self.features)
        prior_covariance = _kernel(parts, x, parts, x)
        mean, covariance = self._fit.predictive(parts[0], cross, prior_covariance)
        if self.jitter:
            eye = torch.eye(covariance.shape[-1], dtype=covariance.dtype)
            covariance = covariance + self.jitter * eye
        return MultivariateNormal(mean, DenseLinearOperator(covariance))

    def update_labels(self, labels: list[tuple[int, float]]) -> None:
        """Condition on binary relevance labels ``(candidate, 0 or 1)`` with one update.

        Raises:
            InputDataError: An index out of range or a label other than 0 or 1.
        """
        checked = []
        for index, label in labels:
            if float(label) not in (0.0, 1.0):
                raise InputDataError(f"relevance labels must be 0 or 1, got {label!r}")
            checked.append((candidate_index(index, self.num_candidates), float(label)))
        if checked:
            self._labels.extend(checked)
            self._fit = self._laplace()
            self._cached = None

    def labelled(self, X: Tensor, labels: Tensor) -> HeadLaplacePosterior:
        """A copy conditioned on relevance ``labels`` (`n'` of 0/1) of the points ``X``
        (`n' x d`; rows that are not candidates are added); ``self`` is unchanged."""
        if X.dim() != 2 or labels.reshape(-1).shape[0] != X.shape[0]:
            raise InputDataError(
                f"need n' x d points and n' labels, got {tuple(X.shape)} and {tuple(labels.shape)}"
            )
        model = cast(HeadLaplacePosterior, self.conditioned(X, torch.zeros(0, 2, dtype=torch.long)))
        index = self._point_index(model, X)
        values = labels.reshape(-1).tolist()
        model.update_labels([(i, float(y)) for i, y in zip(index, values, strict=True)])
        return model

    @staticmethod
    def _point_index(model: CandidateSetPosterior, X: Tensor) -> list[int]:
        return [int(i) for i in match_rows(model.features, X).reshape(-1).tolist()]

    def _extend(self, rows: Tensor) -> None:
        rows = check_candidate_features(rows, self.features.shape[1], min_candidates=1)
        parts = self._prior(rows)
        self._parts = tuple(  # type: ignore[assignment]
            torch.cat([old, new], 0) for old, new in zip(self._parts, parts, strict=True)
        )
        super()._extend(rows)
        self._fit = self._laplace()

    def _condition(self, new: list[tuple[int, int]]) -> None:
        self._fit = self._laplace()

    def _copy(self) -> HeadLaplacePosterior:
        # the head and the tensors are never modified in place: share them
        model = copy.copy(self)
        model._comparisons = list(self._comparisons)
        model._labels = list(self._labels)
        model._cached = None
        return model
