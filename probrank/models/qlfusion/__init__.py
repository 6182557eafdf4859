"""QLFusion: a Bayesian quantifier of relevant documents per ranked list, and fusion by it.

* :mod:`~probrank.models.qlfusion.model`: :class:`QLFusion` (fit on runs and qrels, ``fuse``,
  ``proportions``, ``posterior``, ``save``/``load``) and :class:`QLFusionSettings`;
* :mod:`~probrank.models.qlfusion.network`: the network (:class:`QLFusionNet`), its inputs
  (:func:`list_features`, :func:`relevant_counts`) and vectorised training
  (:func:`train_quantifier`);
* :mod:`~probrank.models.qlfusion.plus_features`: the richer judgement-free inputs of the
  ``qlfusion_plus`` extension;
* :mod:`~probrank.models.qlfusion.variants`: the quantifier variants (the paper's Tables 1 and 2
  and the extensions), their training settings and their predictions for many members at once;
* :mod:`~probrank.models.qlfusion.cross_fit`: cross-fitted weights (every topic weighted by
  quantifiers that never saw its judgements), used by the ``qlfusion_cv`` protocol and
  ``probrank fuse``.
"""

from probrank.models.qlfusion.cross_fit import (
    CVData,
    cross_validated_group,
    cross_validated_predictions,
    cross_validated_weights,
    make_folds,
    merge_cross_validated,
    prepare_cv,
    weights_from_predictions,
)
from probrank.models.qlfusion.model import (
    ProportionPosterior,
    QLFusion,
    QLFusionSettings,
    WeightRule,
)
from probrank.models.qlfusion.network import (
    QLFusionNet,
    QuantifierLoss,
    RowGroups,
    TrainedQuantifier,
    list_features,
    relevant_counts,
    train_quantifier,
)
from probrank.models.qlfusion.plus_features import (
    OVERLAP_CUTS,
    plus_feature_names,
    plus_features,
    standardize,
)
from probrank.models.qlfusion.variants import (
    DEFAULT_SETTINGS,
    PAPER_VARIANTS,
    VARIANTS,
    LearnedFusion,
    QuantifierSettings,
    TrainingGroup,
    Variant,
    member_predictions,
    training_groups,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "OVERLAP_CUTS",
    "PAPER_VARIANTS",
    "VARIANTS",
    "CVData",
    "LearnedFusion",
    "ProportionPosterior",
    "QLFusion",
    "QLFusionNet",
    "QLFusionSettings",
    "QuantifierLoss",
    "QuantifierSettings",
    "RowGroups",
    "TrainedQuantifier",
    "TrainingGroup",
    "Variant",
    "WeightRule",
    "cross_validated_group",
    "cross_validated_predictions",
    "cross_validated_weights",
    "list_features",
    "make_folds",
    "member_predictions",
    "merge_cross_validated",
    "plus_feature_names",
    "plus_features",
    "prepare_cv",
    "relevant_counts",
    "standardize",
    "train_quantifier",
    "training_groups",
    "weights_from_predictions",
]
