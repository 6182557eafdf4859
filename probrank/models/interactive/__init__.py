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
    GPPLOptions,
    GPPLPrior,
    InteractiveRankerSettings,
    LaplaceOptions,
    PosteriorKind,
    SampleOptions,
)
from probrank.models.interactive.warmstart import (
    WarmStart,
    WarmStartOptions,
    train_warm_start,
    warm_start_identity,
)

__all__ = [
    "BUILDERS",
    "GPPL_PRIORS",
    "OPTION_TABLES",
    "GPPLOptions",
    "GPPLPrior",
    "InteractiveRanker",
    "InteractiveRankerSettings",
    "LaplaceOptions",
    "PosteriorKind",
    "SampleOptions",
    "WarmStart",
    "WarmStartOptions",
    "build_posterior",
    "train_warm_start",
    "warm_start_identity",
]
