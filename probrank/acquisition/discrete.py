"""BoTorch's ``optimize_acqf_discrete`` over a question's candidates, never re-asking a pair.

``optimize_acqf_discrete`` searches rows of a finite set; a preference loop asks about *pairs*
and must not ask the same pair twice (an EUBO loop happily re-proposes the pair it just asked,
since one judgement rarely settles it). Two helpers cover the two ways a loop asks:

* :func:`optimize_acqf_pairs`: a pairwise acquisition function (``qExpectedUtilityOfBestOption``,
  ``AnalyticExpectedUtilityOfBestOption``, ``qKnowledgeGradient`` with ``q = 2``, or any q-batch
  acquisition such as ``qLogNoisyExpectedImprovement`` / ``qUpperConfidenceBound`` at ``q = 2``)
  scored on every *open* pair at once: each pair ``(i, j)``, ``i < j``, not yet asked in either
  order, becomes one `1 x 2d` choice of ``optimize_acqf_discrete`` (a wrapper reshapes it back to
  the `2 x d` q-batch the acquisition function expects).
* :func:`optimize_acqf_challenger`: a one-point acquisition function (``LogExpectedImprovement``,
  ``qLogNoisyExpectedImprovement`` or ``qUpperConfidenceBound`` at ``q = 1``) picks the
  challenger of the incumbent; the incumbent and every candidate already compared with it go to
  ``X_avoid``.

Both return candidate indices (rows of ``datapoints``) and the acquisition value, and raise
:class:`~probrank.acquisition.pairs.ExhaustedPairsError` when nothing is left to ask.

BoTorch's own ``optimize_acqf_discrete(acqf, q=2, choices)`` picks the `q` points one at a
time, each with the ones already picked as ``X_pending``; BoTorch's analytic
``AnalyticExpectedUtilityOfBestOption`` has no ``X_pending`` (an ``AttributeError``) and scores
pairs only. :class:`PendingExpectedUtilityOfBestOption` is the same EUBO with pending points:
one point alone scores its expected utility (the best option among one), a point with one
pending point scores the pair. So ``optimize_acqf_discrete(PendingExpectedUtilityOfBestOption(
model), q=2, choices=model.datapoints)`` returns the candidate of highest expected utility and
its best challenger: the greedy pair of EUBO (BoTorch's "previous winner" recipe).

Example::

    asked = set()
    for _ in range(10):
        model = ...  # e.g. ranker.botorch_model(...), conditioned on the judgements so far
        (i, j), _ = optimize_acqf_pairs(qExpectedUtilityOfBestOption(model), x, asked)
        asked.add((i, j))
        winner, loser = (i, j) if user_prefers(i, j) else (j, i)
        model = model.condition_on_observations(x[[winner, loser]], torch.tensor([[0, 1]]))
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
from collections.abc import Iterable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.optim import optimize_acqf_discrete
from torch import Tensor

from probrank.acquisition.pairs import ExhaustedPairsError, normalize_asked
from probrank.exceptions import InputDataError
from probrank.posteriors.indices import candidate_index

__all__ = [
    "PairChoices",
    "PendingExpectedUtilityOfBestOption",
    "open_pairs",
    "optimize_acqf_challenger",
    "optimize_acqf_pairs",
]


class PendingExpectedUtilityOfBestOption(AnalyticExpectedUtilityOfBestOption):
    """BoTorch's analytic EUBO, ``E[max(f_a, f_b)]``, that also takes pending points, so that
    ``optimize_acqf_discrete(..., q=2)`` (which picks points one at a time, the earlier ones
    pending) works on it (see the module docstring).

    ``X`` `batch_shape x q x d` with the pending points `p x d` appended must make one or two
    options: a pair (``q = 2``, or ``q = 1`` with one pending point: the pair), or one point
    alone (its posterior mean, the expected utility of the best option among one).

    Args:
        pref_model: The preference model (``model.datapoints`` gives dtype and device).
        X_pending: `p x d` pending points (at most one is used with ``q = 1``).
    """

    def __init__(self, pref_model: Model, X_pending: Tensor | None = None) -> None:
        super().__init__(pref_model=pref_model)
        self.set_X_pending(X_pending)

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Points already chosen (`p x d`; None: none)."""
        self.X_pending = None if X_pending is None else X_pending.detach().clone()  # type: ignore[assignment]

    def forward(self, X: Tensor) -> Tensor:
        """`batch_shape x q x d` -> `batch_shape` values (see the class docstring)."""
        pending = 0 if self.X_pending is None else self.X_pending.shape[-2]
        q = X.shape[-2]
        if q == 2 and pending == 0:
            return super().forward(X)
        if q == 1 and pending == 1 and self.X_pending is not None:
            other = self.X_pending.to(X).expand(*X.shape[:-2], 1, X.shape[-1])
            return super().forward(torch.cat([X, other], dim=-2))
        if q == 1 and pending == 0:
            return self.model.posterior(X).mean[..., 0, 0]  # type: ignore[attr-defined]
        raise UnsupportedError(
            f"{type(self).__name__} scores one option or a pair; got q={q} with {pending} "
            "pending point(s) (optimize_acqf_discrete: q <= 2)"
        )


