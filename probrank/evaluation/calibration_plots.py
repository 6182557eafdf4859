"""Calibration plots, in one place: reliability diagrams of curves, of probabilities, and grids.

* :func:`plot_reliability_diagram` draws :class:`~probrank.evaluation.ReliabilityCurve`
  objects (the one drawing routine; everything below calls it);
* :func:`plot_reliability` draws several models' P(relevant) on the same labels
  (also :func:`probrank.diagnostics.plot_reliability`);
* :func:`reliability_figure` lays out a grid of such panels (the model cards' PNGs).

matplotlib is imported when a plot is drawn, never at import; a new figure from
:func:`plot_reliability_diagram` or :func:`plot_reliability` comes from pyplot (the user's
backend is left alone), a :func:`reliability_figure` is detached from pyplot
(:func:`probrank._files.new_figure`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probrank.evaluation.calibration import ReliabilityCurve, reliability_curve

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_reliability", "plot_reliability_diagram", "reliability_figure"]


def _new_axes(size: tuple[float, float]) -> Axes:
    import matplotlib.pyplot as plt  # the user's backend is left alone

    _, ax = plt.subplots(figsize=size)
    return ax


def plot_reliability_diagram(
    curves: dict[str, ReliabilityCurve] | ReliabilityCurve,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Draw reliability diagrams: accuracy per bin against mean confidence, the diagonal for
    perfect calibration, and the ECE of each curve in the legend.

    Args:
        curves: One curve or ``{label: curve}``.
        ax: Axes to draw on; default: a new figure.
        title: Axes title.

    Returns:
        The axes.
    """
    if ax is None:
        ax = _new_axes((4.5, 4.5))
    if isinstance(curves, ReliabilityCurve):
        curves = {"model": curves}
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect")
    for label, curve in curves.items():
        filled = curve.counts > 0
        ece = float((curve.counts[filled] * curve.gaps[filled]).sum() / curve.counts.sum())
        ax.plot(
            curve.confidence[filled],
            curve.accuracy[filled],
            marker="o",
            label=f"{label} (ECE {ece:.3f})",
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_reliability(
    probs: Mapping[str, Any],
    labels: Any,
    *,
    n_bins: int = 10,
    ax: Axes | None = None,
    title: str | None = None,
    xlabel: str = "predicted P(relevant)",
    ylabel: str = "fraction relevant",
) -> Axes:
    """Reliability diagrams of several models' P(relevant) on the same labels.

    Args:
        probs: ``{model: n probabilities}`` (tensors or arrays).
        labels: `n` 0/1 labels.
        n_bins: Equal-width bins.
        ax: Axes to draw on; default: a new figure.
        title: Axes title.
        xlabel: Label of the x axis.
        ylabel: Label of the y axis.

    Returns:
        The axes (drawn by :func:`plot_reliability_diagram`).
    """
    curves = {
        name: reliability_curve(p, labels, n_bins=n_bins, kind="positive")
        for name, p in probs.items()
    }
    ax = ax if ax is not None else _new_axes((4.5, 4.5))
    plot_reliability_diagram(curves, ax=ax, title=title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


def reliability_figure(
    panels: Mapping[str, tuple[Mapping[str, Any], Any]], ncols: int = 2
) -> Figure:
    """A grid of reliability diagrams of P(relevant), one panel per entry.

    Args:
        panels: ``{title: ({row: n probabilities}, n 0/1 labels)}``, laid out row by row.
        ncols: Panels per row of the grid.

    Returns:
        The matplotlib figure, detached from pyplot (:func:`probrank._files.new_figure`).
    """
    from probrank._files import new_figure

    ncols = max(1, min(ncols, len(panels)))
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(4.8 * ncols, 4.8 * nrows), squeeze=False)
    for ax, (title, (rows, labels)) in zip(axes.flat, panels.items(), strict=False):
        plot_reliability(rows, _long(labels), ax=ax, title=title)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def _long(labels: Any) -> Any:
    """Integer labels (a float tensor of 0/1 becomes ``long``; arrays are cast to int)."""
    if hasattr(labels, "long"):
        return labels.long()
    import numpy as np

    return np.asarray(labels).astype(int)
