"""The plot of a Bayesian comparison: posterior densities of each run's difference from the
baseline, one panel per measure, with the region of practical equivalence shaded.

matplotlib is imported when a plot is drawn; figures are made without pyplot and written
atomically (:func:`probrank._files.new_figure`, :func:`probrank._files.save_figure`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probrank._files import check_output_path, new_figure, save_figure

if TYPE_CHECKING:
    from probrank.evaluation.bayesian import BayesianComparison

__all__ = ["plot_posterior_differences"]


def plot_posterior_differences(
    result: BayesianComparison,
    path: str | os.PathLike[str] | None = None,
    *,
    bins: int = 40,
) -> Any:
    """Histograms (as densities) of the posterior differences ``run - baseline``.

    Args:
        result: A fitted :class:`~probrank.evaluation.bayesian.BayesianComparison`.
        path: Write the figure there as PNG (atomically; the folder must exist) and return
            the path; None returns the figure.
        bins: Histogram bins per run.

    Returns:
        The ``Path`` written, or the ``matplotlib.figure.Figure``.

    Raises:
        InputDataError: ``path``'s folder is missing (checked before drawing).
    """
    if path is not None:
        check_output_path(path)
    count = len(result.measures)
    columns = min(count, 3)
    rows = -(-count // columns)
    figure, axes = new_figure(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    baseline = result.systems[0]
    for index, measure in enumerate(result.measures):
        ax = axes[index // columns][index % columns]
        values = result.expected(measure)
        ax.axvspan(-result.rope, result.rope, color="0.85", label=f"ROPE ±{result.rope:g}")
        ax.axvline(0.0, color="0.3", linewidth=0.8)
        for b, system in enumerate(result.systems[1:], start=1):
            diff = values[:, b] - values[:, 0]
            summary = result.pair(measure, system)
            ax.hist(
                diff,
                bins=bins,
                density=True,
                histtype="step",
                linewidth=1.4,
                label=f"{system}: P(B>A) {summary.p_better:.3f}",
            )
            ax.axvline(summary.mean_difference, linestyle="--", linewidth=0.8, color="0.5")
        ax.set_title(measure)
        ax.set_xlabel(f"posterior difference from {baseline}")
        ax.set_ylabel("density")
        ax.legend(fontsize=7, loc="upper left")
    for index in range(count, rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    figure.suptitle(
        f"Posterior differences, {result.num_topics} topics ({result.likelihood.value} model)",
        y=1.02,
    )
    if path is None:
        return figure
    return save_figure(figure, Path(path))
