"""Posterior summaries: ArviZ's own table (:func:`arviz.summary`), plus the sample sizes and
divergences in ``table.attrs``.

:func:`summary` delegates to :func:`arviz.summary` with the same arguments and defaults, so a
user moving between probrank and ArviZ gets the same table, column for column and value for
value: ``mean``, ``sd``, ``hdi_3%``/``hdi_97%`` (the mass is ArviZ's
``rcParams["stats.hdi_prob"]`` default, 0.94, unless ``hdi_prob`` is given; the HDI is
:func:`arviz.hdi`'s), ``mcse_mean``, ``mcse_sd``, ``ess_bulk``, ``ess_tail`` and ``r_hat``
(rank-normalised split-R-hat and bulk/tail ESS of Vehtari et al. 2021; R-hat is NaN with one
chain). Values are rounded as ArviZ rounds them unless ``round_to="none"``; convergence
checks use the unrounded values.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import arviz as az
import numpy as np
import pandas as pd

from probrank.diagnostics._data import get_group, has_group
from probrank.exceptions import InputDataError

__all__ = ["divergences", "hdi", "summary"]


def hdi(draws: np.ndarray, prob: float | None = None) -> tuple[float, float]:
    """Highest-density interval of one-dimensional draws, by :func:`arviz.hdi`.

    Args:
        draws: `n` draws.
        prob: Interval mass in ``(0, 1)``; default ArviZ's (``rcParams["stats.hdi_prob"]``).

    Returns:
        ``(low, high)``.
    """
    values = np.asarray(draws, dtype=np.float64).ravel()
    if values.size == 0:
        raise InputDataError("no draws for an HDI")
    if prob is not None and not 0 < prob < 1:
        raise InputDataError(f"hdi_prob must be in (0, 1), got {prob}")
    low, high = az.hdi(values, hdi_prob=prob)
    return float(low), float(high)


def divergences(data: Any) -> int | None:
    """Divergent transitions in ``sample_stats.diverging`` (None when not recorded)."""
    if not has_group(data, "sample_stats"):
        return None
    stats = get_group(data, "sample_stats")
    if "diverging" not in stats.data_vars:
        return None
    return int(np.asarray(stats["diverging"].values).sum())


class _QuietShapeCheck(logging.Filter):
    """Drops ArviZ's "Shape validation failed" log line for one-chain draws (SVI, Laplace),
    where R-hat is NaN by definition and the table says so."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Shape validation failed" not in record.getMessage()


def summary(
    data: Any,
    *,
    var_names: Sequence[str] | None = None,
    group: str = "posterior",
    hdi_prob: float | None = None,
    kind: str = "all",
    round_to: int | str | None = None,
    **options: Any,
) -> pd.DataFrame:
    """ArviZ's summary table of ``data`` (:func:`arviz.summary`, same defaults).

    Args:
        data: ArviZ data (e.g. from :func:`~probrank.diagnostics.to_inference_data`).
        var_names: Variables to summarise (default: all).
        group: The sampled group to summarise.
        hdi_prob: Mass of the highest-density interval; default ArviZ's
            (``rcParams["stats.hdi_prob"]``, 0.94: columns ``hdi_3%`` and ``hdi_97%``).
        kind: ``"all"``, ``"stats"`` (mean, sd, HDI) or ``"diagnostics"`` (MCSE, ESS, R-hat).
        round_to: As ArviZ: None rounds as ArviZ does, an int to that many decimals,
            ``"none"`` not at all.
        **options: Further :func:`arviz.summary` keywords (``coords``, ``stat_focus``, ...).

    Returns:
        One row per scalar parameter (``name[i, j]``) with ArviZ's columns: ``mean``, ``sd``,
        ``hdi_3%``, ``hdi_97%``, ``mcse_mean``, ``mcse_sd``, ``ess_bulk``, ``ess_tail``,
        ``r_hat`` (NaN with one chain). ``table.attrs["chains"]`` and ``table.attrs["draws"]``
        hold the sample sizes and ``table.attrs["divergences"]`` the divergent transitions
        when the data records them (NUTS).

    Raises:
        InputDataError: ``hdi_prob`` out of range, no such group or variable.
    """
    if hdi_prob is not None and not 0 < hdi_prob < 1:
        raise InputDataError(f"hdi_prob must be in (0, 1), got {hdi_prob}")
    dataset = get_group(data, group)
    names = list(var_names) if var_names else None
    missing = [n for n in names or [] if n not in dataset.data_vars]
    if missing:
        raise InputDataError(f"no variable(s) {missing} in the ArviZ data's {group!r} group")
    quiet = _QuietShapeCheck()
    logger: logging.Logger = getattr(az, "_log", None) or logging.getLogger("arviz")
    logger.addFilter(quiet)
    try:
        table = az.summary(
            data,
            var_names=names,
            group=group,
            hdi_prob=hdi_prob,
            kind=kind,  # type: ignore[arg-type]
            round_to=round_to,
            **options,
        )
    finally:
        logger.removeFilter(quiet)
    if not isinstance(table, pd.DataFrame):
        raise InputDataError("summary returns a table: for fmt='xarray' call arviz.summary")
    table.attrs["chains"] = int(dataset.sizes["chain"])
    table.attrs["draws"] = int(dataset.sizes["draw"])
    count = divergences(data)
    if count is not None:
        table.attrs["divergences"] = count
    return table
