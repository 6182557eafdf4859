"""Diagnostic plots with matplotlib: traces, forest (posterior summary), PPC, SVI vs NUTS,
and a one-call PNG of a posterior summary; :func:`plot_reliability` is the calibration plot of
:mod:`probrank.evaluation.calibration_plots`, exported here too.

Every ``plot_*`` function draws on the axes it is given (or a new figure) and returns them;
:func:`save_posterior_summary` writes a PNG atomically (temporary file + rename). matplotlib
is imported when a plot is drawn, never at import.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from probrank._arviz import get_group, interval_columns, pit_ecdf_figure
from probrank._files import save_figure
from probrank.diagnostics._data import flat_parameters
from probrank.diagnostics.ppc import PPCResult
from probrank.diagnostics.sbc import SBCResult
from probrank.diagnostics.summary import summary
from probrank.evaluation.calibration_plots import plot_reliability
from probrank.exceptions import InputDataError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "plot_forest",
    "plot_posterior_comparison",
    "plot_ppc",
    "plot_reliability",
    "plot_trace",
    "save_posterior_summary",
]


def _pyplot() -> Any:
    # The user's backend is left alone (a notebook's inline or widget backend keeps working);
    # without a display matplotlib itself falls back to Agg.
    import matplotlib.pyplot as plt

    return plt


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _, new = _pyplot().subplots(figsize=size)
    return new


def plot_trace(data: Any, *, var_names: Sequence[str] | None = None, max_params: int = 6) -> Figure:
    """Trace plots: per parameter, the draws of each chain (right) and their histograms (left).

    Args:
        data: ArviZ data with a posterior group.
        var_names: Variables to draw (default: all); the first ``max_params`` scalar
            parameters are shown.
        max_params: Rows at most.

    Returns:
        The figure.
    """
    params = list(flat_parameters(get_group(data, "posterior"), var_names).items())[:max_params]
    if not params:
        raise InputDataError("no parameters to plot")
    plt = _pyplot()
    fig, axes = plt.subplots(len(params), 2, figsize=(9, 1.8 * len(params)), squeeze=False)
    for row, (label, values) in enumerate(params):
        left, right = axes[row]
        for chain, series in enumerate(values):
            left.hist(series, bins=30, density=True, histtype="step", label=f"chain {chain}")
            right.plot(series, linewidth=0.6, alpha=0.8)
        left.set_ylabel(label, fontsize="small")
        left.set_yticks([])
        right.set_xlim(0, values.shape[1] - 1)
    axes[0, 0].set_title("posterior density by chain", fontsize="small")
    axes[0, 1].set_title("trace", fontsize="small")
    axes[-1, 1].set_xlabel("draw")
    fig.tight_layout()
    return fig


def plot_forest(
    data: Any,
    *,
    var_names: Sequence[str] | None = None,
    hdi_prob: float | None = None,
    max_params: int = 40,
    ax: Axes | None = None,
    table: pd.DataFrame | None = None,
) -> Axes:
    """Posterior means with credible intervals (the summary's), one row per scalar parameter
    (with R-hat if multi-chain).

    Args:
        data: ArviZ data.
        var_names: Variables to draw (default: all).
        hdi_prob: Draw HDIs of this mass (default: the installed ArviZ's summary interval,
            a 0.94 HDI on 0.x, a 0.89 ETI on 1.x).
        max_params: Rows at most (the first ones).
        ax: Axes to draw on.
        table: A precomputed :func:`~probrank.diagnostics.summary` table.

    Returns:
        The axes.
    """
    table = summary(data, hdi_prob=hdi_prob, var_names=var_names) if table is None else table
    table = table.iloc[:max_params]
    ax = _axes(ax, (6, 0.25 * len(table) + 1.2))
    rows = np.arange(len(table))[::-1]
    low, high = interval_columns(table)
    ax.hlines(rows, table[low], table[high], color="tab:blue", linewidth=1.5)
    ax.plot(table["mean"], rows, "o", color="tab:blue", markersize=4)
    labels = list(table.index)
    if "r_hat" in table.columns and bool(table["r_hat"].notna().any()):
        labels = [f"{k}  (R-hat {r:.2f})" for k, r in zip(table.index, table["r_hat"], strict=True)]
    ax.set_yticks(rows)
    ax.set_yticklabels(labels, fontsize="small")
    ax.axvline(0.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel(f"posterior mean and credible interval ({low} to {high})")
    return ax


def plot_ppc(result: PPCResult, *, ax: Axes | None = None) -> Axes:
    """A posterior predictive check: replicated against observed statistic.

    A ``theta``-free statistic is a histogram of ``T(y_rep)`` with ``T(y)`` as a line; a
    discrepancy is a scatter of ``T(y, theta)`` against ``T(y_rep, theta)`` with the diagonal
    (points mostly above it: the data are less extreme than the model predicts).

    Returns:
        The axes.
    """
    ax = _axes(ax, (4.5, 3.5))
    observed, replicated = result.observed, result.replicated
    if np.ptp(observed) == 0:
        ax.hist(replicated, bins=30, color="tab:blue", alpha=0.7, label="replicated")
        ax.axvline(float(observed[0]), color="black", linewidth=2, label="observed")
        ax.set_xlabel(result.statistic)
    else:
        ax.scatter(observed, replicated, s=6, alpha=0.5)
        low = float(min(observed.min(), replicated.min()))
        high = float(max(observed.max(), replicated.max()))
        ax.plot([low, high], [low, high], color="black", linewidth=1)
        ax.set_xlabel(f"{result.statistic}: observed data")
        ax.set_ylabel("replicated data")
    ax.set_title(f"PPC {result.statistic}: p = {result.p_value:.3f}", fontsize="medium")
    if np.ptp(observed) == 0:
        ax.legend(fontsize="small")
    return ax


def plot_posterior_comparison(
    table: pd.DataFrame, *, names: tuple[str, str] = ("NUTS", "SVI"), ax: Axes | None = None
) -> Axes:
    """Means of two posteriors against each other, with +-1 sd bars (from
    :func:`~probrank.diagnostics.compare_posteriors`).

    Returns:
        The axes.
    """
    ref, approx = names
    ax = _axes(ax, (4.5, 4.5))
    ax.errorbar(
        table[f"{ref} mean"],
        table[f"{approx} mean"],
        xerr=table[f"{ref} sd"],
        yerr=table[f"{approx} sd"],
        fmt="o",
        markersize=3,
        elinewidth=0.7,
        alpha=0.8,
    )
    values = np.concatenate([table[f"{ref} mean"].to_numpy(), table[f"{approx} mean"].to_numpy()])
    low, high = float(values.min()), float(values.max())
    ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel(f"{ref} posterior mean (+-1 sd)")
    ax.set_ylabel(f"{approx} posterior mean (+-1 sd)")
    ax.set_title(
        f"mean |z| {table.attrs.get('mean |z|', np.nan):.2f}, median sd ratio "
        f"{table.attrs.get('median sd ratio', np.nan):.2f}",
        fontsize="medium",
    )
    return ax


def save_posterior_summary(
    data: Any,
    path: str | os.PathLike[str],
    *,
    var_names: Sequence[str] | None = None,
    hdi_prob: float | None = None,
    max_params: int = 30,
    title: str | None = None,
    dpi: int = 100,
) -> Path:
    """Write a posterior-summary PNG: a forest plot of means and credible intervals (R-hat in
    the labels when there are several chains) and, for multi-chain draws, traces of the first
    four parameters.

    Args:
        data: ArviZ data (e.g. ``to_inference_data(fitted)``).
        path: The PNG to write (atomically; its folder must exist: a missing one is an
            ``InputDataError``, as for every file probrank writes).
        var_names: Variables to show (default: all).
        hdi_prob: Draw HDIs of this mass (default: the installed ArviZ's summary interval,
            a 0.94 HDI on 0.x, a 0.89 ETI on 1.x).
        max_params: Forest-plot rows at most.
        title: Figure title.
        dpi: Resolution.

    Returns:
        The path written.
    """
    plt = _pyplot()
    table = summary(data, hdi_prob=hdi_prob, var_names=var_names)
    shown = table.iloc[:max_params]
    chains = int(get_group(data, "posterior").sizes["chain"])
    traces = list(flat_parameters(get_group(data, "posterior"), var_names).items())[:4]
    height = 0.25 * len(shown) + 1.5
    if chains > 1:
        fig, axes = plt.subplots(1, 2, figsize=(11, max(height, 4.0)),
                                 gridspec_kw={"width_ratios": [3, 2]})  # fmt: skip
        plot_forest(data, hdi_prob=hdi_prob, ax=axes[0], table=shown)
        for number, (_, values) in enumerate(traces):
            for chain, series in enumerate(values):
                axes[1].plot(series, color=f"C{number}", linewidth=0.5, alpha=0.8,
                             linestyle="-" if chain % 2 == 0 else ":")  # fmt: skip
        axes[1].set_title("traces: " + ", ".join(k for k, _ in traces), fontsize="x-small")
        axes[1].set_xlabel("draw")
    else:
        fig, ax = plt.subplots(figsize=(7, height))
        plot_forest(data, hdi_prob=hdi_prob, ax=ax, table=shown)
    note = f"{chains} chain(s) x {table.attrs['draws']} draws"
    if "divergences" in table.attrs:
        note += f", {table.attrs['divergences']} divergences"
    fig.suptitle(f"{title}\n{note}" if title else note, fontsize="medium")
    fig.tight_layout()
    return save_figure(fig, path, dpi=dpi, tight=False)


def plot_sbc(
    result: SBCResult,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    prob: float = 0.95,
    seed: int = 0,
    dpi: int = 100,
) -> Path:
    """Write SBC's PIT-ECDF plots (one panel per parameter) as ArviZ draws them.

    The ranks become PIT values (:meth:`SBCResult.pit`); the installed ArviZ draws the
    difference between their empirical CDF and the uniform one: on ArviZ 1.x arviz-plots'
    ``plot_ecdf_pit`` (a simultaneous uniformity test; points outside its region are marked
    and each panel shows the test's p-value), on 0.x ``plot_ecdf`` with the simultaneous
    ``prob`` band. A calibrated posterior stays near zero. A posterior too narrow puts the
    truth at the ends of its draws: the difference rises above zero near 0 and falls below it
    near 1; too wide, the reverse (below, then above); a bias, one hump on one side.

    Args:
        result: An SBC result (:func:`~probrank.diagnostics.sbc.run_sbc`).
        path: The PNG to write (atomically; its folder must exist).
        title: Figure title.
        prob: The simultaneous band's mass (0.x) / ``1 -`` the test's level α (1.x).
        seed: Seeds the spread of ranks over their cells.
        dpi: Resolution.

    Returns:
        The path written.
    """
    pit = result.pit(seed)
    fig = pit_ecdf_figure({name: pit[:, j] for j, name in enumerate(result.names)}, prob=prob)
    if title:
        fig.suptitle(title, fontsize="medium", y=1.06)
    return save_figure(fig, path, dpi=dpi)
