"""The GPF ranker (GPF-BERT / SNGP heads) as a library object.

* :mod:`~probrank.models.gpf_ranker.model`: :class:`GPFRanker` (fit on labelled candidate
  lists or on pair features, the validation-selection fits of the three regimes
  ``fit_features``, ``fit_fine_tuned`` and ``fit_top_layers``, ``predict``, ``rerank``,
  ``posterior``, ``botorch_model``, ``save``/``load``);
* :mod:`~probrank.models.gpf_ranker.settings`: :class:`GPFRankerSettings`, the one settings
  object of the model and the GPF protocols (the model card's defaults);
* :mod:`~probrank.models.gpf_ranker.fitting`: the frozen-encoder validation-selection fit;
* :mod:`~probrank.models.gpf_ranker.fine_tuning` and
  :mod:`~probrank.models.gpf_ranker.top_layers`: the bodies of the fine-tuned and top-layers
  regimes (the encoder trained with the head; settings :class:`FineTuneSettings` and
  :class:`TopLayersSettings`, result :class:`RegimeFit`);
* :mod:`~probrank.models.gpf_ranker.selection`: validation-NLL selection of epochs, focal
  gamma and calibration, shared by the three regimes.

The head kinds, losses and GP options the settings name are re-exported here, so that the
protocols read them from the model.
"""

from probrank.models.gpf_ranker.model import (
    GPFRanker,
    GPFRankerSettings,
    RankingCriterion,
    RelevancePredictions,
    RerankCriterion,
)
from probrank.models.gpf_ranker.selection import (
    GP_HEADS,
    Checkpoint,
    Family,
    RegimeFit,
    Selection,
    restore,
    select,
    train_checkpoints,
)
from probrank.models.gpf_ranker.settings import (
    DropoutScope,
    FineTuneSettings,
    TopLayersSettings,
)
from probrank.models.gpf_ranker.top_layers import TopLayerSplit
from probrank.nn.calibration import DEFAULT_MEAN_FIELD_FACTORS
from probrank.nn.heads import HeadKind, PrecisionUpdate
from probrank.nn.losses import LossKind
from probrank.nn.rff_gp import MomentumForm

__all__ = [
    "DEFAULT_MEAN_FIELD_FACTORS",
    "GP_HEADS",
    "Checkpoint",
    "DropoutScope",
    "Family",
    "FineTuneSettings",
    "GPFRanker",
    "GPFRankerSettings",
    "HeadKind",
    "LossKind",
    "MomentumForm",
    "PrecisionUpdate",
    "RankingCriterion",
    "RegimeFit",
    "RelevancePredictions",
    "RerankCriterion",
    "Selection",
    "TopLayerSplit",
    "TopLayersSettings",
    "restore",
    "select",
    "train_checkpoints",
]
