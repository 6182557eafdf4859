"""What a fusion-weight search returns, shared by the grid (:mod:`probrank.fusion.optimize`)
and Bayesian optimisation (:mod:`probrank.fusion.bayesopt`), so that neither imports the other
at module level."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported when a search runs, not with probrank.fusion
    from torch import Tensor

__all__ = ["DEFAULT_BUDGET", "Objective", "WeightSearch", "best_of"]

Objective = Callable[["Tensor"], "Tensor"]
"""Maps `b x R` weight vectors to `b` values to maximise."""
DEFAULT_BUDGET = 40
"""Default number of evaluations of Bayesian optimisation."""


@dataclass(frozen=True)
class WeightSearch:
    """The outcome of a weight search.

    Attributes:
        weights: The best weight vector found (`R` floats).
        value: Its objective value.
        tried: `n x R` every weight vector evaluated, in order.
        values: `n` their objective values.
        optimiser: The optimiser's name.
    """

    weights: tuple[float, ...]
    value: float
    tried: Tensor
    values: Tensor
    optimiser: str

    @property
    def evaluations(self) -> int:
        """How many weight vectors were evaluated."""
        return int(self.values.shape[0])


def best_of(tried: Tensor, values: Tensor, optimiser: str) -> WeightSearch:
    """The :class:`WeightSearch` whose best is the first maximum of ``values``.

    Args:
        tried: `n x R` weight vectors.
        values: `n` objective values.
        optimiser: A name for the record.
    """
    import torch

    index = int(torch.argmax(values))  # the first maximum
    return WeightSearch(
        weights=tuple(float(v) for v in tried[index]),
        value=float(values[index]),
        tried=tried,
        values=values,
        optimiser=optimiser,
    )
