"""Posterior summaries: the installed ArviZ's own table (``arviz.summary``), plus the sample
sizes and divergences in ``table.attrs``.

:func:`~probrank.diagnostics.summary` delegates to ``arviz.summary`` of the installed line with the
same arguments and defaults, so a user moving between probrank and ArviZ gets the same table,
column for column and value for value:

* ArviZ 0.x (Python 3.11): ``mean``, ``sd``, ``hdi_3%``/``hdi_97%`` (HDI of mass
  ``rcParams["stats.hdi_prob"]``, 0.94), ``mcse_mean``, ``mcse_sd``, ``ess_bulk``,
  ``ess_tail``, ``r_hat``, rounded to 2 decimals;
* ArviZ 1.x (Python 3.12+): ``mean``, ``sd``, ``eti89_lb``/``eti89_ub`` (equal-tailed
  interval of mass ``rcParams["stats.ci_prob"]``, 0.89, kind ``rcParams["stats.ci_kind"]``),
  ``ess_bulk``, ``ess_tail``, ``r_hat``, ``mcse_mean``, ``mcse_sd``, rounded ``"auto"`` (by
  MCSE).

Both compute rank-normalised split-R-hat and bulk/tail ESS (Vehtari et al. 2021; R-hat is NaN
with one chain). ``round_to="none"`` gives the raw numbers; convergence checks use those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from probrank import _arviz
from probrank._arviz import get_group, has_group
from probrank.exceptions import InputDataError

__all__ = ["divergences", "eti", "hdi", "summary"]


def _values(draws: np.ndarray) -> np.ndarray:
    values = np.asarray(draws, dtype=np.float64).ravel()
    if values.size == 0:
        raise InputDataError("no draws for an interval")
    return values


def hdi(draws: np.ndarray, prob: float | None = None) -> tuple[float, float]:
    """Highest-density interval of one-dimensional draws, by the installed ``arviz.hdi``.

    Args:
        draws: `n` draws.
        prob: Interval mass in ``(0, 1)``; default the installed ArviZ's
            (``rcParams["stats.hdi_prob"]`` = 0.94 on 0.x, ``rcParams["stats.ci_prob"]`` =
            0.89 on 1.x).

    Returns:
        ``(low, high)``.
    """
    low, high = _arviz.hdi(_values(draws), prob)
    return float(low), float(high)


def eti(draws: np.ndarray, prob: float | None = None) -> tuple[float, float]:
    """Equal-tailed interval of one-dimensional draws (``arviz.eti`` on 1.x, the same
    quantiles on 0.x, which has no ``eti``).

    Args:
        draws: `n` draws.
        prob: Interval mass in ``(0, 1)``; default the installed ArviZ's.

    Returns:
        ``(low, high)``: the ``(1 - prob) / 2`` and ``(1 + prob) / 2`` quantiles.
    """
    low, high = _arviz.eti(_values(draws), prob)
    return float(low), float(high)


def divergences(data: Any) -> int | None:
    """Divergent transitions in ``sample_stats.diverging`` (None when not recorded)."""
    if not has_group(data, "sample_stats"):
        return None
    stats = get_group(data, "sample_stats")
    if "diverging" not in stats.data_vars:
        return None
    return int(np.asarray(stats["diverging"].values).sum())


def summary(
    data: Any,
    *,
    var_names: Sequence[str] | None = None,
    group: str = "posterior",
    ci_prob: float | None = None,
    ci_kind: str | None = None,
    hdi_prob: float | None = None,
    kind: str = "all",
    round_to: int | str | None = None,
    **options: Any,
) -> pd.DataFrame:
    """The installed ArviZ's summary table of ``data`` (``arviz.summary``, same defaults).

    Args:
        data: ArviZ data (e.g. from :func:`~probrank.diagnostics.to_inference_data`).
        var_names: Variables to summarise (default: all).
        group: The sampled group to summarise.
        ci_prob: Mass of the credible interval (ArviZ 1.x's keyword); default the installed
            ArviZ's (0.94 on 0.x, 0.89 on 1.x).
        ci_kind: ``"hdi"`` or ``"eti"`` (1.x; default ``rcParams["stats.ci_kind"]``, ``"eti"``);
            ArviZ 0.x has HDIs only.
        hdi_prob: ArviZ 0.x's keyword: an HDI of this mass on either line (the same as
            ``ci_prob=hdi_prob, ci_kind="hdi"``).
        kind: ``"all"``, ``"stats"`` (mean, sd, interval) or ``"diagnostics"`` (MCSE, ESS,
            R-hat); 1.x has more (``"all_median"``, ...).
        round_to: None rounds as the installed ArviZ does by default, an int to that many
            decimals, ``"none"`` not at all.
        **options: Further ``arviz.summary`` keywords (``coords``, ``filter_vars``, ...).

    Returns:
        One row per scalar parameter (``name[i, j]``) with the installed ArviZ's columns (see
        the module docstring; ``r_hat`` is NaN with one chain). ``table.attrs["chains"]`` and
        ``table.attrs["draws"]`` hold the sample sizes and ``table.attrs["divergences"]`` the
        divergent transitions when the data records them (NUTS).

    Raises:
        InputDataError: an interval mass out of range, both ``ci_prob`` and ``hdi_prob``, an
            interval kind the installed ArviZ lacks, no such group or variable.
    """
    if hdi_prob is not None:
        if ci_prob is not None or ci_kind not in (None, "hdi"):
            raise InputDataError("pass hdi_prob (0.x) or ci_prob/ci_kind (1.x), not both")
        ci_prob, ci_kind = hdi_prob, "hdi"
    dataset = get_group(data, group)
    names = list(var_names) if var_names else None
    missing = [n for n in names or [] if n not in dataset.data_vars]
    if missing:
        raise InputDataError(f"no variable(s) {missing} in the ArviZ data's {group!r} group")
    table = _arviz.summary(
        data,
        var_names=names,
        group=group,
        ci_prob=ci_prob,
        ci_kind=ci_kind,
        kind=kind,
        round_to=round_to,
        **options,
    )
    if not isinstance(table, pd.DataFrame):
        raise InputDataError("summary returns a table: for fmt='xarray' call arviz.summary")
    table.attrs["chains"] = int(dataset.sizes["chain"])
    table.attrs["draws"] = int(dataset.sizes["draw"])
    count = divergences(data)
    if count is not None:
        table.attrs["divergences"] = count
    return table
