"""Padded tensor view of a run (and its judgements) for models and training loops."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError

__all__ = ["RankingBatch"]


@dataclass(frozen=True)
class RankingBatch:
    """A run cut at ``depth`` as padded tensors, candidates in trec_eval order.

    Within a query, candidates are stored by score (descending) with ties by docno
    (descending), so a stable sort of any scores keeps trec_eval's tie-breaking.

    Attributes:
        query_ids: ``num_queries`` query ids.
        doc_ids: Per query, the candidate doc ids in stored order (no padding).
        scores: `num_queries x depth` run scores; 0 where ``mask`` is False.
        gains: `num_queries x depth` relevance grades clamped at 0 (unjudged and padding 0).
        mask: `num_queries x depth` bool, True for real candidates.
        num_relevant: `num_queries` documents with grade >= ``relevance_level`` in the qrels
            (not only among the candidates): recall and AP denominators.
        ideal_gains: `num_queries x max_depth` the query's judged grades (clamped at 0), sorted
            descending: the ideal ranking for nDCG@k up to the requested depth, which can be
            wider than the candidate lists.
        relevance_level: The grade from which a document counts as relevant (trec_eval ``-l``).
    """

    query_ids: tuple[str, ...]
    doc_ids: tuple[tuple[str, ...], ...]
    scores: Tensor
    gains: Tensor
    mask: Tensor
    num_relevant: Tensor
    ideal_gains: Tensor
    relevance_level: int = 1

    @property
    def depth(self) -> int:
        """The padded list length."""
        return int(self.scores.shape[-1])

    @property
    def relevant(self) -> Tensor:
        """`num_queries x depth` bool: grade >= ``relevance_level`` (False on padding)."""
        return (self.gains >= self.relevance_level) & self.mask

    @classmethod
    def from_run(
        cls,
        run: Run,
        qrels: Qrels | None = None,
        depth: int = 100,
        *,
        relevance_level: int = 1,
        dtype: torch.dtype = torch.float64,
    ) -> RankingBatch:
        """Build a batch from a run's top ``depth`` documents per query.

        With ``qrels``, only queries present in both are kept (trec_eval's default), in the
        run's order; without, every query of the run is kept and gains are zero.

        Args:
            run: The ranked lists.
            qrels: Judgements for gains and relevant counts, or None.
            depth: Documents kept per query; the tensors' width is
                ``min(depth, longest kept list)``.
            relevance_level: Minimum grade counted as relevant.
            dtype: Floating dtype of ``scores``, ``gains`` and ``ideal_gains``.

        Returns:
            The batch: candidate tensors of shape `num_queries x width`, ``ideal_gains`` of
            shape `num_queries x depth`.
        """
        if depth < 1:
            raise InputDataError(f"depth must be a positive integer, got {depth}")
        judged = qrels.as_dict() if qrels is not None else None
        query_ids = [q for q in run if judged is None or q in judged]
        if not query_ids:
            raise InputDataError(
                f"run {run.name!r} and qrels {getattr(qrels, 'name', '')!r} share no query"
            )
        rankings = [run.ranking(q, depth) for q in query_ids]
        width = max(len(r) for r in rankings)
        n = len(query_ids)
        scores = torch.zeros(n, width, dtype=dtype)
        gains = torch.zeros(n, width, dtype=dtype)
        ideal = torch.zeros(n, depth, dtype=dtype)
        mask = torch.zeros(n, width, dtype=torch.bool)
        num_relevant = torch.zeros(n, dtype=torch.long)
        for i, (qid, ranking) in enumerate(zip(query_ids, rankings, strict=True)):
            length = len(ranking)
            mask[i, :length] = True
            scores[i, :length] = torch.tensor([s for _, s in ranking], dtype=dtype)
            if judged is None:
                continue
            grades = judged[qid]
            gains[i, :length] = torch.tensor(
                [max(grades.get(d, 0), 0) for d, _ in ranking], dtype=dtype
            )
            best = sorted((max(g, 0) for g in grades.values()), reverse=True)[:depth]
            ideal[i, : len(best)] = torch.tensor(best, dtype=dtype)
            num_relevant[i] = sum(1 for g in grades.values() if g >= relevance_level)
        return cls(
            query_ids=tuple(query_ids),
            doc_ids=tuple(tuple(d for d, _ in r) for r in rankings),
            scores=scores,
            gains=gains,
            mask=mask,
            num_relevant=num_relevant,
            ideal_gains=ideal,
            relevance_level=relevance_level,
        )
