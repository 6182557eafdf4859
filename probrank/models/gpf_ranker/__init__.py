"""The GPF ranker (GPF-BERT / SNGP heads) as a library object.

* :mod:`~probrank.models.gpf_ranker.model`: :class:`GPFRanker` (fit on labelled candidate
  lists, ``predict``, ``rerank``, ``posterior``, ``botorch_model``, ``save``/``load``) and
  :class:`GPFRankerSettings`;
* :mod:`~probrank.models.gpf_ranker.selection`: validation-NLL selection of epochs, focal
  gamma and calibration, shared with the GPF protocol.
"""

from probrank.models.gpf_ranker.model import (
    GPFRanker,
    GPFRankerSettings,
    RelevancePredictions,
    RerankCriterion,
)
from probrank.models.gpf_ranker.selection import (
    Checkpoint,
    Family,
    Selection,
    restore,
    select,
    train_checkpoints,
)

__all__ = [
    "Checkpoint",
    "Family",
    "GPFRanker",
    "GPFRankerSettings",
    "RelevancePredictions",
    "RerankCriterion",
    "Selection",
    "restore",
    "select",
    "train_checkpoints",
]
