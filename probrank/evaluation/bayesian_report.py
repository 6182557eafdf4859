"""The report of ``probrank eval --compare --bayesian --json``: the frequentist table, the
Bayesian comparison and the sampler's convergence check, as one strict-JSON object.

Built here, not in the command line, so that a notebook gets the same object
(:func:`comparison_report`) as the command prints. The sampler's undefined statistics (an R-hat
or an ESS of NaN, as one draw per chain gives) are None
(:meth:`~probrank.evaluation.bayesian_convergence.Convergence.as_json`); the command prints
the object through :func:`probrank.cli._parsing.strict_json`, which turns any other NaN into
``null`` too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["comparison_report"]


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
        **check.as_json(),  # converged, max_rhat, min_ess, divergences, messages
    }
    report = {
        "frequentist": json.loads(table.to_json(orient="records")),
        "bayesian": result.to_json(),
        "bayesian_ranking": result.ranking_json(),
        "bayesian_model": model,
    }
    return report
