"""The frozen-encoder regime of :class:`~probrank.models.gpf_ranker.GPFRanker`: the head grid
trained on pair features and selected on validation.

:func:`fit_standardised` is the body of :meth:`GPFRanker.fit` and :meth:`GPFRanker.fit_features`
(the ``gpf_ranker`` protocol's one door): the features are standardised with the training means and
standard deviations, every training setting of the grid (each focal ``gamma`` for GPF) is trained
once to the largest epoch count of ``settings.epochs``, and, per calibration
:class:`~probrank.models.gpf_ranker.selection.Family`, the checkpoint and calibration with the
lowest validation NLL are kept (:mod:`probrank.models.gpf_ranker.selection`). The families share the
training run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker.selection import (
    Family,
    Selection,
    restore,
    select,
    train_checkpoints,
)
from probrank.nn.heads import FitSettings, HeadKind, RelevanceHead
from probrank.nn.losses import LossKind

__all__ = [
    "FittedHead",
    "check_optional_head_options",
    "fit_standardised",
    "optional_head_options",
    "standardiser",
]

GP_OPTION_KEYS = (
    "prior_precision",
    "lengthscale",
    "mean_field_factor",
    "precision_update",
    "momentum",
    "momentum_form",
)
"""The GP heads' (SNGP, GPF) own optional settings."""
_OPTIONAL: dict[HeadKind, tuple[str, ...]] = {
    HeadKind.DETERMINISTIC: ("loss", "focal_gamma"),
    HeadKind.MC_DROPOUT: ("loss", "focal_gamma", "num_samples", "prediction_seed"),
    HeadKind.ENSEMBLE: ("loss", "focal_gamma", "num_members"),
    HeadKind.SNGP: (*GP_OPTION_KEYS, "loss", "focal_gamma"),
    HeadKind.GPF: GP_OPTION_KEYS,
}
"""The optional settings each head takes (the others must stay None)."""


def optional_head_options(settings: Any) -> dict[str, Any]:
    """The head constructor options of ``settings``' optional fields that are set
    (``focal_gamma`` becomes the head's ``gamma``)."""
    names = _OPTIONAL[HeadKind(settings.head)]
    out = {n: getattr(settings, n) for n in names if getattr(settings, n) is not None}
    if "focal_gamma" in out:
        out["gamma"] = out.pop("focal_gamma")
    return out


def check_optional_head_options(settings: Any) -> None:
    """Optional fields set for a head that does not take them are an error.

    Raises:
        InputDataError: naming the first such field.
    """
    head = HeadKind(settings.head)
    allowed = set(_OPTIONAL[head])
    for name in sorted({n for names in _OPTIONAL.values() for n in names} - allowed):
        if getattr(settings, name) is not None:
            raise InputDataError(f"{name} is not a setting of the {head.value} head")
    loss = getattr(settings, "loss", None)
    if loss is not None and loss not in {k.value for k in LossKind}:
        raise InputDataError(f"loss must be one of {[k.value for k in LossKind]}, got {loss!r}")


def standardiser(x_train: Tensor) -> tuple[Tensor, Tensor]:
    """`d` means and standard deviations (clamped at 1e-6; ones for one row) of `n x d`
    training features."""
    mean = x_train.mean(0)
    std = x_train.std(0).clamp_min(1e-6) if x_train.shape[0] > 1 else torch.ones_like(mean)
    return mean, std


@dataclass(frozen=True)
class FittedHead:
    """One calibration family's choice.

    Attributes:
        head: The restored head, its calibration applied.
        selection: The :class:`~probrank.models.gpf_ranker.selection.Selection`.
    """

    head: RelevanceHead
    selection: Selection

    @property
    def selected(self) -> dict[str, float]:
        """What validation chose: epochs, gamma (GPF), lambda (GP heads), T, the NLL."""
        return dict(self.selection.settings)


def fit_standardised(
    settings: Any,
    train: tuple[Tensor, Tensor],
    validation: tuple[Tensor, Tensor],
    *,
    seed: int,
    families: Sequence[Family],
) -> tuple[Tensor, Tensor, dict[Family, FittedHead]]:
    """Standardise, train the grid of ``settings`` and select per family on validation.

    Args:
        settings: :class:`~probrank.models.gpf_ranker.GPFRankerSettings`.
        train: `n x d` raw features and `n` 0/1 labels.
        validation: `n_val x d` raw features and `n_val` 0/1 labels.
        seed: Seeds initialisation, training and the random features.
        families: The calibration families to select (each from the same checkpoints).

    Returns:
        ``(mean, std, {family: FittedHead})``: the `d` standardisation and the choices.
    """
    if not families:
        raise InputDataError("families must not be empty")
    (x_train, y_train), (x_val, y_val) = train, validation
    mean, std = standardiser(x_train)
    x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
    name = HeadKind(settings.head).value
    grid = [{**o, "seed": seed} for o in settings.head_options()]
    fit_options = FitSettings(
        batch_size=settings.batch_size,
        lr=settings.lr,
        weight_decay=settings.weight_decay,
        seed=seed,
    )
    checkpoints = train_checkpoints(
        name, x_train.shape[1], grid, (x_train, y_train), x_val, settings.epochs, fit_options
    )
    fitted = {}
    for family in families:
        selection = select(name, checkpoints, y_val, family, settings.mean_field_factors)
        fitted[family] = FittedHead(restore(name, x_train.shape[1], selection), selection)
    return mean, std, fitted
