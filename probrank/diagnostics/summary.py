"""Posterior summaries: means, sds, HDIs and, for several chains, R-hat, bulk/tail ESS.

The table is computed from the ArviZ data's arrays (means, sds, HDIs with NumPy; R-hat and
ESS with :func:`arviz.rhat` and :func:`arviz.ess`, rank-normalised split-R-hat and bulk/tail
ESS of Vehtari et al. 2021), so its column names do not depend on the ArviZ version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import arviz as az
import numpy as np
import pandas as pd

from probrank.diagnostics._data import flat_parameters, get_group, has_group
from probrank.exceptions import InputDataError

__all__ = ["divergences", "hdi", "summary"]


def hdi(draws: np.ndarray, prob: float = 0.9) -> tuple[float, float]:
    """Highest-density interval of one-dimensional draws: the narrowest interval holding
    ``ceil(prob * n)`` of the sorted draws.

    Args:
        draws: `n` draws.
        prob: Interval mass in ``(0, 1)``.

    Returns:
        ``(low, high)``.
    """
    values = np.sort(np.asarray(draws, dtype=np.float64).ravel())
    n = values.size
    if n == 0:
        raise InputDataError("no draws for an HDI")
    size = max(1, min(n, int(np.ceil(prob * n))))
    widths = values[size - 1 :] - values[: n - size + 1]
    start = int(np.argmin(widths))
    return float(values[start]), float(values[start + size - 1])


def divergences(data: Any) -> int | None:
    """Divergent transitions in ``sample_stats.diverging`` (None when not recorded)."""
    if not has_group(data, "sample_stats"):
        return None
    stats = get_group(data, "sample_stats")
    if "diverging" not in stats.data_vars:
        return None
    return int(np.asarray(stats["diverging"].values).sum())


def _diagnostic(dataset: Any, names: list[str], method: str) -> dict[str, np.ndarray]:
    """R-hat (``method="rank"``) or ESS (``"bulk"``/``"tail"``) per parameter label."""
    subset = dataset[names]
    if method == "rank":
        values = az.rhat(subset, method="rank")
    else:
        values = az.ess(subset, method=method)
    expanded = values.expand_dims(chain=[0], draw=[0])
    return {k: v.reshape(-1)[0] for k, v in flat_parameters(expanded, names).items()}


def summary(
    data: Any,
    *,
    hdi_prob: float = 0.9,
    var_names: Sequence[str] | None = None,
    group: str = "posterior",
    diagnostics: bool | None = None,
) -> pd.DataFrame:
    """Means, standard deviations, HDIs and, with two or more chains, R-hat and ESS.

    Args:
        data: ArviZ data (e.g. from :func:`~probrank.diagnostics.to_inference_data`).
        hdi_prob: Mass of the highest-density interval.
        var_names: Variables to summarise (default: all).
        group: The sampled group to summarise.
        diagnostics: Add ``ess_bulk``, ``ess_tail`` and ``r_hat`` (NaN for one chain);
            default: only with two or more chains.

    Returns:
        One row per scalar parameter (``name[i, j]``): ``mean``, ``sd``, ``hdi_low``,
        ``hdi_high`` and, when the draws have several chains (MCMC) or with
        ``diagnostics=True``, ``ess_bulk``, ``ess_tail``, ``r_hat``.
        ``table.attrs["divergences"]`` holds the number of divergent transitions when the
        data records them (NUTS), and ``table.attrs["chains"]``, ``table.attrs["draws"]``
        the sample sizes.
    """
    if not 0 < hdi_prob < 1:
        raise InputDataError(f"hdi_prob must be in (0, 1), got {hdi_prob}")
    dataset = get_group(data, group)
    names = list(var_names) if var_names else [str(v) for v in dataset.data_vars]
    params = flat_parameters(dataset, names)
    chains, draws = int(dataset.sizes["chain"]), int(dataset.sizes["draw"])
    rows: dict[str, dict[str, float]] = {}
    for label, values in params.items():
        low, high = hdi(values, hdi_prob)
        rows[label] = {
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
            "hdi_low": low,
            "hdi_high": high,
        }
    columns = ["mean", "sd", "hdi_low", "hdi_high"]
    if diagnostics or (diagnostics is None and chains > 1):
        columns += ["ess_bulk", "ess_tail", "r_hat"]
        for column, method in (("ess_bulk", "bulk"), ("ess_tail", "tail"), ("r_hat", "rank")):
            if method == "rank" and chains < 2:  # R-hat compares chains: undefined for one
                for row in rows.values():
                    row[column] = float("nan")
                continue
            for label, value in _diagnostic(dataset, names, method).items():
                rows[label][column] = float(value)
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    table.attrs["chains"], table.attrs["draws"] = chains, draws
    count = divergences(data)
    if count is not None:
        table.attrs["divergences"] = count
    return table
