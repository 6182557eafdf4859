"""Figures for the demo report: grouped bar charts, saved atomically as PNG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from probrank._files import new_figure, save_figure

__all__ = ["bar_chart", "save_figure"]  # save_figure: from probrank._files


def bar_chart(
    rows: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    title: str,
    path: Path,
    errors: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """A grouped bar chart: one group per measure, one bar per row (method or run).

    Args:
        rows: ``{row name: {measure: value}}``.
        measures: Measures to draw, in order.
        title: Figure title.
        path: Where the PNG goes.
        errors: Optional ``{row name: {measure: error bar half-width}}``.

    Returns:
        ``path``.
    """
    import numpy as np

    names = list(rows)
    width = 0.8 / max(len(names), 1)
    figure, ax = new_figure(figsize=(1.2 + 1.1 * len(measures) + 0.2 * len(names), 3.6))
    positions = np.arange(len(measures))
    for i, name in enumerate(names):
        values = [rows[name].get(m, float("nan")) for m in measures]
        spread = [errors[name].get(m, 0.0) for m in measures] if errors else None
        ax.bar(
            positions + (i - (len(names) - 1) / 2) * width,
            values,
            width,
            label=name,
            yerr=spread,
            capsize=2 if spread else 0,
        )
    ax.set_xticks(positions, list(measures))
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(
        fontsize=8,
        ncols=min(len(names), 4),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        frameon=False,
    )
    return save_figure(figure, path)
