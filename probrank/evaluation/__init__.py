"""Evaluation: trec_eval-exact measures, significance tests, Bayesian comparison of runs,
calibration (metrics and plots), tensor metrics, and choosing the runs to fuse by a measure.

The trec_eval measures (:mod:`probrank.evaluation.measures`) import neither torch nor pandas;
calibration, significance tests and tensor metrics are imported on first use, so that
``probrank eval`` starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from probrank.evaluation.measures import (
    DEFAULT_MEASURES,
    Evaluator,
    RunValues,
    evaluate,
    evaluate_many,
    evaluate_per_query,
    parse_measures,
)

if TYPE_CHECKING:
    from probrank.evaluation.bayesian import (
        BayesianComparison,
        bayesian_compare,
        bayesian_compare_scores,
    )
    from probrank.evaluation.bayesian_model import ComparisonPriors
    from probrank.evaluation.bayesian_plots import plot_posterior_differences
    from probrank.evaluation.calibration import (
        CalibrationKind,
        ReliabilityCurve,
        brier_score,
        expected_calibration_error,
        maximum_calibration_error,
        negative_log_likelihood,
        reliability_curve,
    )
    from probrank.evaluation.calibration_plots import (
        plot_reliability,
        plot_reliability_diagram,
        reliability_figure,
    )
    from probrank.evaluation.ranking_calibration import (
        expected_ranking_calibration_error,
        gaussian_order_probabilities,
        order_probabilities_from_draws,
    )
    from probrank.evaluation.selection import top_runs
    from probrank.evaluation.significance import (
        Correction,
        SignificanceTest,
        compare,
        paired_test,
    )
    from probrank.evaluation.tensor_metrics import (
        average_precision,
        evaluate_batch,
        ndcg_at_k,
        precision_at_k,
        recall_at_k,
        recall_n_at_k,
        reciprocal_rank,
    )

_LAZY = {
    **dict.fromkeys(
        ["BayesianComparison", "bayesian_compare", "bayesian_compare_scores"],
        "probrank.evaluation.bayesian",
    ),
    "ComparisonPriors": "probrank.evaluation.bayesian_model",
    "plot_posterior_differences": "probrank.evaluation.bayesian_plots",
    **dict.fromkeys(
        [
            "CalibrationKind",
            "ReliabilityCurve",
            "brier_score",
            "expected_calibration_error",
            "maximum_calibration_error",
            "negative_log_likelihood",
            "reliability_curve",
        ],
        "probrank.evaluation.calibration",
    ),
    **dict.fromkeys(
        ["plot_reliability", "plot_reliability_diagram", "reliability_figure"],
        "probrank.evaluation.calibration_plots",
    ),
    **dict.fromkeys(
        [
            "expected_ranking_calibration_error",
            "gaussian_order_probabilities",
            "order_probabilities_from_draws",
        ],
        "probrank.evaluation.ranking_calibration",
    ),
    "top_runs": "probrank.evaluation.selection",
    **dict.fromkeys(
        ["Correction", "SignificanceTest", "compare", "paired_test"],
        "probrank.evaluation.significance",
    ),
    **dict.fromkeys(
        [
            "average_precision",
            "evaluate_batch",
            "ndcg_at_k",
            "precision_at_k",
            "recall_at_k",
            "recall_n_at_k",
            "reciprocal_rank",
        ],
        "probrank.evaluation.tensor_metrics",
    ),
}

__all__ = [
    "DEFAULT_MEASURES",
    "BayesianComparison",
    "CalibrationKind",
    "ComparisonPriors",
    "Correction",
    "Evaluator",
    "ReliabilityCurve",
    "RunValues",
    "SignificanceTest",
    "average_precision",
    "bayesian_compare",
    "bayesian_compare_scores",
    "brier_score",
    "compare",
    "evaluate",
    "evaluate_batch",
    "evaluate_many",
    "evaluate_per_query",
    "expected_calibration_error",
    "expected_ranking_calibration_error",
    "gaussian_order_probabilities",
    "maximum_calibration_error",
    "ndcg_at_k",
    "negative_log_likelihood",
    "order_probabilities_from_draws",
    "paired_test",
    "parse_measures",
    "plot_posterior_differences",
    "plot_reliability",
    "plot_reliability_diagram",
    "precision_at_k",
    "recall_at_k",
    "recall_n_at_k",
    "reciprocal_rank",
    "reliability_curve",
    "reliability_figure",
    "top_runs",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
