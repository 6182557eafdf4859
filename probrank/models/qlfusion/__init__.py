"""QLFusion: a Bayesian quantifier of relevant documents per ranked list, and fusion by it.

* :mod:`~probrank.models.qlfusion.model`: :class:`QLFusion` (``fit`` on runs and qrels,
  ``fuse``, ``proportions``, ``posterior``, ``save``/``load``, and ``cross_fit``: every topic
  weighted by quantifiers that never saw its judgements, as the ``qlfusion_cv`` protocol and
  ``probrank fuse`` use it);
* :mod:`~probrank.models.qlfusion.settings`: :class:`QLFusionSettings`, the one settings
  object of the model, the protocol's ``[quantifier]`` table and ``probrank fuse``;
* :mod:`~probrank.models.qlfusion.network`: the network (:class:`QLFusionNet`), its inputs
  (:func:`list_features`, :func:`relevant_counts`) and vectorised training
  (:func:`train_quantifier`);
* :mod:`~probrank.models.qlfusion.plus_features`: the richer judgement-free inputs of the
  ``qlfusion_plus`` extension;
* :mod:`~probrank.models.qlfusion.quantifiers`: the cross-fitting variants (the paper's Tables
  1 and 2 and the extensions) and their training groups;
* :mod:`~probrank.models.qlfusion.members`: the per-(fold, run) member tensors of a
  cross-fitting and its result, :class:`CrossFit`;
* :mod:`~probrank.models.qlfusion.predictive`: the posterior predictive interval of a list's
  observed share of relevant documents and its held-out coverage;
* :mod:`~probrank.models.qlfusion.likelihoods`: the hierarchical ``logit_normal`` likelihood
  (a random effect per list).
"""

from probrank.models.qlfusion.members import CrossFit, CrossFitData
from probrank.models.qlfusion.model import ProportionPosterior, QLFusion
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
from probrank.models.qlfusion.quantifiers import (
    PAPER_VARIANTS,
    VARIANTS,
    Inputs,
    Kind,
    LearnedFusion,
    TrainingGroup,
    Variant,
)
from probrank.models.qlfusion.settings import QLFusionSettings, WeightRule

__all__ = [
    "OVERLAP_CUTS",
    "PAPER_VARIANTS",
    "VARIANTS",
    "CrossFit",
    "CrossFitData",
    "Inputs",
    "Kind",
    "LearnedFusion",
    "ProportionPosterior",
    "QLFusion",
    "QLFusionNet",
    "QLFusionSettings",
    "QuantifierLoss",
    "RowGroups",
    "TrainedQuantifier",
    "TrainingGroup",
    "Variant",
    "WeightRule",
    "list_features",
    "plus_feature_names",
    "plus_features",
    "relevant_counts",
    "standardize",
    "train_quantifier",
]
