"""Folds over topics and the one cross-validation loop of the project.

**The fold rule** (:func:`split_folds`, used by every cross-validation in probrank: QLFusion's
cross-fitting, the trained fusion methods, the retrieval cascade):

* at least **2** folds, and at least as many items as folds (a caller that also carves a
  validation fold out of the others, as QLFusion does, needs 3 and checks it itself);
* the items are shuffled by ``torch.randperm(n, generator=torch.Generator().manual_seed(seed))``
  and fold ``f`` takes the items at positions ``f, f + folds, f + 2 * folds, ...`` of that
  permutation, so fold sizes differ by at most one and the same seed gives the same folds
  wherever it is used;
* with ``sort=True`` (the default) each fold lists its items in their input order; with
  ``sort=False`` in the permutation's order (the retrieval cascade's folds, which its results
  report). The members of each fold are the same either way.

:func:`cross_validate` runs the one held-out loop over such folds: for each fold, a model is
fitted on the other folds' keys and predicts the fold's keys.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from probrank.exceptions import InputDataError

__all__ = ["MIN_FOLDS", "CrossValidation", "cross_validate", "fold_indices", "split_folds"]

MIN_FOLDS = 2
"""The fewest folds a split may have."""

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")
P = TypeVar("P")


def fold_indices(
    count: int, folds: int, *, seed: int = 0, sort: bool = True, min_folds: int = MIN_FOLDS
) -> list[list[int]]:
    """Split the indices ``0 .. count - 1`` into ``folds`` folds by the module's rule.

    Args:
        count: Number of items.
        folds: Number of folds.
        seed: Seeds the permutation.
        sort: List each fold's indices in increasing order (else in the permutation's order).
        min_folds: The fewest folds the caller accepts (at least :data:`MIN_FOLDS`).

    Returns:
        ``folds`` lists of indices; together a partition of ``range(count)``.

    Raises:
        InputDataError: fewer than ``min_folds`` folds, or fewer items than folds.
    """
    least = max(MIN_FOLDS, min_folds)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < least:
        raise InputDataError(f"cross-validation needs at least {least} folds, got {folds!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputDataError(f"the fold seed must be an integer, got {seed!r}")
    if count < folds:
        raise InputDataError(f"{count} topics cannot fill {folds} folds")
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed)).tolist()
    split = [order[f::folds] for f in range(folds)]
    return [sorted(part) for part in split] if sort else split


def split_folds(
    items: Sequence[K], folds: int, *, seed: int = 0, sort: bool = True, min_folds: int = MIN_FOLDS
) -> list[list[K]]:
    """Split ``items`` (e.g. topic ids) into ``folds`` folds by the module's rule.

    Args:
        items: The items, distinct; not modified.
        folds: Number of folds.
        seed: Seeds the permutation.
        sort: List each fold's items in input order (else in the permutation's order).
        min_folds: The fewest folds the caller accepts (at least :data:`MIN_FOLDS`).

    Returns:
        ``folds`` lists of items.

    Raises:
        InputDataError: see :func:`fold_indices`; or repeated items.
    """
    items = list(items)
    if len(set(items)) != len(items):
        repeated = sorted({str(i) for i in items if items.count(i) > 1})
        raise InputDataError(f"fold items must be distinct, got repeated {repeated[:3]}")
    split = fold_indices(len(items), folds, seed=seed, sort=sort, min_folds=min_folds)
    return [[items[i] for i in part] for part in split]


@dataclass(frozen=True)
class CrossValidation(Generic[K, M, P]):
    """The outcome of :func:`cross_validate`.

    Attributes:
        folds: The held-out keys of each fold.
        models: The model fitted for each fold (None for a fold with no keys to predict).
        predictions: Each fold's predictions of its held-out keys (None likewise).
    """

    folds: list[list[K]]
    models: list[M | None]
    predictions: list[P | None]


def cross_validate(
    folds: Sequence[Sequence[K]],
    fit: Callable[[list[K], int], M],
    predict: Callable[[M, list[K]], P],
    *,
    keys: Sequence[K] | None = None,
    progress: Callable[[int], None] | None = None,
) -> CrossValidation[K, M, P]:
    """Fit one model per fold on the other folds' keys and predict the fold's keys.

    Args:
        folds: The keys of each fold (e.g. from :func:`split_folds`); disjoint.
        fit: ``fit(training keys, fold index) -> model``; the training keys are the other
            folds' keys that are in ``keys``, in the order of ``keys``.
        predict: ``predict(model, held-out keys) -> predictions``.
        keys: The keys to cross-validate, in the order training sets list them (default: the
            folds' keys, fold by fold). Every key must be in a fold; a fold's keys outside
            ``keys`` are ignored, and a fold left without keys is skipped.
        progress: Called with the fold index after each fold.

    Returns:
        The folds (their keys within ``keys``), the models and the predictions per fold.

    Raises:
        InputDataError: a key in no fold, or in two.
    """
    where: dict[K, int] = {}
    for f, part in enumerate(folds):
        for key in part:
            if key in where:
                raise InputDataError(f"{key!r} is in folds {where[key]} and {f}")
            where[key] = f
    ordered = [k for part in folds for k in part] if keys is None else list(keys)
    missing = [k for k in ordered if k not in where]
    if missing:
        raise InputDataError(f"topic {missing[0]!r} is in no fold")
    held_out: list[list[K]] = [[k for k in ordered if where[k] == f] for f in range(len(folds))]
    models: list[M | None] = []
    predictions: list[P | None] = []
    for f, test in enumerate(held_out):
        if not test:
            models.append(None)
            predictions.append(None)
        else:
            model = fit([k for k in ordered if where[k] != f], f)
            models.append(model)
            predictions.append(predict(model, test))
        if progress is not None:
            progress(f)
    return CrossValidation(held_out, models, predictions)
