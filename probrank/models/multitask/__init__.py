"""Multi-task answer filtering and re-ranking (Pentagon at MEDIQA 2019), probabilistic.

* :mod:`~probrank.models.multitask.model`: :class:`MultiTaskRanker` (fit on labelled
  candidate lists, ``filter_and_rank``, ``posterior``, ``save``/``load``) and
  :class:`MultiTaskSettings`;
* :mod:`~probrank.models.multitask.network`: the Pyro model (:class:`MultiTaskNet`), its data
  (:class:`MultiTaskData`), :func:`fit_multitask` and :func:`predict_multitask`;
* :mod:`~probrank.models.multitask.selection`: the choice of lambda, the P(keep) threshold and
  the keep-top rule on validation (shared by :class:`MultiTaskRanker` and the MEDIQA protocol);
* :mod:`~probrank.models.multitask.features`: encoder and list-context answer features;
* :mod:`~probrank.models.multitask.mediqa_features` and
  :mod:`~probrank.models.multitask.entailment`: the MEDIQA protocol's richer features
  (metadata, question entailment); imported on first use (they need scikit-learn, and the
  entailment's BM25 the ``mediqa`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probrank.models.multitask.network import (
    MultiTaskData,
    MultiTaskNet,
    fit_multitask,
    predict_multitask,
)

if TYPE_CHECKING:
    from probrank.models.multitask.entailment import (
        EntailedQuestion,
        EntailedQuestionFinder,
        EntailmentClassifier,
    )
    from probrank.models.multitask.features import AnswerFeatures, AnswerFeaturizer
    from probrank.models.multitask.mediqa_features import (
        FeatureSet,
        MediqaFeaturizer,
        answer_domain,
    )
    from probrank.models.multitask.model import (
        MultiTaskRanker,
        MultiTaskSettings,
        RankedAnswers,
    )
    from probrank.models.multitask.selection import (
        KeepTop,
        MultiTaskChoice,
        keep_labels,
        select_multitask,
    )

__all__ = [
    "AnswerFeatures",
    "AnswerFeaturizer",
    "EntailedQuestion",
    "EntailedQuestionFinder",
    "EntailmentClassifier",
    "FeatureSet",
    "KeepTop",
    "MediqaFeaturizer",
    "MultiTaskChoice",
    "MultiTaskData",
    "MultiTaskNet",
    "MultiTaskRanker",
    "MultiTaskSettings",
    "RankedAnswers",
    "answer_domain",
    "fit_multitask",
    "keep_labels",
    "predict_multitask",
    "select_multitask",
]

_LAZY = {
    "EntailedQuestion": "entailment",
    "EntailedQuestionFinder": "entailment",
    "EntailmentClassifier": "entailment",
    "AnswerFeaturizer": "features",
    "AnswerFeatures": "features",
    "FeatureSet": "mediqa_features",
    "MediqaFeaturizer": "mediqa_features",
    "answer_domain": "mediqa_features",
    "KeepTop": "selection",
    "MultiTaskChoice": "selection",
    "keep_labels": "selection",
    "select_multitask": "selection",
    "MultiTaskRanker": "model",
    "MultiTaskSettings": "model",
    "RankedAnswers": "model",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
