"""nDCG@k of a weighted fusion as a function of the weights, for weight optimisation.

:class:`FusionObjective` holds fixed runs and judged topics as dense tensors (per topic, the
union of the documents the runs retrieved) and evaluates a whole batch of weight vectors at
once: the fused scores are a weighted sum of per-run tensors, and nDCG@k comes from
:func:`probrank.evaluation.tensor_metrics.ndcg_at_k` (trec_eval's ``ndcg_cut_k``: gain =
grade, ideal ranking of all judged documents). Candidates are stored by docno descending, so
the stable sort breaks ties in fused score as trec_eval does; the value equals
``evaluate(qrels, fuse(runs, rule, weights=...), ["nDCG@10"])`` up to the rounding of the
fused scores (a sum here, :func:`math.fsum` in :func:`~probrank.fusion.fuse`), which can
reorder documents whose fused scores differ by a few ulps (a test checks the agreement).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum

import torch
from torch import Tensor

from probrank._options import parse_enum
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import query_order
from probrank.fusion.normalize import Normalization, check_depth, normalize_lists
from probrank.fusion.rrf import DEFAULT_RRF_K, reciprocal_ranks

__all__ = ["DEFAULT_MEASURE", "FusionObjective", "WeightedRule", "parse_cutoff"]

DEFAULT_MEASURE = "nDCG@10"
"""The objective weight optimisation maximises by default."""
_NDCG = re.compile(r"nDCG@(\d+)|ndcg_cut_(\d+)")
_CHUNK = 1 << 22
"""Fused-score elements evaluated at once (a chunk of weight vectors is about 32 MiB)."""


class WeightedRule(str, Enum):
    """A fusion rule with one weight per run (:mod:`probrank.fusion.weighted`)."""

    WSUM = "wsum"
    """Weighted CombSUM, ``sum_i w_i s_i(d)`` (ranx ``wsum``)."""
    WMNZ = "wmnz"
    """Weighted CombMNZ, ``(sum_i s_i(d)) (sum_i w_i)`` (ranx ``wmnz``)."""
    WRRF = "wrrf"
    """Weighted RRF, ``sum_i w_i / (k + r_i(d))``."""


def parse_cutoff(measure: str) -> int:
    """The cut-off `k` of ``"nDCG@k"`` (or trec_eval's ``"ndcg_cut_k"``).

    Raises:
        InputDataError: another measure, or `k` < 1.
    """
    match = _NDCG.fullmatch(str(measure))
    k = int(match.group(1) or match.group(2)) if match else 0
    if k < 1:
        raise InputDataError(f"the fusion objective is nDCG@k with k >= 1, got {measure!r}")
    return k


class FusionObjective:
    """Mean nDCG@k over judged topics of a weighted fusion of fixed runs.

    Args:
        runs: The `R` runs; not modified.
        qrels: Judgements.
        rule: A :class:`WeightedRule` or its value.
        topics: Topics to evaluate on (default: every topic of ``qrels`` a run retrieved);
            those the qrels lack or no run retrieved are dropped, as trec_eval drops them.
        norm: Score normalisation (``wsum``, ``wmnz``).
        depth: Documents per list.
        rrf_k: RRF's ``k`` (``wrrf``).
        measure: ``"nDCG@k"``.

    Attributes:
        topics: The `Q` topics evaluated, in natural order.
        evaluations: Weight vectors evaluated so far.
    """

    def __init__(
        self,
        runs: Sequence[Run],
        qrels: Qrels,
        rule: WeightedRule | str = WeightedRule.WSUM,
        *,
        topics: Sequence[str] | None = None,
        norm: Normalization | str = Normalization.MINMAX,
        depth: int | None = 100,
        rrf_k: float = DEFAULT_RRF_K,
        measure: str = DEFAULT_MEASURE,
    ) -> None:
        self.rule = parse_enum(WeightedRule, rule, "rule")
        self.k = parse_cutoff(measure)
        depth = check_depth(depth)
        judged = qrels.as_dict()
        wanted = set(judged) if topics is None else {str(t) for t in topics} & set(judged)
        if self.rule is WeightedRule.WRRF:
            lists = [reciprocal_ranks(r.restrict(wanted), rrf_k, depth).as_dict() for r in runs]
        else:
            lists = [normalize_lists(r.restrict(wanted).as_dict(), norm, depth) for r in runs]
        self.topics = query_order(q for by_q in lists for q, docs in by_q.items() if docs)
        if not self.topics:
            raise InputDataError("the runs retrieve nothing for the judged topics")
        unions = [
            sorted({d for by_q in lists for d in by_q.get(q, {})}, reverse=True)
            for q in self.topics
        ]
        width = max(len(u) for u in unions)
        shape = (len(runs), len(self.topics), width)
        self._scores = torch.zeros(shape, dtype=torch.float64)
        self._present = torch.zeros(shape, dtype=torch.float64)
        self._mask = torch.zeros(shape[1:], dtype=torch.bool)
        self._gains = torch.zeros(shape[1:], dtype=torch.float64)
        self._ideal = torch.zeros(len(self.topics), self.k, dtype=torch.float64)
        for t, (qid, union) in enumerate(zip(self.topics, unions, strict=True)):
            column = {doc: i for i, doc in enumerate(union)}
            self._mask[t, : len(union)] = True
            grades = judged[qid]
            self._gains[t, : len(union)] = torch.tensor(
                [max(grades.get(d, 0), 0) for d in union], dtype=torch.float64
            )
            best = sorted((max(g, 0) for g in grades.values()), reverse=True)[: self.k]
            self._ideal[t, : len(best)] = torch.tensor(best, dtype=torch.float64)
            for r, by_q in enumerate(lists):
                docs = by_q.get(qid, {})
                if docs:
                    index = torch.tensor([column[d] for d in docs])
                    self._scores[r, t, index] = torch.tensor(
                        list(docs.values()), dtype=torch.float64
                    )
                    self._present[r, t, index] = 1.0
        self._score_sum = self._scores.sum(0)
        self.evaluations = 0

    @property
    def num_runs(self) -> int:
        """`R`, the length of a weight vector."""
        return int(self._scores.shape[0])

    def fused_scores(self, weights: Tensor) -> Tensor:
        """Fused scores of every candidate.

        Args:
            weights: `b x R` weight vectors.

        Returns:
            `b x Q x U` fused scores (padding where the candidate mask is False).
        """
        if self.rule is WeightedRule.WMNZ:
            return self._score_sum * torch.einsum("br,rqu->bqu", weights, self._present)
        return torch.einsum("br,rqu->bqu", weights, self._scores)

    def per_topic(self, weights: Tensor) -> Tensor:
        """nDCG@k per topic.

        Args:
            weights: `b x R` (or `R`) weight vectors.

        Returns:
            `b x Q` (or `Q`) values.
        """
        from probrank.evaluation.tensor_metrics import ndcg_at_k

        w = torch.as_tensor(weights, dtype=torch.float64)
        single = w.dim() == 1
        w = w.reshape(-1, self.num_runs)
        if not torch.isfinite(w).all():
            raise InputDataError("weights must be finite")
        step = max(1, _CHUNK // self._score_sum.numel())
        parts = []
        for start in range(0, w.shape[0], step):
            chunk = w[start : start + step]
            b = chunk.shape[0]
            scores = self.fused_scores(chunk)
            parts.append(
                ndcg_at_k(
                    scores,
                    self._gains.expand(b, -1, -1),
                    self._ideal.expand(b, -1, -1),
                    self.k,
                    self._mask.expand(b, -1, -1),
                )
            )
        self.evaluations += w.shape[0]
        values = torch.cat(parts)
        return values[0] if single else values

    def __call__(self, weights: Tensor) -> Tensor:
        """Mean nDCG@k over :attr:`topics`: `b` values for `b x R` weights (a scalar for `R`)."""
        return self.per_topic(weights).mean(-1)
