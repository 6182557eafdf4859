"""Convergence checks of MCMC draws: R-hat, effective sample sizes and divergences.

Defaults follow Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization,
folding, and localization: an improved R-hat": rank-normalised split-R-hat below 1.01 and bulk
and tail ESS of at least 100 per chain (400 for the four chains they recommend), and no
divergent transitions (Betancourt 2017). R-hat compares chains: with a single chain (SVI or
Laplace draws) it is undefined and only the ESS threshold applies.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from probrank.diagnostics.summary import summary
from probrank.exceptions import ConvergenceWarning, InputDataError

__all__ = ["ESS_MIN", "RHAT_MAX", "ConvergenceReport", "check_convergence"]

RHAT_MAX = 1.01
"""Largest R-hat that counts as converged (Vehtari et al. 2021)."""
ESS_MIN = 400.0
"""Smallest bulk and tail ESS, over all chains together, that counts as converged."""


@dataclass(frozen=True)
class ConvergenceReport:
    """The outcome of :func:`check_convergence`.

    Attributes:
        converged: True when every threshold is met.
        high_rhat: Parameters (``name[i, j]``) whose R-hat exceeds ``rhat_max``.
        low_ess: Parameters whose bulk or tail ESS is below ``ess_min``.
        divergences: Divergent transitions (None when not recorded).
        table: The :func:`~probrank.diagnostics.summary` table the check used.
        messages: One line per failed criterion.
    """

    converged: bool
    high_rhat: list[str]
    low_ess: list[str]
    divergences: int | None
    table: pd.DataFrame
    messages: list[str] = field(default_factory=list)


def _names(labels: list[str], limit: int = 8) -> str:
    shown = ", ".join(labels[:limit])
    return shown + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def check_convergence(
    data: Any,
    *,
    rhat_max: float = RHAT_MAX,
    ess_min: float = ESS_MIN,
    max_divergences: int = 0,
    var_names: Sequence[str] | None = None,
    warn: bool = True,
) -> ConvergenceReport:
    """Check R-hat, bulk/tail ESS and divergences; warn naming the offending parameters.

    Args:
        data: ArviZ data (e.g. from :func:`~probrank.diagnostics.to_inference_data`).
        rhat_max: Largest acceptable R-hat (ignored with one chain).
        ess_min: Smallest acceptable bulk and tail ESS over all chains together. With one
            chain the ESS is estimated from that chain alone.
        max_divergences: Largest acceptable number of divergent transitions.
        var_names: Variables to check (default: all).
        warn: Emit a :class:`~probrank.exceptions.ConvergenceWarning` when a check fails.

    Returns:
        A :class:`ConvergenceReport`.

    Raises:
        InputDataError: A threshold out of range.
    """
    if not rhat_max >= 1.0 or not ess_min >= 0 or max_divergences < 0:
        raise InputDataError(
            f"need rhat_max >= 1, ess_min >= 0, max_divergences >= 0; got {rhat_max}, "
            f"{ess_min}, {max_divergences}"
        )
    table = summary(data, var_names=var_names, round_to="none")
    messages: list[str] = []
    rhat = table["r_hat"]
    high_rhat = [str(k) for k in table.index[rhat > rhat_max]]
    if high_rhat:
        messages.append(
            f"R-hat above {rhat_max} (max {float(rhat.max()):.3f}) for {_names(high_rhat)}"
        )
    ess = table[["ess_bulk", "ess_tail"]].min(axis=1)
    low_ess = [str(k) for k in table.index[~(ess >= ess_min)]]
    if low_ess:
        messages.append(
            f"bulk or tail ESS below {ess_min:g} (min {float(ess.min()):.0f}) for {_names(low_ess)}"
        )
    count = table.attrs.get("divergences")
    if count is not None and count > max_divergences:
        messages.append(f"{count} divergent transitions (more than {max_divergences})")
    report = ConvergenceReport(
        converged=not messages,
        high_rhat=high_rhat,
        low_ess=low_ess,
        divergences=count,
        table=table,
        messages=messages,
    )
    if warn and messages:
        warnings.warn("; ".join(messages), ConvergenceWarning, stacklevel=2)
    return report
