"""MC dropout as whole-function draws: one dropout mask per pass and unit, shared by every row.

A pass of MC dropout is a posterior sample of the *function*: the thinned network it describes
scores every input with the same dropped units. Running ``nn.Dropout`` in training mode instead
draws a fresh mask per input row, so two identical rows get different values in one pass and
the passes' covariance over a set of candidates is not the covariance of function draws (the
covariance between two identical rows falls below their variance).

:func:`~probrank.nn.dropout_masks` draws, for a stack of modules, one `S x width` mask per
``nn.Dropout`` (``0`` or ``1 / (1 - p)``, from a given generator);
:func:`~probrank.nn.forward_with_masks` runs the stack once for all ``S`` passes. The MC-dropout
relevance head (:class:`~probrank.nn.MCDropoutHead`) and the Siamese utility network's head
(:class:`~probrank.nn.UtilityHead`, used by
:class:`~probrank.posteriors.neural.MCDropoutPosterior`) both use them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from probrank.exceptions import InputDataError

__all__ = ["dropout_masks", "dropout_widths", "forward_with_masks"]


def dropout_widths(modules: Sequence[nn.Module], in_width: int) -> list[int]:
    """The width of the input of every ``nn.Dropout`` in ``modules`` (in order).

    Args:
        modules: Linear layers, activations and dropouts, applied in order.
        in_width: Width of the stack's input.
    """
    widths, width = [], int(in_width)
    for module in modules:
        if isinstance(module, nn.Linear):
            width = module.out_features
        elif isinstance(module, nn.Dropout):
            widths.append(width)
    return widths


def dropout_masks(
    modules: Sequence[nn.Module], in_width: int, num_samples: int, generator: torch.Generator
) -> list[Tensor]:
    """Per ``nn.Dropout`` of ``modules``, `S x width` scaled Bernoulli masks (float64).

    Each mask entry is ``0`` (dropped) or ``1 / (1 - p)``; the masks of one sample describe one
    thinned network, shared by every input row.

    Args:
        modules: The stack (see :func:`dropout_widths`).
        in_width: Width of the stack's input.
        num_samples: ``S >= 1`` passes.
        generator: Source of the masks (drawn layer by layer, `S x width` uniforms each).

    Raises:
        InputDataError: ``num_samples < 1``.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise InputDataError(f"num_samples must be a positive integer, got {num_samples!r}")
    masks = []
    dropouts = [m for m in modules if isinstance(m, nn.Dropout)]
    for module, width in zip(dropouts, dropout_widths(modules, in_width), strict=True):
        keep = 1.0 - float(module.p)
        draws = torch.rand(num_samples, width, generator=generator, dtype=torch.float64)
        masks.append((draws < keep).to(torch.float64) / keep)
    return masks


def forward_with_masks(modules: Sequence[nn.Module], x: Tensor, masks: Sequence[Tensor]) -> Tensor:
    """Run ``modules`` on ``x`` once per pass, each ``nn.Dropout`` replaced by its mask.

    Args:
        modules: The stack; every module but the dropouts is applied as it is.
        x: `... x w` inputs.
        masks: :func:`dropout_masks` of the stack, one `S x width` tensor per dropout.

    Returns:
        `S x ... x o` outputs of the ``S`` thinned networks (``o`` the last width).

    Raises:
        InputDataError: fewer or more masks than dropouts.
    """
    dropouts = sum(isinstance(m, nn.Dropout) for m in modules)
    if len(masks) != dropouts:
        raise InputDataError(f"{len(masks)} masks for {dropouts} dropout layers")
    out = x.unsqueeze(0)
    remaining = iter(masks)
    for module in modules:
        if isinstance(module, nn.Dropout):
            mask = next(remaining).to(out.dtype)
            out = out * mask.reshape(mask.shape[0], *([1] * (x.dim() - 1)), mask.shape[-1])
        else:
            out = module(out)
    return out
