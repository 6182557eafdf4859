"""First stages over a document collection, the retrieval cascade and risk-aware ranking.

==============================================  ===============================================
:class:`Collection`                             docno -> text from TREC ``<DOC>`` files, JSON
                                                lines or a DataFrame (:mod:`.readers`)
:class:`BM25Index`, :func:`open_or_build`       BM25 with bm25s, saved to disk and reused
:class:`Analyzer`                               tokens, stop words (default bm25s's 179-word
                                                English list) and stemming (default Porter)
:class:`PyTerrierFirstStage`                    any PyTerrier retriever as a first stage
:func:`run_cascade`                             first stage -> Bayesian reranker by k-fold
                                                cross-validation over topics -> PRP and
                                                risk-aware runs
:class:`RankingCriterion`                       posterior mean P(relevant), mean - lambda sd,
                                                CVaR at level alpha
==============================================  ===============================================

Everything is imported on first use, so ``import probrank.retrieval`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.retrieval.analysis import Analyzer, Stemmer, StopWords
    from probrank.retrieval.bm25 import BM25Index, BM25Method, BM25Settings, open_or_build
    from probrank.retrieval.cascade import (
        CascadeResult,
        CascadeSettings,
        RelevanceEstimate,
        Reranker,
        run_cascade,
    )
    from probrank.retrieval.collection import Collection
    from probrank.retrieval.first_stage import FirstStageKind, PyTerrierFirstStage
    from probrank.retrieval.risk import RankingCriterion, criterion_scores

_HOMES = {
    "Analyzer": "analysis",
    "Stemmer": "analysis",
    "StopWords": "analysis",
    "BM25Index": "bm25",
    "BM25Method": "bm25",
    "BM25Settings": "bm25",
    "open_or_build": "bm25",
    "CascadeResult": "cascade",
    "CascadeSettings": "cascade",
    "RelevanceEstimate": "cascade",
    "Reranker": "cascade",
    "run_cascade": "cascade",
    "Collection": "collection",
    "FirstStageKind": "first_stage",
    "PyTerrierFirstStage": "first_stage",
    "RankingCriterion": "risk",
    "criterion_scores": "risk",
}

__all__ = [
    "Analyzer",
    "BM25Index",
    "BM25Method",
    "BM25Settings",
    "CascadeResult",
    "CascadeSettings",
    "Collection",
    "FirstStageKind",
    "PyTerrierFirstStage",
    "RankingCriterion",
    "RelevanceEstimate",
    "Reranker",
    "Stemmer",
    "StopWords",
    "criterion_scores",
    "open_or_build",
    "run_cascade",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"probrank.retrieval.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
