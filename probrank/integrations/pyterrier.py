"""probrank in PyTerrier pipelines: BM25, the Bayesian rerankers and QLFusion as transformers.

Needs the ``pyterrier`` extra (``pip install 'probrank[pyterrier]'``: PyTerrier 1.x, which
imports and runs pipelines without Java). PyTerrier's own BM25 (``pt.terrier.Retriever``)
starts a JVM and fetches Terrier's jars on first use; :class:`BM25Retriever` is probrank's
bm25s index as a retriever, so a whole pipeline runs without Java::

    import pyterrier as pt
    from probrank.integrations.pyterrier import BM25Retriever, ProbrankReranker

    bm25 = BM25Retriever(index, k=100)                       # a probrank BM25Index
    pipeline = bm25 >> ProbrankReranker(ranker, documents)   # a fitted GPFRanker, say
    pt.Experiment([bm25, pipeline], topics, qrels, eval_metrics=["map", "ndcg_cut_10"])

:class:`ProbrankReranker` sets ``score`` to the posterior mean P(relevant) (or a risk-aware
criterion, :class:`~probrank.retrieval.risk.RankingCriterion`) and adds ``score_sd``, the
posterior standard deviation of P(relevant), and ``logit_mean`` / ``logit_sd``, the
posterior of the relevance logit. :class:`QLFusionFuser` fuses the results of several
transformers with a fitted :class:`~probrank.models.QLFusion`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    import pyterrier as pt
except ImportError:  # pragma: no cover - exercised when the extra is missing
    raise ImportError(
        "probrank.integrations.pyterrier needs PyTerrier: pip install 'probrank[pyterrier]'"
    ) from None

import pandas as pd
import torch

from probrank.data.candidates import FIRST_STAGE_FEATURES, CandidateList, first_stage_rows
from probrank.exceptions import InputDataError
from probrank.retrieval.bm25 import BM25Index
from probrank.retrieval.first_stage import run_from_frame
from probrank.retrieval.risk import RankingCriterion, criterion_scores, probability_draws

__all__ = ["BM25Retriever", "ProbrankReranker", "QLFusionFuser", "results_frame"]


def results_frame(rows: list[dict[str, Any]], queries: Mapping[str, str]) -> pd.DataFrame:
    """A PyTerrier results frame (``qid, query, docno, score, rank``, ranked per topic)."""
    frame = pd.DataFrame(rows, columns=["qid", "docno", "score", *_extra(rows)])
    frame.insert(1, "query", [queries.get(q, "") for q in frame["qid"]])
    frame = frame.sort_values(["qid", "score", "docno"], ascending=[True, False, False])
    frame["rank"] = frame.groupby("qid").cumcount().astype("int64")
    return frame.reset_index(drop=True)


def _extra(rows: list[dict[str, Any]]) -> list[str]:
    return [c for c in (rows[0] if rows else {}) if c not in ("qid", "docno", "score")]


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputDataError(f"{what} needs columns {list(columns)}; missing {missing}")


class BM25Retriever(pt.Transformer):
    """probrank's bm25s BM25 as a PyTerrier retriever (no Java).

    Args:
        index: A :class:`~probrank.retrieval.bm25.BM25Index`.
        k: Documents per query.
    """

    def __init__(self, index: BM25Index, k: int = 1000) -> None:
        self.index = index
        self.k = k

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Topics (``qid, query``) to results (``qid, query, docno, score, rank``)."""
        _check_columns(inp, ("qid", "query"), "BM25Retriever")
        queries = {str(q): str(t) for q, t in zip(inp["qid"], inp["query"], strict=True)}
        run = self.index.search(queries, k=self.k)
        rows = [
            {"qid": qid, "docno": doc, "score": score}
            for qid in queries
            for doc, score in run.ranking(qid)
        ]
        return results_frame(rows, queries)


def _as_reranker(model: Any) -> Any:
    from probrank.models.gpf_ranker.model import GPFRanker
    from probrank.models.multitask.model import MultiTaskRanker
    from probrank.models.rerankers import GPFReranker, MultiTaskReranker

    if isinstance(model, GPFRanker):
        return GPFReranker(model=model, joint=False)
    if isinstance(model, MultiTaskRanker):
        return MultiTaskReranker(model=model, joint=False)
    if callable(getattr(model, "estimate", None)):
        return model
    raise InputDataError(
        f"ProbrankReranker needs a fitted GPFRanker, MultiTaskRanker or a reranker with "
        f"estimate(lists), got {type(model).__name__}"
    )


