"""The interactive Bayesian ranker as a library object.

* :mod:`~probrank.models.interactive.model`: :class:`InteractiveRanker` (optional warm start
  ``fit(lists)``, ``session(question, candidates)``, ``resume``, ``posterior``,
  ``botorch_model``, ``to_inference_data``, ``save``/``load``);
* :mod:`~probrank.models.interactive.settings`: :class:`InteractiveRankerSettings`, the
  posterior kinds and the option tables;
* :mod:`~probrank.models.interactive.warmstart`: the Siamese network's warm start (early
  stopping, SWAG, ensemble) and :mod:`~probrank.models.interactive.warmstart_cache`, its
  on-disk cache;
* :mod:`~probrank.models.interactive.builders`: the posterior of each kind over one question's
  candidates.
"""

from probrank.models.interactive.builders import BUILDERS, GPPL_PRIORS, build_posterior
from probrank.models.interactive.model import InteractiveRanker
from probrank.models.interactive.settings import (
    OPTION_TABLES,
    GPPLPrior,
    GPPLSettings,
    InteractiveRankerSettings,
    LaplaceSettings,
    PosteriorKind,
    SampleSettings,
)
from probrank.models.interactive.warmstart import (
    WarmStart,
    WarmStartSettings,
    train_warm_start,
    warm_start_identity,
)

__all__ = [
    "BUILDERS",
    "GPPL_PRIORS",
    "OPTION_TABLES",
    "GPPLPrior",
    "GPPLSettings",
    "InteractiveRanker",
    "InteractiveRankerSettings",
    "LaplaceSettings",
    "PosteriorKind",
    "SampleSettings",
    "WarmStart",
    "WarmStartSettings",
    "build_posterior",
    "train_warm_start",
    "warm_start_identity",
]
