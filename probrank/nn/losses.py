"""Losses for binary relevance: focal loss (Lin et al. 2017), used by GPF-BERT."""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum

import torch
from torch import Tensor

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = ["LossKind", "binary_focal_loss", "check_focal_gamma", "make_loss"]


class LossKind(str, Enum):
    """Training loss of a relevance head."""

    BCE = "bce"
    """Binary cross-entropy, -log p_t."""
    FOCAL = "focal"
    """Focal loss, -(1 - p_t)^gamma log p_t."""


def binary_focal_loss(
    logits: Tensor, labels: Tensor, gamma: float = 2.0, reduction: str = "mean"
) -> Tensor:
    """Focal loss ``-(1 - p_t)^gamma log p_t`` of binary relevance, p_t = P(observed label).

    Args:
        logits: `n` logits of relevance.
        labels: `n` labels in {0, 1}.
        gamma: Focusing parameter, ``>= 0`` (0 gives cross-entropy). Heads built through
            :func:`make_loss` require the GPF paper's ``gamma >= 1``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        A scalar (or `n` values for ``"none"``).
    """
    if gamma < 0:
        raise InputDataError(f"focal gamma must be non-negative, got {gamma}")
    labels = labels.to(logits.dtype)
    log_p = torch.nn.functional.logsigmoid(logits)
    log_not_p = torch.nn.functional.logsigmoid(-logits)
    log_pt = labels * log_p + (1 - labels) * log_not_p
    losses = -((1 - log_pt.exp()) ** gamma) * log_pt
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    if reduction == "none":
        return losses
    raise InputDataError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def check_focal_gamma(gamma: float) -> float:
    """``gamma`` as a float if it is a valid focal-loss gamma of a head (``>= 1``, finite).

    Raises:
        InputDataError: ``gamma < 1`` (0 would be plain cross-entropy: use ``loss="bce"``).
    """
    if not (math.isfinite(gamma) and gamma >= 1):
        raise InputDataError(
            f"focal gamma must be >= 1 (GPF), got {gamma}; use loss='bce' for cross-entropy"
        )
    return float(gamma)


def make_loss(
    kind: str | LossKind = LossKind.BCE, gamma: float = 2.0
) -> Callable[[Tensor, Tensor], Tensor]:
    """A ``loss(logits, labels) -> scalar`` function (mean over items).

    Args:
        kind: ``"bce"`` or ``"focal"`` (:class:`LossKind`).
        gamma: Focal-loss gamma, ``>= 1`` (ignored for ``"bce"``).

    Raises:
        InputDataError: Unknown ``kind`` or a focal ``gamma < 1``.
    """
    kind = parse_enum(LossKind, kind, "loss")
    if kind is LossKind.FOCAL:
        check_focal_gamma(gamma)
        return lambda logits, labels: binary_focal_loss(logits, labels, gamma)
    return lambda logits, labels: torch.nn.functional.binary_cross_entropy_with_logits(
        logits, labels.to(logits.dtype)
    )
