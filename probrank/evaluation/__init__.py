"""Evaluation: trec_eval-exact measures, significance tests, calibration, tensor metrics."""

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
from probrank.evaluation.measures import (
    DEFAULT_MEASURES,
    Evaluator,
    evaluate,
    evaluate_per_query,
    parse_measures,
)
from probrank.evaluation.significance import Correction, SignificanceTest, compare, paired_test
from probrank.evaluation.tensor_metrics import (
    average_precision,
    evaluate_batch,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    recall_n_at_k,
    reciprocal_rank,
)

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
