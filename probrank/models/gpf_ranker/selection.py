"""Validation-selected training of one relevance head: epochs, focal gamma, calibration.

Used by :class:`~probrank.models.gpf_ranker.GPFRanker`, by the GPF protocols
(:mod:`probrank.experiments.gpf`) and by the demo: the one implementation of the head grid and
its validation selection.

For one head and seed, every training setting (each focal ``gamma`` of the grid for GPF, one
setting for the others) is trained once to the largest epoch count of the grid; at each epoch of
the grid the head's posterior is completed (the exact Laplace pass for SNGP/GPF), its validation
predictive ``(m, v)`` recorded and its state kept. Then, per calibration family, the checkpoint
and calibration with the lowest validation NLL are chosen:

- ``plain``: the mean-field factor ``lambda`` from a grid (GP heads; the paper tunes it on
  validation data), no temperature;
- ``temperature``: ``lambda`` as above plus a validation-fitted temperature ``T``, the same
  post-hoc step for every head.

Nothing here looks at test data; the caller rebuilds the chosen head with :func:`restore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.nn.calibration import Calibration, select_calibration
from probrank.nn.heads import FitSettings, HeadKind, RelevanceHead, build_head

__all__ = [
    "Checkpoint",
    "Family",
    "RegimeFit",
    "Selection",
    "check_regime",
    "restore",
    "select",
    "train_checkpoints",
]

GP_HEADS = ("sngp", "gpf")
"""Heads with a predictive variance (``lambda`` matters)."""


class Family(str, Enum):
    """Calibration families reported by the protocol."""

    PLAIN = "plain"
    """Mean-field factor selected on validation (GP heads), no temperature."""
    TEMPERATURE = "temperature"
    """As ``plain`` plus a validation-fitted temperature on every head (row ``<head>+T``)."""


@dataclass
class Checkpoint:
    """One trained state of a head and its validation predictive.

    Attributes:
        options: Constructor options of the head (``gamma`` included for GPF).
        epochs: Epochs trained.
        state: A copy of the head's ``state_dict`` (posterior completed).
        val_mean: `n_val` predictive means of the logits.
        val_variance: `n_val` predictive variances (zeros without a Gaussian predictive).
    """

    options: dict[str, Any]
    epochs: int
    state: dict[str, Tensor]
    val_mean: Tensor
    val_variance: Tensor


@dataclass
class Selection:
    """The chosen checkpoint and calibration of one family.

    Attributes:
        checkpoint: The chosen :class:`Checkpoint`.
        calibration: Its :class:`~probrank.nn.calibration.Calibration`.
        val_nll: Validation NLL of the choice.
        settings: ``{"epochs", "gamma" (GPF), "lambda" (GP heads), "T"}`` for the report.
    """

    checkpoint: Checkpoint
    calibration: Calibration
    val_nll: float
    settings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RegimeFit:
    """The validation choices of a fine-tuned or top-layers fit and their predictions.

    Returned by :meth:`~probrank.models.gpf_ranker.GPFRanker.fit_fine_tuned` and
    :meth:`~probrank.models.gpf_ranker.GPFRanker.fit_top_layers`. A row is the head's name,
    and for an MC-dropout head in the top-layers regime also ``"deterministic"`` (the same
    network without dropout).

    Attributes:
        selections: ``{(row, family): Selection}``, rows in training order, each row's
            families in the order asked: the checkpoint (epochs, ``gamma`` of GPF) and the
            calibration with the lowest validation NLL.
        predictions: ``{(row, family): {set name: (probability, variance)}}``: on each
            evaluation set, the `n` calibrated P(relevant) and the `n` predictive variances
            of the logit (before calibration) at the chosen checkpoint, float64 (rows sharing a
            checkpoint are scored together and come next to each other).
    """

    selections: dict[tuple[str, Family], Selection]
    predictions: dict[tuple[str, Family], dict[str, tuple[Tensor, Tensor]]]

    def probability(
        self, name: str, *, row: str | None = None, family: Family | str | None = None
    ) -> Tensor:
        """`n` calibrated P(relevant) of evaluation set ``name`` (float64).

        Args:
            name: The evaluation set.
            row: The row (default: the head's own, the last one).
            family: The calibration :class:`Family` (default: the last one fitted).
        """
        keys = [k for k in self.selections if row is None or k[0] == row]
        chosen = keys[-1][0] if keys else str(row)
        families = [f for r, f in keys if r == chosen]
        key = (chosen, families[-1] if family is None and families else Family(family or "plain"))
        if key not in self.predictions or name not in self.predictions[key]:
            raise InputDataError(f"no predictions of row {row!r}, family {family!r}, on {name!r}")
        return self.predictions[key][name][0]


def check_regime(
    kind: HeadKind, heads: Sequence[HeadKind], regime: str, families: Sequence[Family]
) -> None:
    """Refuse a head the regime does not train (``regime`` completes "head X is not ...")
    and an empty list of calibration families (one line each)."""
    if kind not in heads:
        raise InputDataError(
            f"head {kind.value!r} is not {regime}; choose from {', '.join(h.value for h in heads)}"
        )
    if not families:
        raise InputDataError("families must not be empty")


def train_checkpoints(
    name: str,
    in_features: int,
    options_grid: Sequence[dict[str, Any]],
    train: tuple[Tensor, Tensor],
    validation: Tensor,
    epochs_grid: Sequence[int],
    fit: FitSettings,
) -> list[Checkpoint]:
    """Train head ``name`` once per option set and keep the checkpoints of ``epochs_grid``.

    Args:
        name: Head kind (``deterministic``, ``mc_dropout``, ``ensemble``, ``sngp``, ``gpf``).
        in_features: Feature width ``d``.
        options_grid: Constructor options, one dict per training setting (``seed`` included).
        train: `n x d` standardised training features and `n` labels.
        validation: `n_val x d` validation features.
        epochs_grid: Epoch counts to checkpoint (the largest is trained).
        fit: Training settings (its ``epochs`` is ignored).

    Returns:
        One :class:`Checkpoint` per option set and grid epoch.
    """
    x_train, y_train = train
    wanted = sorted({int(e) for e in epochs_grid})
    checkpoints: list[Checkpoint] = []
    for options in options_grid:
        head = build_head(name, in_features, **options)

        def keep(epochs: int, head: RelevanceHead = head, options: dict = options) -> None:
            if epochs not in wanted:
                return
            head.finalize(x_train, 1024)
            mean, variance = head.logit_predictive(validation)
            state = {k: v.detach().clone() for k, v in head.state_dict().items()}  # type: ignore[attr-defined]
            checkpoints.append(
                Checkpoint(dict(options), epochs, state, mean.double(), variance.double())
            )

        head.fit(
            x_train,
            y_train,
            FitSettings(
                epochs=wanted[-1],
                batch_size=fit.batch_size,
                lr=fit.lr,
                weight_decay=fit.weight_decay,
                seed=fit.seed,
            ),
            on_epoch_end=keep,
        )
    return checkpoints


def select(
    name: str,
    checkpoints: Sequence[Checkpoint],
    labels: Tensor,
    family: Family,
    factors: Sequence[float],
) -> Selection:
    """The checkpoint and calibration of ``family`` with the lowest validation NLL.

    Args:
        name: Head kind (``lambda`` is searched for GP heads only).
        checkpoints: From :func:`train_checkpoints`.
        labels: `n_val` 0/1 validation labels.
        family: :class:`Family`.
        factors: Mean-field factors ``lambda`` to try (GP heads).

    Returns:
        The :class:`Selection` (ties go to the earlier checkpoint).
    """
    grid = list(factors) if name in GP_HEADS else [0.0]
    best: Selection | None = None
    for checkpoint in checkpoints:
        choice = select_calibration(
            checkpoint.val_mean,
            checkpoint.val_variance,
            labels.double(),
            factors=grid,
            temperature=family is Family.TEMPERATURE,
        )
        if best is None or choice.nll < best.val_nll:
            best = Selection(checkpoint, choice.calibration, choice.nll)
    if best is None:
        raise InputDataError(f"no checkpoints of head {name!r} to select from")
    settings = {"epochs": float(best.checkpoint.epochs)}
    if "gamma" in best.checkpoint.options and name == "gpf":
        settings["gamma"] = float(best.checkpoint.options["gamma"])
    if name in GP_HEADS:
        settings["lambda"] = best.calibration.mean_field_factor
    settings["T"] = best.calibration.temperature
    settings["val NLL"] = best.val_nll
    best.settings = settings
    return best


def restore(name: str, in_features: int, selection: Selection) -> RelevanceHead:
    """The selected head, rebuilt from its checkpoint with its calibration applied."""
    head = build_head(name, in_features, **selection.checkpoint.options)
    head.load_state_dict(selection.checkpoint.state)  # type: ignore[attr-defined]
    head.eval()  # type: ignore[attr-defined]
    if hasattr(head, "mean_field_factor"):
        head.mean_field_factor = selection.calibration.mean_field_factor  # type: ignore[attr-defined]
    head.temperature = selection.calibration.temperature  # type: ignore[attr-defined]
    return head
