"""The reference models as objects a researcher fits on their own data.

==============================  ==========================  ========================================
class                           fit                         use
==============================  ==========================  ========================================
:class:`QLFusion`               ``fit(runs, qrels)``        ``fuse(runs) -> Run``, ``proportions``
:class:`GPFRanker`              ``fit(train_lists, ...)``   ``predict(lists)``, ``rerank(run, ...)``
:class:`InteractiveRanker`      optional ``fit(lists)``     ``session(question, candidates)``
:class:`MultiTaskRanker`        ``fit(train_lists, ...)``   ``filter_and_rank(lists)``
:class:`PoolingRelevanceModel`  ``fit(ranks, ...)``         ``predict(ranks, topics)``, the
                                                            ``bayesian`` pooling strategy
==============================  ==========================  ========================================

Each takes a typed settings object (and, for the candidate models, an encoder), returns
itself from ``fit``, offers ``posterior``, ``to_inference_data``, ``save(path)`` and
``Cls.load(path)``. Candidate models read :class:`CandidateList` s. Everything is imported on
first use, so ``import probrank.models`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.data.candidates import CandidateList
    from probrank.models.gpf_ranker.model import GPFRanker, GPFRankerSettings
    from probrank.models.interactive.model import InteractiveRanker
    from probrank.models.interactive.settings import InteractiveRankerSettings
    from probrank.models.multitask.model import MultiTaskRanker, MultiTaskSettings
    from probrank.models.pooling.model import PoolingRelevanceModel
    from probrank.models.pooling.settings import PoolingModelSettings
    from probrank.models.qlfusion.model import QLFusion, QLFusionSettings

__all__ = [
    "CandidateList",
    "GPFRanker",
    "GPFRankerSettings",
    "InteractiveRanker",
    "InteractiveRankerSettings",
    "MultiTaskRanker",
    "MultiTaskSettings",
    "PoolingModelSettings",
    "PoolingRelevanceModel",
    "QLFusion",
    "QLFusionSettings",
]

_HOMES = {
    "CandidateList": "probrank.data.candidates",
    "GPFRanker": "probrank.models.gpf_ranker.model",
    "GPFRankerSettings": "probrank.models.gpf_ranker.model",
    "InteractiveRanker": "probrank.models.interactive.model",
    "InteractiveRankerSettings": "probrank.models.interactive.settings",
    "MultiTaskRanker": "probrank.models.multitask.model",
    "MultiTaskSettings": "probrank.models.multitask.model",
    "PoolingModelSettings": "probrank.models.pooling.settings",
    "PoolingRelevanceModel": "probrank.models.pooling.model",
    "QLFusion": "probrank.models.qlfusion.model",
    "QLFusionSettings": "probrank.models.qlfusion.model",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
