"""Two posteriors of the same parameters side by side (e.g. SVI against NUTS).

For a small Bayesian layer NUTS gives a reference posterior; a variational (SVI) or Laplace
approximation is judged by its standardised mean error ``z = (mean_approx - mean_ref) /
sd_ref`` (how many reference standard deviations the means are apart) and its sd ratio
``sd_approx / sd_ref`` (below 1: over-confident, the usual mean-field behaviour).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from probrank._arviz import get_group
from probrank.diagnostics._data import flat_parameters
from probrank.exceptions import InputDataError

__all__ = ["compare_posteriors"]


def compare_posteriors(
    reference: Any,
    approximation: Any,
    *,
    var_names: Sequence[str] | None = None,
    names: tuple[str, str] = ("NUTS", "SVI"),
) -> pd.DataFrame:
    """Posterior means and sds of two fits, with standardised differences.

    Args:
        reference: ArviZ data of the reference posterior (e.g. NUTS).
        approximation: ArviZ data of the approximation (e.g. SVI draws), same variables.
        var_names: Variables to compare (default: those both posteriors hold).
        names: Labels of the two posteriors in the column names.

    Returns:
        One row per scalar parameter: ``{ref} mean``, ``{ref} sd``, ``{approx} mean``,
        ``{approx} sd``, ``z`` and ``sd ratio``. ``table.attrs`` holds ``mean |z|`` and
        ``median sd ratio``.

    Raises:
        InputDataError: no shared variables, or shapes that differ.
    """
    ref_set, approx_set = get_group(reference, "posterior"), get_group(approximation, "posterior")
    shared = [str(v) for v in ref_set.data_vars if v in approx_set.data_vars]
    chosen = list(var_names) if var_names is not None else shared
    if not chosen:
        raise InputDataError("the two posteriors share no variable")
    ref = flat_parameters(ref_set, chosen)
    approx = flat_parameters(approx_set, chosen)
    if list(ref) != list(approx):
        raise InputDataError("the two posteriors' variables differ in shape or coordinates")
    ref_name, approx_name = names
    rows = []
    for label in ref:
        r, a = ref[label].ravel(), approx[label].ravel()
        r_sd, a_sd = float(r.std(ddof=1)), float(a.std(ddof=1))
        rows.append(
            {
                f"{ref_name} mean": float(r.mean()),
                f"{ref_name} sd": r_sd,
                f"{approx_name} mean": float(a.mean()),
                f"{approx_name} sd": a_sd,
                "z": (float(a.mean()) - float(r.mean())) / max(r_sd, 1e-300),
                "sd ratio": a_sd / max(r_sd, 1e-300),
            }
        )
    table = pd.DataFrame(rows, index=list(ref))
    table.attrs["mean |z|"] = float(np.abs(table["z"]).mean())
    table.attrs["median sd ratio"] = float(table["sd ratio"].median())
    return table
