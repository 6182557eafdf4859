"""trec_eval 10.0's per-topic measures over many rankings at once (:class:`RankedRows`).

Each function here computes, for every row, the value its namesake in
:mod:`probrank.evaluation.trec_eval.formulas` computes for that row alone, with the same
operations on the same operands, so the values are equal to the last bit:

* a term is formed as the per-topic formula forms it (an ``int64`` over a ``float64`` divides
  the same doubles);
* a sum is accumulated left to right along the row (``np.add.accumulate`` over the columns),
  with ``0.0`` in the cells the C loop skips: ``x + 0.0`` is ``x``, so the partial sums are the
  C loop's;
* counts are exact integers.

A family without a function here (bpref, infAP, iprec_at_recall, rbp) is computed row by row
with its per-topic formula (:func:`row_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from probrank.evaluation.trec_eval.formulas import FORMULAS, _ideal_dcg, _log2_ranks
from probrank.evaluation.trec_eval.names import MeasureSpec
from probrank.evaluation.trec_eval.ranking import NOT_IN_POOL, UNJUDGED
from probrank.evaluation.trec_eval.rows import RankedRows

__all__ = ["VECTORISED", "row_values"]

VectorFormula = Callable[[RankedRows, MeasureSpec, int], np.ndarray]


def _row_sums(terms: np.ndarray) -> np.ndarray:
    """`num_rows` float64: each row of `num_rows x width` ``terms`` summed left to right."""
    if not terms.shape[1]:
        return np.zeros(terms.shape[0])
    return np.add.accumulate(terms, axis=1)[:, -1]


def _divide(numerator: Any, denominator: Any, where: Any) -> np.ndarray:
    """``numerator / denominator`` where ``where``, else 0.0 (no division there)."""
    out = np.zeros(np.shape(where), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=where, casting="unsafe")
    return out


def num_q(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``num_q``: 1 per row."""
    return np.ones(len(rows))


def num_ret(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``num_ret``."""
    return rows.num_ret.astype(np.float64)


def num_rel(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``num_rel``."""
    return rows.num_rel(level).astype(np.float64)


def num_rel_ret(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``num_rel_ret``."""
    return rows.num_rel_ret(level).astype(np.float64)


def average_precision(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``map`` / ``map_cut_k`` (and ``gm_map``'s per-topic value)."""
    relevant = rows.relevant(level)
    cumulative = rows.cumulative(level)
    if spec.cutoff is not None:
        relevant, cumulative = relevant[:, : spec.cutoff], cumulative[:, : spec.cutoff]
    ranks = np.arange(1.0, relevant.shape[1] + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(relevant, cumulative / ranks, 0.0)
    return _divide(_row_sums(terms), rows.num_rel(level), relevant.any(axis=1))


def r_precision(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``Rprec``."""
    relevant = rows.num_rel(level)
    within = rows.relevant_within(level, relevant)
    return _divide(within, relevant, np.minimum(rows.num_ret, relevant) > 0)


def reciprocal_rank(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``recip_rank``."""
    relevant = rows.relevant(level)
    if spec.cutoff is not None:
        relevant = relevant[:, : spec.cutoff]
    if not relevant.shape[1]:
        return np.zeros(len(rows))
    first = relevant.argmax(axis=1)
    found = relevant[np.arange(len(rows)), first]
    return _divide(np.ones(len(rows)), first + 1.0, found)


def precision(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``P_k``."""
    k = int(spec.cutoff or 0)
    return rows.relevant_within(level, k) / k


def recall(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``recall_k``."""
    relevant = rows.num_rel(level)
    return _divide(rows.relevant_within(level, int(spec.cutoff or 0)), relevant, relevant > 0)


def success(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``success_k``."""
    return (rows.relevant_within(level, int(spec.cutoff or 0)) > 0).astype(np.float64)


def ndcg(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``ndcg`` / ``ndcg_cut_k``."""
    ideal = np.fromiter(
        (j.ideal_dcg(spec.cutoff, _ideal_dcg) for j in rows.judged), np.float64, len(rows)
    )
    rels = rows.rels if spec.cutoff is None else rows.rels[:, : spec.cutoff]
    positive = rels > 0
    terms = np.where(positive, rels / _log2_ranks(rels.shape[1]), 0.0)
    return _divide(_row_sums(terms), ideal, (ideal > 0.0) & positive.any(axis=1))


def set_precision(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``set_P``."""
    return _divide(rows.num_rel_ret(level), rows.num_ret, rows.num_ret > 0)


def set_recall(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``set_recall``."""
    relevant = rows.num_rel(level)
    return _divide(rows.num_rel_ret(level), relevant, relevant > 0)


def set_f(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``set_F``."""
    rel_ret = rows.num_rel_ret(level)
    found = rel_ret > 0
    p = _divide(rel_ret, rows.num_ret, found)
    r = _divide(rel_ret, rows.num_rel(level), found)
    x = spec.beta
    return _divide((x + 1.0) * p * r, x * p + r, found)


def set_average_precision(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``set_map``."""
    relevant = rows.num_rel(level)
    rel_ret = rows.num_rel_ret(level).astype(np.float64)
    denominator = rows.num_ret.astype(np.float64) * relevant.astype(np.float64)
    return _divide(rel_ret * rel_ret, denominator, (rows.num_ret > 0) & (relevant > 0))


def judged(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``Judged@k``."""
    k = int(spec.cutoff or 0)
    return np.count_nonzero(rows.rels[:, :k] >= 0, axis=1) / k


def unjudged(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """``unj_k``."""
    k = int(spec.cutoff or 0)
    top = rows.rels[:, :k]
    return np.count_nonzero((top == NOT_IN_POOL) | (top == UNJUDGED), axis=1) / k


VECTORISED: dict[str, VectorFormula] = {
    "NumQ": num_q,
    "NumRet": num_ret,
    "NumRel": num_rel,
    "NumRelRet": num_rel_ret,
    "AP": average_precision,
    "GMAP": average_precision,
    "Rprec": r_precision,
    "RR": reciprocal_rank,
    "P": precision,
    "R": recall,
    "Success": success,
    "nDCG": ndcg,
    "SetP": set_precision,
    "SetR": set_recall,
    "SetF": set_f,
    "SetAP": set_average_precision,
    "Judged": judged,
    "Unjudged": unjudged,
}
"""Family name -> vectorised formula (the others: :func:`row_values`)."""


def row_values(rows: RankedRows, spec: MeasureSpec, level: int) -> np.ndarray:
    """`num_rows` float64: the measure ``spec`` of every row (vectorised when it can be)."""
    vectorised = VECTORISED.get(spec.family)
    if vectorised is not None:
        return np.asarray(vectorised(rows, spec, level), dtype=np.float64)
    formula = FORMULAS[spec.family]
    return np.fromiter(
        (formula(rows.topic(i), spec, level) for i in range(len(rows))), np.float64, len(rows)
    )
