"""Evaluation: trec_eval-exact measures, significance tests, calibration, tensor metrics.

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
    evaluate,
    evaluate_per_query,
    parse_measures,
)

if TYPE_CHECKING:
    from probrank.evaluation.calibration import (
        CalibrationKind,
        ReliabilityCurve,
        brier_score,
        expected_calibration_error,
        maximum_calibration_error,
        negative_log_likelihood,
        plot_reliability_diagram,
        reliability_curve,
    )
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
        [
            "CalibrationKind",
            "ReliabilityCurve",
            "brier_score",
            "expected_calibration_error",
            "maximum_calibration_error",
            "negative_log_likelihood",
            "plot_reliability_diagram",
            "reliability_curve",
        ],
        "probrank.evaluation.calibration",
    ),
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
    "CalibrationKind",
    "Correction",
    "Evaluator",
    "ReliabilityCurve",
    "SignificanceTest",
    "average_precision",
    "brier_score",
    "compare",
    "evaluate",
    "evaluate_batch",
    "evaluate_per_query",
    "expected_calibration_error",
    "maximum_calibration_error",
    "ndcg_at_k",
    "negative_log_likelihood",
    "paired_test",
    "parse_measures",
    "plot_reliability_diagram",
    "precision_at_k",
    "recall_at_k",
    "recall_n_at_k",
    "reciprocal_rank",
    "reliability_curve",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
