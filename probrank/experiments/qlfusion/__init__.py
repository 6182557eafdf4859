"""QLFusion experiments: the cross-validation protocol, its variants, diagnostics and a demo.

* :mod:`~probrank.experiments.qlfusion.data`: folds and per-(fold, run) member tensors;
* :mod:`~probrank.experiments.qlfusion.variants`: the quantifier variants and their
  cross-validated predictions;
* :mod:`~probrank.experiments.qlfusion.protocol`: ``run`` (the ``qlfusion_cv`` protocol of
  ``probrank experiment``) and ``time_proposed`` (for the benchmark);
* :mod:`~probrank.experiments.qlfusion.diagnostics`: SVI vs NUTS, reference weights;
* :mod:`~probrank.experiments.qlfusion.demo`: ``qlfusion_demo``.
"""

from probrank.experiments.qlfusion.data import (
    CVData,
    load_runs,
    load_selected,
    make_folds,
    prepare_cv,
    weights_from_predictions,
)
from probrank.experiments.qlfusion.demo import qlfusion_demo
from probrank.experiments.qlfusion.diagnostics import (
    reference_weights,
    svi_vs_nuts,
    validation_scores,
    within_topic_signal,
)
from probrank.experiments.qlfusion.protocol import (
    DEFAULT_MEASURES,
    TABLE_1,
    num_threads,
    run,
    time_proposed,
)
from probrank.experiments.qlfusion.variants import (
    VARIANTS,
    QuantifierSettings,
    cross_validated_predictions,
    cross_validated_weights,
)

__all__ = [
    "DEFAULT_MEASURES",
    "TABLE_1",
    "VARIANTS",
    "CVData",
    "QuantifierSettings",
    "cross_validated_predictions",
    "cross_validated_weights",
    "load_runs",
    "load_selected",
    "make_folds",
    "num_threads",
    "prepare_cv",
    "qlfusion_demo",
    "reference_weights",
    "run",
    "svi_vs_nuts",
    "time_proposed",
    "validation_scores",
    "weights_from_predictions",
    "within_topic_signal",
]
