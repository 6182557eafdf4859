"""The warm start of the interactive experiments: now in :mod:`probrank.models.interactive`.

The Siamese network's warm start (training, SWAG, ensemble) lives in
:mod:`probrank.models.interactive.warmstart` and its on-disk cache in
:mod:`probrank.models.interactive.warmstart_cache`; the experiments reach it through
:meth:`probrank.models.InteractiveRanker.fit_features`. This module keeps the experiments'
import path of the options (read by the config schema) and of the result type.
"""

from probrank.models.interactive.warmstart import (
    WARM_START_FORMAT,
    WARM_START_VERSION,
    WarmStart,
    WarmStartOptions,
    train_warm_start,
    warm_start_identity,
)

__all__ = [
    "WARM_START_FORMAT",
    "WARM_START_VERSION",
    "WarmStart",
    "WarmStartOptions",
    "train_warm_start",
    "warm_start_identity",
]
