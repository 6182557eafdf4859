"""The report of ``probrank eval --compare --bayesian --json``: the frequentist table, the
Bayesian comparison and the sampler's convergence check, as one strict-JSON object.

Built here, not in the command line, so that a notebook gets the same object
(:func:`comparison_report`) as the command prints. The sampler's undefined statistics (an R-hat
or an ESS of NaN, as one draw per chain gives) are None; the command prints the object through
:func:`probrank.cli._parsing.strict_json`, which turns any other NaN into ``null`` too.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["comparison_report", "strict_number"]


def strict_number(value: float | int | None) -> float | int | None:
    """``value`` as JSON allows it: None for NaN and the infinities."""
    if value is None or isinstance(value, int):
        return value
    return value if math.isfinite(value) else None


def comparison_report(table: Any, result: Any) -> dict[str, Any]:
    """The JSON object of ``eval --compare --bayesian --json``.

    Args:
        table: The frequentist comparison (:func:`probrank.evaluation.significance.compare`),
            a DataFrame with one row per (measure, run).
        result: The Bayesian comparison (:func:`probrank.evaluation.bayesian.bayesian_compare`).

    Returns:
        ``{"frequentist": [...], "bayesian": [...], "bayesian_ranking": ...,
        "bayesian_model": {...}}``, with ``null`` where a statistic is undefined.
    """
    chains, draws = result.draws.shape[:2]
    check = result.convergence
    model = {
        "likelihood": result.likelihood.value,
        "method": result.method,
        "topics": result.num_topics,
        "rope": result.rope,
        "interval": result.interval,
        "chains": chains,
        "draws": draws,
        "converged": check.converged,
        "max_rhat": strict_number(check.max_rhat),
        "min_ess": strict_number(check.min_ess),
        "divergences": check.divergences,
        "messages": check.messages,
    }
    report = {
        "frequentist": json.loads(table.to_json(orient="records")),
        "bayesian": result.to_json(),
        "bayesian_ranking": result.ranking_json(),
        "bayesian_model": model,
    }
    return report
