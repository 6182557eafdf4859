"""Search of fusion weights over the simplex: a grid (as ranx's) or Bayesian optimisation.

The weighted rules rank identically for ``w`` and ``c * w`` (``c > 0``), so weights are
searched on the simplex ``{w : w_i >= 0, sum_i w_i = 1}``. An objective maps `b x R` weight
vectors to `b` values to maximise (e.g. :class:`~probrank.fusion.objective.FusionObjective`).

* :attr:`Optimiser.GRID` evaluates every point of the lattice ``w_i = n_i / m`` with
  ``sum_i n_i = m`` (``m = steps``; 10 is ranx's ``step=0.1``): ``C(m + R - 1, R - 1)`` points,
  286 for 4 runs and 3003 for 6. ranx builds the same lattice but keeps only the tuples whose
  floating-point sum is exactly 1.0 (``sum(seq) == 1.0``), which drops some of them (it keeps
  62 of the 66 points for 3 runs, 256 of 286 for 4, 2486 of 3003 for 6: ``(0.1, 0.2, 0.7)``
  is kept but ``(0.2, 0.7, 0.1)`` is not); probrank keeps them all.
* :attr:`Optimiser.BOTORCH` runs BoTorch's qLogNoisyExpectedImprovement on a GP fitted to the
  evaluations so far, within ``budget`` evaluations (:mod:`probrank.fusion.bayesopt`).

Both return the best weights evaluated (the first of equal values).
"""

from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.fusion.search import DEFAULT_BUDGET, Objective, WeightSearch, best_of

if TYPE_CHECKING:  # torch is imported when a search runs, not with probrank.fusion
    from torch import Tensor

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_GRID_STEPS",
    "MAX_GRID_POINTS",
    "Objective",
    "Optimiser",
    "WeightSearch",
    "best_of",
    "grid_search",
    "optimise_weights",
    "simplex_lattice",
]

DEFAULT_GRID_STEPS = 10
"""Lattice steps per unit: weights in multiples of 0.1, as ranx's default ``step=0.1``."""
MAX_GRID_POINTS = 200_000
"""Larger lattices are refused (use Bayesian optimisation or fewer steps)."""


class Optimiser(str, Enum):
    """How fusion weights (or a method's parameter) are searched on the training topics."""

    GRID = "grid"
    """Every point of a regular lattice (ranx's grid search, without its floating-point
    losses); ignores ``budget``."""
    BOTORCH = "botorch"
    """Bayesian optimisation with BoTorch's qLogNoisyExpectedImprovement, ``budget``
    evaluations in all."""


def simplex_lattice(dim: int, steps: int = DEFAULT_GRID_STEPS) -> Tensor:
    """Every ``w`` with ``w_i = n_i / steps``, ``n_i >= 0`` integers summing to ``steps``.

    Args:
        dim: `R`, the number of weights.
        steps: `m`, lattice steps per unit.

    Returns:
        `C(m + R - 1, R - 1) x R` float64 points, in lexicographic order of ``n``.

    Raises:
        InputDataError: ``dim`` or ``steps`` < 1, or more than :data:`MAX_GRID_POINTS` points.
    """
    for label, value in (("dim", dim), ("steps", steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputDataError(f"{label} must be a positive integer, got {value!r}")
    import torch

    count = math.comb(steps + dim - 1, dim - 1)
    if count > MAX_GRID_POINTS:
        raise InputDataError(
            f"a grid of step 1/{steps} over {dim} weights has {count} points (more than "
            f"{MAX_GRID_POINTS}): use Bayesian optimisation or a coarser grid"
        )
    rows: list[list[int]] = []

    def extend(prefix: list[int], left: int) -> None:
        if len(prefix) == dim - 1:
            rows.append([*prefix, left])
            return
        for n in range(left + 1):
            extend([*prefix, n], left - n)

    extend([], steps)
    return torch.tensor(rows, dtype=torch.float64) / steps


def grid_search(objective: Objective, dim: int, *, steps: int = DEFAULT_GRID_STEPS) -> WeightSearch:
    """Evaluate every point of :func:`simplex_lattice` and keep the best."""
    import torch

    tried = simplex_lattice(dim, steps)
    return best_of(tried, torch.as_tensor(objective(tried), dtype=torch.float64), "grid")


def optimise_weights(
    objective: Objective,
    dim: int,
    optimiser: Optimiser | str = Optimiser.BOTORCH,
    *,
    budget: int = DEFAULT_BUDGET,
    steps: int = DEFAULT_GRID_STEPS,
    seed: int = 0,
) -> WeightSearch:
    """Maximise ``objective`` over the simplex of ``dim`` weights.

    Args:
        objective: `b x R` -> `b` values.
        dim: `R`.
        optimiser: An :class:`Optimiser` or its value.
        budget: Evaluations for Bayesian optimisation (the grid ignores it).
        steps: Lattice steps per unit for the grid.
        seed: Seeds Bayesian optimisation (the grid is deterministic).

    Returns:
        The best weights found and every evaluation.

    Raises:
        InputDataError: a bad optimiser, ``dim``, ``budget`` or ``steps``.
    """
    choice = parse_enum(Optimiser, optimiser, "optimiser")
    if choice is Optimiser.GRID:
        return grid_search(objective, dim, steps=steps)
    from probrank.fusion.bayesopt import bayes_search

    return bayes_search(objective, dim, budget=budget, seed=seed)
