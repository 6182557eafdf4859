"""Ranking metrics on padded tensors, for training loops and model selection.

These follow trec_eval's definitions exactly (P@k divides by k, R@k and AP by the number of
relevant documents in the qrels, nDCG uses the grade as gain with a log2(rank + 1) discount and
the ideal ranking of all judged documents), so that on a :class:`~probrank.data.RankingBatch`
they equal ir-measures on the same run cut at the batch depth. They are written by hand because
ir-measures works on dicts of strings, not on batched tensors that a model produces.

Ties: candidates are ranked with a *stable* descending sort, so equal scores keep the stored
order (trec_eval's docno-descending order in a ``RankingBatch``).

All functions take `... x n` tensors and return `...` tensors of per-query values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from probrank.data.batch import RankingBatch
from probrank.exceptions import InputDataError

__all__ = [
    "average_precision",
    "evaluate_batch",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "recall_n_at_k",
    "reciprocal_rank",
    "sort_by_scores",
]


def sort_by_scores(scores: Tensor, mask: Tensor | None, *values: Tensor) -> tuple[Tensor, ...]:
    """Reorder ``values`` by ``scores`` (descending, stable); padding goes last.

    Args:
        scores: `... x n` scores.
        mask: `... x n` bool, False on padding; None means no padding.
        values: Tensors of shape `... x n` to reorder.

    Returns:
        The reordered ``mask`` (all True if None) followed by the reordered ``values``.
    """
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    keyed = scores.masked_fill(~mask, float("-inf"))
    order = torch.sort(keyed, dim=-1, descending=True, stable=True).indices
    return (mask.gather(-1, order), *(v.gather(-1, order) for v in values))


def _ranked_relevance(scores: Tensor, relevant: Tensor, mask: Tensor | None) -> Tensor:
    ranked_mask, ranked = sort_by_scores(scores, mask, relevant.to(scores.dtype))
    return ranked * ranked_mask


def precision_at_k(scores: Tensor, relevant: Tensor, k: int, mask: Tensor | None = None) -> Tensor:
    """P@k: relevant documents in the top k, divided by k (trec_eval's ``P_k``).

    Args:
        scores: `... x n` scores.
        relevant: `... x n` bool or 0/1 relevance.
        k: Cut-off.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` precision values.
    """
    ranked = _ranked_relevance(scores, relevant, mask)
    return ranked[..., :k].sum(-1) / k


def recall_at_k(
    scores: Tensor,
    relevant: Tensor,
    num_relevant: Tensor,
    k: int,
    mask: Tensor | None = None,
) -> Tensor:
    """R@k: relevant documents in the top k over all relevant documents (0 if there are none).

    Args:
        scores: `... x n` scores.
        relevant: `... x n` bool or 0/1 relevance.
        num_relevant: `...` relevant documents per query in the qrels.
        k: Cut-off.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` recall values.
    """
    ranked = _ranked_relevance(scores, relevant, mask)
    hits = ranked[..., :k].sum(-1)
    denominator = num_relevant.to(hits.dtype)
    return torch.where(denominator > 0, hits / denominator.clamp_min(1), torch.zeros_like(hits))


def recall_n_at_k(scores: Tensor, relevant: Tensor, k: int, mask: Tensor | None = None) -> Tensor:
    """R_n@k: recall at k among the n candidates given (e.g. R10@1 with one true response).

    The denominator counts the relevant candidates in the list itself, not in any qrels.

    Args:
        scores: `... x n` scores of the n candidates.
        relevant: `... x n` bool or 0/1 relevance.
        k: Cut-off.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` values in [0, 1]; 0 for lists without a relevant candidate.
    """
    rel = relevant.to(scores.dtype)
    if mask is not None:
        rel = rel * mask
    return recall_at_k(scores, rel, rel.sum(-1), k, mask)


def average_precision(
    scores: Tensor, relevant: Tensor, num_relevant: Tensor, mask: Tensor | None = None
) -> Tensor:
    """AP: mean over relevant documents of the precision at their rank; unretrieved ones add 0.

    Args:
        scores: `... x n` scores.
        relevant: `... x n` bool or 0/1 relevance.
        num_relevant: `...` relevant documents per query in the qrels.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` average precision.
    """
    ranked = _ranked_relevance(scores, relevant, mask)
    ranks = torch.arange(1, ranked.shape[-1] + 1, dtype=ranked.dtype, device=ranked.device)
    precision = ranked.cumsum(-1) / ranks
    total = (precision * ranked).sum(-1)
    denominator = num_relevant.to(total.dtype)
    return torch.where(denominator > 0, total / denominator.clamp_min(1), torch.zeros_like(total))


def reciprocal_rank(scores: Tensor, relevant: Tensor, mask: Tensor | None = None) -> Tensor:
    """RR: one over the rank of the first relevant document, 0 if none is retrieved.

    Args:
        scores: `... x n` scores.
        relevant: `... x n` bool or 0/1 relevance.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` reciprocal ranks.
    """
    ranked = _ranked_relevance(scores, relevant, mask)
    ranks = torch.arange(1, ranked.shape[-1] + 1, dtype=ranked.dtype, device=ranked.device)
    inverse = torch.where(ranked > 0, 1.0 / ranks, torch.zeros_like(ranked))
    return inverse.max(-1).values if ranked.shape[-1] else ranked.sum(-1)


def ndcg_at_k(
    scores: Tensor,
    gains: Tensor,
    ideal_gains: Tensor,
    k: int,
    mask: Tensor | None = None,
) -> Tensor:
    """nDCG@k with gain = grade and discount 1 / log2(rank + 1) (trec_eval's ``ndcg_cut_k``).

    Args:
        scores: `... x n` scores.
        gains: `... x n` non-negative gains of the candidates.
        ideal_gains: `... x m` the query's judged gains sorted descending (the ideal ranking).
        k: Cut-off.
        mask: `... x n` bool, False on padding.

    Returns:
        `...` nDCG values; 0 where the ideal DCG is 0.
    """
    ranked_mask, ranked = sort_by_scores(scores, mask, gains)
    ranked = (ranked * ranked_mask)[..., :k]
    ideal = ideal_gains[..., :k]
    dcg = (ranked / _discount(ranked.shape[-1], ranked)).sum(-1)
    idcg = (ideal / _discount(ideal.shape[-1], ideal)).sum(-1)
    return torch.where(idcg > 0, dcg / torch.where(idcg > 0, idcg, 1.0), torch.zeros_like(dcg))


def _discount(n: int, like: Tensor) -> Tensor:
    return torch.log2(torch.arange(2, n + 2, dtype=like.dtype, device=like.device))


_MEASURE = re.compile(r"(?P<name>P|R|nDCG|AP|RR|R(?P<n>\d+))(?:@(?P<k>\d+))?")


def _batch_measure(name: str) -> Callable[[RankingBatch, Tensor], Tensor]:
    match = _MEASURE.fullmatch(name)
    if match is None:
        raise InputDataError(
            f"unknown tensor measure {name!r}; use P@k, R@k, nDCG@k, AP, RR or Rn@k"
        )
    base, k_text = match["name"], match["k"]
    k = int(k_text) if k_text else None
    if base in ("P", "R", "nDCG") or match["n"]:
        if k is None:
            raise InputDataError(f"measure {name!r} needs a cut-off, e.g. {base}@10")
    elif k is not None:
        raise InputDataError(f"measure {name!r} takes no cut-off")
    cut = k or 0
    if base == "P":
        return lambda b, s: precision_at_k(s, b.relevant, cut, b.mask)
    if base == "R":
        return lambda b, s: recall_at_k(s, b.relevant, b.num_relevant, cut, b.mask)
    if base == "nDCG":
        return lambda b, s: ndcg_at_k(s, b.gains, b.ideal_gains, cut, b.mask)
    if base == "AP":
        return lambda b, s: average_precision(s, b.relevant, b.num_relevant, b.mask)
    if base == "RR":
        return lambda b, s: reciprocal_rank(s, b.relevant, b.mask)
    return lambda b, s: recall_n_at_k(s, b.relevant, cut, b.mask)


def evaluate_batch(
    batch: RankingBatch,
    measures: Sequence[str] = ("AP", "nDCG@10", "P@10"),
    scores: Tensor | None = None,
) -> dict[str, Tensor]:
    """Per-query metric values on a batch, from its own scores or from a model's.

    Every measure sees only the batch's `depth` candidates per query (the run cut at
    ``RankingBatch.from_run(..., depth=...)``). In particular ``AP`` is **AP at the batch
    depth**: relevant documents ranked below the depth (or never retrieved) add 0 to the sum
    while still counting in the denominator (all relevant documents of the qrels), so it
    equals trec_eval's AP on the run cut at that depth, and is at most the AP of the full run
    when the run retrieves more than `depth` documents.

    Args:
        batch: Candidates with gains and relevant counts.
        measures: Names: ``P@k``, ``R@k``, ``nDCG@k``, ``AP`` (at the batch depth), ``RR``,
            ``Rn@k`` (e.g. ``R10@1``).
        scores: `num_queries x depth` scores to rank by; default: ``batch.scores``.

    Returns:
        ``{measure: num_queries tensor}``.
    """
    if scores is None:
        scores = batch.scores
    elif scores.shape != batch.scores.shape:
        raise InputDataError(
            f"scores have shape {tuple(scores.shape)}, batch has {tuple(batch.scores.shape)}"
        )
    return {name: _batch_measure(name)(batch, scores) for name in measures}