def open_pairs(n: int, asked: Iterable[tuple[int, int]] = ()) -> Tensor:
    """`P x 2` long ``(i, j)`` rows, ``i < j``, of the pairs not asked in either order.

    Raises:
        InputDataError: An asked pair outside ``[0, n)`` or naming one candidate twice.
        ExhaustedPairsError: Every pair has been asked.
    """
    done = normalize_asked(asked, n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in done]
    if not pairs:
        raise ExhaustedPairsError(f"all {n * (n - 1) // 2} pairs of {n} candidates were asked")
    return torch.tensor(pairs, dtype=torch.long)


class PairChoices(AcquisitionFunction):
    """A pairwise acquisition function seen through `b x 1 x 2d` rows (one row per pair), so
    that ``optimize_acqf_discrete`` with ``q = 1`` searches pairs.

    Args:
        acq_function: Scores `b x 2 x d` q-batches.
    """

    def __init__(self, acq_function: AcquisitionFunction) -> None:
        super().__init__(model=getattr(acq_function, "model", None))  # type: ignore[arg-type]
        self.inner = acq_function

    def forward(self, X: Tensor) -> Tensor:
        """`b x 1 x 2d` rows -> `b` values of the `b x 2 x d` pairs."""
        return self.inner(X.reshape(*X.shape[:-2], 2, X.shape[-1] // 2))


def _check_datapoints(datapoints: Tensor) -> Tensor:
    if datapoints.dim() != 2 or datapoints.shape[0] < 2:
        raise InputDataError(f"datapoints must be n x d with n >= 2, got {tuple(datapoints.shape)}")
    return datapoints


def optimize_acqf_pairs(
    acq_function: AcquisitionFunction,
    datapoints: Tensor,
    asked: Iterable[tuple[int, int]] = (),
    *,
    max_batch_size: int = 2048,
) -> tuple[tuple[int, int], Tensor]:
    """The open pair that maximises a pairwise acquisition function.

    Args:
        acq_function: Scores `b x 2 x d` pairs (e.g. ``qExpectedUtilityOfBestOption``).
        datapoints: `n x d` candidate rows.
        asked: Pairs already asked, in either order (repeats allowed).
        max_batch_size: Pairs scored per call (``optimize_acqf_discrete``'s batching).

    Returns:
        ``((i, j), value)``: the pair (``i < j``) and its acquisition value (0-d tensor).

    Raises:
        ExhaustedPairsError: Every pair has been asked.
    """
    x = _check_datapoints(datapoints)
    pairs = open_pairs(x.shape[0], asked)
    choices = x[pairs].reshape(pairs.shape[0], 2 * x.shape[-1])
    best, value = optimize_acqf_discrete(
        PairChoices(acq_function), q=1, choices=choices, max_batch_size=max_batch_size
    )
    index = int((choices == best.reshape(1, -1)).all(-1).nonzero()[0, 0])
    first, second = pairs[index].tolist()
    return (int(first), int(second)), value.reshape(())


def optimize_acqf_challenger(
    acq_function: AcquisitionFunction,
    datapoints: Tensor,
    incumbent: int,
    asked: Iterable[tuple[int, int]] = (),
    *,
    max_batch_size: int = 2048,
) -> tuple[int, Tensor]:
    """The candidate to compare with ``incumbent`` next: the maximiser of a one-point
    acquisition function over the candidates, with ``X_avoid`` the incumbent and every
    candidate already compared with it.

    Args:
        acq_function: Scores `b x 1 x d` points (e.g. ``LogExpectedImprovement``).
        datapoints: `n x d` candidate rows (distinct).
        incumbent: Index of the current best candidate.
        asked: Pairs already asked, in either order.
        max_batch_size: Points scored per call.

    Returns:
        ``(challenger, value)``.

    Raises:
        ExhaustedPairsError: The incumbent was compared with every other candidate.
    """
    x = _check_datapoints(datapoints)
    n = x.shape[0]
    best_index = candidate_index(incumbent, n)
    partners = {j if i == best_index else i for i, j in normalize_asked(asked, n)
                if best_index in (i, j)}  # fmt: skip
    avoid = sorted(partners | {best_index})
    if len(avoid) == n:
        raise ExhaustedPairsError(f"candidate {best_index} was compared with every other one")
    best, value = optimize_acqf_discrete(
        acq_function, q=1, choices=x, max_batch_size=max_batch_size, X_avoid=x[avoid]
    )
    challenger = int((x == best.reshape(1, -1)).all(-1).nonzero()[0, 0])
    return challenger, value.reshape(())