class ProbrankReranker(pt.Transformer):
    """A fitted probrank model as a PyTerrier reranker.

    Args:
        model: A fitted :class:`~probrank.models.GPFRanker` or
            :class:`~probrank.models.MultiTaskRanker` (or a
            :class:`~probrank.retrieval.cascade.Reranker`).
        documents: ``{docno: text}`` (e.g. a :class:`~probrank.retrieval.Collection`); None:
            the input's ``text`` column.
        criterion: What ``score`` is (:class:`~probrank.retrieval.risk.RankingCriterion`;
            default the posterior mean P(relevant)).
        first_stage_features: Pass the input's ``score`` as the first-stage side features
            (:data:`~probrank.data.candidates.FIRST_STAGE_FEATURES`); None: when the model was
            fitted with them.
        alpha: CVaR level.
        risk_aversion: ``lambda`` of ``mean_sd``.
        num_draws: Posterior draws for ``score_sd`` and the risk-aware criteria.
        seed: Seeds the draws.
    """

    def __init__(
        self,
        model: Any,
        documents: Mapping[str, str] | None = None,
        *,
        criterion: RankingCriterion | str = RankingCriterion.PROBABILITY,
        first_stage_features: bool | None = None,
        alpha: float = 0.1,
        risk_aversion: float = 1.0,
        num_draws: int = 1000,
        seed: int = 0,
    ) -> None:
        self.reranker = _as_reranker(model)
        self.documents = documents
        self.criterion = RankingCriterion(criterion)
        if first_stage_features is None:
            inner = getattr(self.reranker, "model", None)
            first_stage_features = getattr(inner, "side_features", ()) == FIRST_STAGE_FEATURES
        self.first_stage_features = first_stage_features
        self.alpha, self.risk_aversion = alpha, risk_aversion
        self.num_draws, self.seed = num_draws, seed

    def _lists(self, inp: pd.DataFrame) -> list[CandidateList]:
        lists = []
        for qid, group in inp.groupby("qid", sort=False):
            group = group.sort_values("score", ascending=False, kind="stable")
            docnos = [str(d) for d in group["docno"]]
            if self.documents is not None:
                missing = [d for d in docnos if d not in self.documents]
                if missing:
                    raise InputDataError(f"no text for document {missing[0]!r} (query {qid!r})")
                texts = [self.documents[d] for d in docnos]
            else:
                _check_columns(inp, ("text",), "ProbrankReranker without documents")
                texts = [str(t) for t in group["text"]]
            extra: dict[str, Any] = {}
            if self.first_stage_features:
                extra = {
                    "features": first_stage_rows([float(s) for s in group["score"]]),
                    "feature_names": FIRST_STAGE_FEATURES,
                }
            query = str(group["query"].iloc[0])
            lists.append(CandidateList(str(qid), query, docnos, texts, **extra))
        return lists

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Results (``qid, query, docno, score``) to reranked results with ``score`` the
        criterion, ``score_sd``, ``logit_mean`` and ``logit_sd``."""
        _check_columns(inp, ("qid", "query", "docno", "score"), "ProbrankReranker")
        if len(inp) == 0:
            return inp.assign(score_sd=[], logit_mean=[], logit_sd=[])
        lists = self._lists(inp)
        estimate = self.reranker.estimate(lists)
        draws = probability_draws(estimate.mean, estimate.variance, self.num_draws, seed=self.seed)
        scores = criterion_scores(
            self.criterion,
            probability=estimate.probability,
            mean=estimate.mean,
            variance=estimate.variance,
            risk_aversion=self.risk_aversion,
            alpha=self.alpha,
            num_draws=self.num_draws,
            seed=self.seed,
        )
        sd = draws.std(0) if draws.shape[0] > 1 else torch.zeros_like(scores)
        rows = [
            {
                "qid": qid,
                "docno": docno,
                "score": float(score),
                "score_sd": float(s),
                "logit_mean": float(m),
                "logit_sd": float(v) ** 0.5,
            }
            for qid, docno, score, s, m, v in zip(
                estimate.qids,
                estimate.candidate_ids,
                scores.tolist(),
                sd.tolist(),
                estimate.mean.tolist(),
                estimate.variance.clamp_min(0).tolist(),
                strict=True,
            )
        ]
        queries = {str(q): str(t) for q, t in zip(inp["qid"], inp["query"], strict=True)}
        return results_frame(rows, queries)


class QLFusionFuser(pt.Transformer):
    """A fitted :class:`~probrank.models.QLFusion` fusing the results of several transformers.

    Args:
        model: The fitted QLFusion (its runs in the same order as ``transformers``).
        transformers: The input systems (PyTerrier transformers on the same topics).
        name: The fused run's name.
    """

    def __init__(self, model: Any, transformers: Sequence[Any], *, name: str = "qlfusion") -> None:
        if not transformers:
            raise InputDataError("QLFusionFuser needs at least one input transformer")
        self.model = model
        self.transformers = list(transformers)
        self.name = name

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Topics (``qid, query``) to fused results (``score``: QLFusion's fused score)."""
        _check_columns(inp, ("qid", "query"), "QLFusionFuser")
        runs = [
            run_from_frame(t.transform(inp), name=f"input{i}")
            for i, t in enumerate(self.transformers)
        ]
        fused = self.model.fuse(runs, name=self.name)
        queries = {str(q): str(t) for q, t in zip(inp["qid"], inp["query"], strict=True)}
        rows = [
            {"qid": qid, "docno": doc, "score": score}
            for qid in fused
            for doc, score in fused.ranking(qid)
        ]
        return results_frame(rows, queries)
