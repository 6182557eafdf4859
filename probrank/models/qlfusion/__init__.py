"""QLFusion: a Bayesian quantifier of relevant documents per ranked list, and fusion by it.

* :mod:`~probrank.models.qlfusion.model`: :class:`QLFusion` (fit on runs and qrels, ``fuse``,
  ``proportions``, ``posterior``, ``save``/``load``) and :class:`QLFusionSettings`;
* :mod:`~probrank.models.qlfusion.network`: the network (:class:`QLFusionNet`), its inputs
  (:func:`list_features`, :func:`relevant_counts`) and vectorised training
  (:func:`train_quantifier`);
* :mod:`~probrank.models.qlfusion.plus_features`: the richer judgement-free inputs of the
  ``qlfusion_plus`` extension.
"""

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

__all__ = [
    "OVERLAP_CUTS",
    "ProportionPosterior",
    "QLFusion",
    "QLFusionNet",
    "QLFusionSettings",
    "QuantifierLoss",
    "RowGroups",
    "TrainedQuantifier",
    "WeightRule",
    "list_features",
    "plus_feature_names",
    "plus_features",
    "relevant_counts",
    "standardize",
    "train_quantifier",
]
