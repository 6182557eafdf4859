"""The ranking plot: candidates in posterior order with their 90% credible intervals, as an
inline SVG (drawn on the server; no script, no image file). Every label is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

if TYPE_CHECKING:  # no torch at import: the pages are served before the model loads
    from probrank.serve.ranking import Ranking

__all__ = ["ranking_svg"]

_ROW = 22
_CHAR = 7.2  # px per character of a 12px label (a generous average)
_LABEL_CHARS = 44
_PLOT = 460
_RIGHT = 70
_TOP = 30
_BOTTOM = 34


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def ranking_svg(ranking: Ranking, candidate_ids: Sequence[str]) -> Markup:
    """An SVG of ``ranking``: one row per candidate, best first; a line for the 90% credible
    interval of its utility, a dot at the posterior mean, its probability of being the best
    on the right.

    Args:
        ranking: The ranking (lists indexed by candidate).
        candidate_ids: The candidates' ids, by index (labels; escaped).

    Returns:
        The SVG element as safe markup.
    """
    low = min(ranking.lower)
    high = max(ranking.upper)
    if high - low < 1e-9:
        low, high = low - 1.0, high + 1.0
    pad = 0.04 * (high - low)
    low, high = low - pad, high + pad
    labels = []
    for row, index in enumerate(ranking.order):
        text = f"{row + 1}. {candidate_ids[index]}"
        labels.append(text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…")
    label_width = int(_CHAR * max(len(text) for text in labels)) + 16
    width = label_width + _PLOT + _RIGHT
    height = _TOP + _ROW * len(ranking.order) + _BOTTOM

    def x(value: float) -> float:
        return label_width + (value - low) / (high - low) * _PLOT

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ranking-plot" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="candidates by posterior mean utility with 90% credible intervals">',
        f'<text x="{label_width}" y="16" class="axis-title">posterior utility: mean and 90% '
        f'credible interval</text><text x="{width - 4}" y="16" text-anchor="end" '
        'class="axis-title">P(best)</text>',
    ]
    bottom = _TOP + _ROW * len(ranking.order)
    for tick in _ticks(low, high):
        tx = x(tick)
        parts.append(
            f'<line x1="{tx:.1f}" y1="{_TOP - 4}" x2="{tx:.1f}" y2="{bottom}" class="grid"/>'
            f'<text x="{tx:.1f}" y="{bottom + 16}" text-anchor="middle" class="tick">'
            f"{tick:.2f}</text>"
        )
    for row, index in enumerate(ranking.order):
        cy = _TOP + _ROW * row + _ROW / 2
        label = escape(labels[row])
        lo, hi, mean = ranking.lower[index], ranking.upper[index], ranking.mean[index]
        parts.append(
            f'<g class="row" data-candidate="{index}">'
            f'<text x="{label_width - 8}" y="{cy + 4:.1f}" text-anchor="end" class="label">'
            f"{label}</text>"
            f'<line x1="{x(lo):.1f}" y1="{cy:.1f}" x2="{x(hi):.1f}" y2="{cy:.1f}" '
            'class="interval"/>'
            f'<circle cx="{x(mean):.1f}" cy="{cy:.1f}" r="4" class="mean"/>'
            f'<text x="{width - 4}" y="{cy + 4:.1f}" text-anchor="end" class="best">'
            f"{ranking.best[index]:.2f}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
