"""The convergence check of the Bayesian comparison's draws: R-hat, bulk and tail ESS and
divergences, each failed criterion named. No torch or Pyro here (the exact likelihoods use it
too); ArviZ is imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ESS_MIN", "RHAT_MAX", "Convergence", "check_draws"]

RHAT_MAX = 1.01
"""Largest rank-normalised split R-hat (``check_convergence``'s default)."""
ESS_MIN = 400.0
"""Smallest bulk and tail ESS (``check_convergence``'s default)."""


@dataclass(frozen=True)
class Convergence:
    """R-hat, ESS and divergences of a fit (thresholds as ``check_convergence``'s defaults).

    Attributes:
        converged: Every criterion met.
        max_rhat: Largest R-hat over all checked quantities.
        min_ess: Smallest bulk or tail ESS.
        divergences: Divergent transitions after warm-up, all chains.
        messages: One line per failed criterion.
    """

    converged: bool
    max_rhat: float
    min_ess: float
    divergences: int
    messages: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Strict JSON: ``{"converged", "max_rhat", "min_ess", "divergences", "messages"}``,
        undefined statistics (one chain, draws that never moved) as ``None``, never NaN."""
        return {
            "converged": self.converged,
            "max_rhat": self.max_rhat if math.isfinite(self.max_rhat) else None,
            "min_ess": self.min_ess if math.isfinite(self.min_ess) else None,
            "divergences": self.divergences,
            "messages": list(self.messages),
        }


def check_draws(arrays: Mapping[str, np.ndarray], divergences: int) -> Convergence:
    """R-hat, bulk and tail ESS of every component of every array, and the divergences.

    Args:
        arrays: ``{name: chains x draws x ...}``.
        divergences: Divergent transitions after warm-up.

    Returns:
        A :class:`Convergence`: converged only if R-hat <= 1.01 (undefined, and so failed, with
        one chain), bulk and tail ESS >= 400 and no divergences; each failed criterion is one
        message.
    """
    from probrank import _arviz

    dataset = _arviz.to_dataset(arrays)
    chains = next(iter(arrays.values())).shape[0]
    bulk = _flat(_arviz.ess(dataset, method="bulk"))
    tail = _flat(_arviz.ess(dataset, method="tail"))
    ess = np.minimum(bulk, tail)
    min_ess = float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan")
    messages = []
    max_rhat = float("nan")
    if chains > 1:  # R-hat compares chains
        with np.errstate(invalid="ignore", divide="ignore"):  # draws that never moved
            rhat = _flat(_arviz.rhat(dataset))
        high = ~(rhat <= RHAT_MAX)
        max_rhat = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else float("nan")
        if high.any():
            messages.append(
                f"R-hat above {RHAT_MAX} (or undefined) for {int(high.sum())} quantities "
                f"(max {max_rhat:.3f})"
            )
    else:
        messages.append("R-hat undefined with one chain (needs >= 2)")
    for name, values in (("bulk", bulk), ("tail", tail)):
        low = ~(values >= ESS_MIN)  # NaN (draws that never moved) fails too
        if low.any():
            least = float(np.nanmin(values)) if np.isfinite(values).any() else float("nan")
            messages.append(
                f"{name} ESS below {ESS_MIN:g} (or undefined) for {int(low.sum())} "
                f"quantities (min {least:.0f})"
            )
    if divergences:
        messages.append(f"{divergences} divergent transitions")
    return Convergence(
        converged=not messages,
        max_rhat=max_rhat,
        min_ess=min_ess,
        divergences=divergences,
        messages=messages,
    )


def _flat(dataset: Any) -> np.ndarray:
    """Every value of every variable of an ArviZ result dataset, as one array."""
    return np.concatenate([np.ravel(dataset[name].values) for name in dataset.data_vars])
