"""Per-query score normalisation of a run, the first step of score-based fusion.

Every normalisation works on one query's list at a time, on the top ``depth`` documents in
trec_eval order (score descending, ties by docno descending), and returns a run cut at that
depth. The definitions follow Lee (1997), "Analyses of multiple evidence combination"
(SIGIR), and Montague & Aslam (2001), "Relevance score normalization for metasearch" (CIKM),
as implemented by ranx (``min-max``, ``zmuv``, ``sum``, ``rank``); they differ from ranx only
where ranx would divide by (almost) zero, as documented per member, and in the order of tied
scores, which here is trec_eval's (it matters for ``rank`` and for the ``depth`` cut).

For one query with scores ``s_1 >= ... >= s_n`` (trec_eval order, ``n >= 1``):

* min-max: ``(s - min) / (max - min)``; ``1.0`` for every document when ``max == min``.
* z-score: ``(s - mean) / std`` with the population standard deviation; ``0.0`` when
  ``std == 0``.
* sum: ``(s - min) / sum_j (s_j - min)``; ``1 / n`` for every document when that sum is 0.
* rank: ``1 - (r - 1) / n`` for the document at 1-based rank ``r``.

An empty list stays empty. Scores so far apart that a normalisation overflows a double
(``1e308`` and ``-1e308`` in one list) raise :class:`ScoreOverflowError`, never ``nan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from enum import Enum

import numpy as np

from probrank._options import parse_enum
from probrank.data.trec import Run
from probrank.exceptions import InputDataError

__all__ = [
    "Normalization",
    "ScoreOverflowError",
    "check_depth",
    "normalize",
    "normalize_lists",
    "normalize_scores",
    "top_documents",
]


class Normalization(str, Enum):
    """How :func:`normalize` maps one query's scores to a common scale."""

    MINMAX = "minmax"
    """Lee (1997) "zero-one", ``(s - min) / (max - min)``, in ``[0, 1]``, the top document 1 and
    the bottom one 0. A list whose scores are all equal (or that holds one document) maps to
    1.0 everywhere: every document ties with the top. (ranx maps it to 0.)"""
    ZSCORE = "zscore"
    """Montague & Aslam (2001) ZMUV, ``(s - mean) / std``, population standard deviation (as
    ``numpy.std``). A list with zero spread maps to 0.0 everywhere (its mean)."""
    SUM = "sum"
    """Montague & Aslam (2001) "sum", shifting the minimum to 0, then scaling the list to sum to 1:
    ``(s - min) / sum_j (s_j - min)``. A list whose shifted scores sum to 0 (all equal) maps
    to the uniform ``1 / n`` (ranx maps it to 0)."""
    RANK = "rank"
    """Rank-based score (Lee 1997; ranx ``rank``), ``1 - (r - 1) / n`` for the 1-based rank
    ``r`` in trec_eval order among ``n`` documents, so the top gets 1 and the last ``1 / n``.
    Ties in score get distinct ranks by docno, as trec_eval orders them."""


class ScoreOverflowError(InputDataError):
    """A query's scores are too far apart for a normalisation: a result would not be finite.

    Attributes:
        query: The query id.
        document: The document whose score has the largest magnitude in the list.
        score: That score.
    """

    def __init__(self, query: str, document: str, score: float, method: Normalization) -> None:
        super().__init__(
            f"score {score!r} of document {document!r} for query {query!r}: the "
            f"{method.value} normalisation of the query's scores overflows a double"
        )
        self.query, self.document, self.score = query, document, score


def _minmax(scores: Sequence[float]) -> list[float]:
    low, high = min(scores), max(scores)
    spread = high - low
    if not spread > 0.0:
        return [1.0] * len(scores)
    return [(s - low) / spread for s in scores]


def _zscore(scores: Sequence[float]) -> list[float]:
    n = len(scores)
    mean = math.fsum(scores) / n
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / n)
    if not std > 0.0:
        return [0.0] * n
    return [(s - mean) / std for s in scores]


def _sum(scores: Sequence[float]) -> list[float]:
    low = min(scores)
    shifted = [s - low for s in scores]
    total = math.fsum(shifted)
    if not total > 0.0:
        return [1.0 / len(scores)] * len(scores)
    return [s / total for s in shifted]


def _rank(scores: Sequence[float]) -> list[float]:
    n = len(scores)
    return [1.0 - i / n for i in range(n)]


