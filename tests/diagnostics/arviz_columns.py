"""The installed ArviZ line's summary columns, for tests that check a table's layout."""

from __future__ import annotations

from probrank._arviz import ARVIZ_1, interval_column_names

DIAGNOSTICS = (
    ["ess_bulk", "ess_tail", "r_hat", "mcse_mean", "mcse_sd"]
    if ARVIZ_1
    else ["mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"]
)
"""``kind="diagnostics"`` columns in the installed line's order."""


def summary_columns(prob: float | None = None, kind: str | None = None) -> list[str]:
    """``arviz.summary``'s columns (``kind="all"``) for an interval of ``prob``/``kind``."""
    return ["mean", "sd", *interval_column_names(prob, kind), *DIAGNOSTICS]