_NORMALIZERS: dict[Normalization, Callable[[Sequence[float]], list[float]]] = {
    Normalization.MINMAX: _minmax,
    Normalization.ZSCORE: _zscore,
    Normalization.SUM: _sum,
    Normalization.RANK: _rank,
}


def check_depth(depth: int | None) -> int | None:
    """Return ``depth`` if it is ``None`` or a positive integer.

    Raises:
        InputDataError: ``depth`` is not a positive integer.
    """
    if depth is None:
        return None
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputDataError(f"depth must be a positive integer or None, got {depth!r}")
    return depth


def normalize_scores(
    scores: Sequence[float], method: Normalization | str = Normalization.MINMAX
) -> list[float]:
    """Normalise one list of scores given in trec_eval order (best first).

    Args:
        scores: ``n`` finite scores, sorted as trec_eval ranks them (only ``RANK`` uses the
            order).
        method: A :class:`Normalization` or its value.

    Returns:
        ``n`` normalised scores in the same order; ``[]`` for an empty list.
    """
    norm = parse_enum(Normalization, method, "norm")
    if len(scores) == 0:
        return []
    return _NORMALIZERS[norm](scores)


def top_documents(docs: Mapping[str, float], depth: int | None = None) -> list[tuple[str, float]]:
    """A query's top ``depth`` ``(doc_id, score)`` pairs in trec_eval order.

    The same as ``trec_order(docs)[:depth]`` (score descending, ties by docno descending), but
    only the documents scoring at least the ``depth``-th highest score are sorted.

    Args:
        docs: ``doc_id -> score`` for one query.
        depth: How many to keep; ``None``: all.

    Returns:
        ``(doc_id, score)`` pairs, best first.
    """
    depth = check_depth(depth)
    n = len(docs)
    if depth is not None and depth < n:
        values = np.fromiter(docs.values(), dtype=np.float64, count=n)
        threshold = float(np.partition(values, n - depth)[n - depth])
        pairs = [(score, doc) for doc, score in docs.items() if score >= threshold]
    else:
        pairs = [(score, doc) for doc, score in docs.items()]
    pairs.sort(reverse=True)
    return [(doc, score) for score, doc in pairs[:depth]]


def normalize_lists(
    lists: Mapping[str, Mapping[str, float]],
    method: Normalization | str = Normalization.MINMAX,
    depth: int | None = None,
) -> dict[str, dict[str, float]]:
    """:func:`normalize` on plain ``{query_id: {doc_id: score}}`` mappings.

    Returns:
        A new ``{query_id: {doc_id: normalised score}}``, documents in trec_eval order, cut
        at ``depth``; empty lists stay empty.

    Raises:
        ScoreOverflowError: a list whose normalised scores would not be finite.
    """
    norm = parse_enum(Normalization, method, "norm")
    normalizer = _NORMALIZERS[norm]
    depth = check_depth(depth)
    out: dict[str, dict[str, float]] = {}
    for qid, docs in lists.items():
        top = top_documents(docs, depth)
        if not top:
            out[qid] = {}
            continue
        try:
            values = normalizer([s for _, s in top])
        except OverflowError:  # z-score: a square or a sum beyond a double
            values = [math.nan]
        if not math.isfinite(sum(values)):  # the values are at most n in magnitude
            doc, score = max(top, key=lambda pair: abs(pair[1]))  # the first of equals
            raise ScoreOverflowError(qid, doc, score, norm)
        out[qid] = {doc: value for (doc, _), value in zip(top, values, strict=True)}
    return out


def normalize(
    run: Run, method: Normalization | str = Normalization.MINMAX, depth: int | None = None
) -> Run:
    """Normalise every query's list of a run (see the module docstring for the formulas).

    Args:
        run: The run; not modified.
        method: A :class:`Normalization` or its value (``"minmax"``, ``"zscore"``, ``"sum"``,
            ``"rank"``).
        depth: Keep and normalise only each query's top ``depth`` documents in trec_eval
            order; ``None`` keeps all.

    Returns:
        A new run with the same name and tag, cut at ``depth``; empty lists stay empty.

    Raises:
        InputDataError: an unknown ``method`` or a ``depth`` that is not a positive integer.
        ScoreOverflowError: a list whose normalised scores would not be finite.
    """
    return Run(normalize_lists(run.as_dict(), method, depth), name=run.name, tag=run.tag)
