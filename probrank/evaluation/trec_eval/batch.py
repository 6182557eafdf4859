"""Many runs ranked at once: trec_eval's ordering and relevance lookup on Arrow columns.

:func:`rank_columns` takes runs read together by :func:`probrank.data.trec_columns.read_batch`
and gives the relevance values of every (run, topic) ranking, without a Python object per
document:

* each distinct query id is looked up once among the qrels topics (a hash lookup), and each
  line gets its topic's index in trec_eval's topic order; lines of topics the qrels lack are
  dropped, as trec_eval ignores them;
* each distinct document id is looked up once among the judged documents (a hash lookup), and
  each (topic, document) pair gets, from a table of the judgements (or a binary search of
  integer keys), the relevance value :meth:`RankedTopic.rank` would give it;
* each run's topics are ordered by score descending, ties by docno descending: when a file
  already lists every topic's lines together in that order (as most do) only the topics are
  put in order and the tied lines sorted again; else one sort orders every ranking. Document
  ids are compared as their ranks among the distinct ids, which Arrow sorts once byte by byte
  (``strcmp``'s order for these NUL-free ASCII ids); scores were read with ``-0.0`` as
  ``0.0``, which C compares as equal;
* ``-M`` keeps each ranking's top ``depth``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from probrank.data.trec_columns import (
    ColumnBatch,
    arrow,
    arrow_numbers,
    arrow_strings,
    compute,
    numbers,
    take,
    valid,
)
from probrank.evaluation.trec_eval.ranking import NOT_IN_POOL, JudgedTopic

__all__ = ["DENSE_KEYS", "QrelsIndex", "rank_columns"]

DENSE_KEYS = 1 << 22
"""Largest ``topics x judged documents`` looked up in a dense table (32 MB)."""


class QrelsIndex:
    """The judgements as sorted integer keys ``topic index * num_docs + document index``.

    Args:
        order: The qrels topics in trec_eval's order.
        judged: The prepared judgements of each topic of ``order``.

    Attributes:
        topics: The topics as an Arrow string array.
        docs: Every judged document once, as an Arrow string array.
        keys: `num_judgements` int64 keys, ascending.
        values: `num_judgements` int64 relevance values of ``keys``.
    """

    def __init__(self, order: Sequence[str], judged: Mapping[str, JudgedTopic]):
        grades = [judged[qid].grades for qid in order]
        sizes = np.fromiter(map(len, grades), np.int64, len(grades))
        docs = arrow_strings([doc for topic in grades for doc in topic])
        encoded = compute("dictionary_encode", docs)
        self.topics = arrow_strings(list(order))
        self.docs = encoded.dictionary
        width = max(len(self.docs), 1)
        keys = np.repeat(np.arange(len(order), dtype=np.int64) * width, sizes)
        keys += numbers(encoded.indices, np.int32)
        values = np.fromiter(
            (g for topic in grades for g in topic.values()), np.int64, int(sizes.sum())
        )
        ordered = np.argsort(keys, kind="stable")
        self.keys = keys[ordered]
        self.values = values[ordered]
        size = len(order) * width
        self._dense: np.ndarray | None = None
        if size <= DENSE_KEYS:  # a table indexed by key: no binary search
            self._dense = np.full(size, NOT_IN_POOL, dtype=np.int64)
            self._dense[self.keys] = self.values

    def lookup(self, codes: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """`num_docs` int64 relevance values of documents ``docs`` of topics ``codes``,
        :data:`NOT_IN_POOL` when not judged.

        Args:
            codes: `num_docs` int64 topic indices (into :attr:`topics`).
            docs: `num_docs` int64 document indices (into :attr:`docs`), -1: not judged in
                any topic.
        """
        hit = docs >= 0
        keys = codes * max(len(self.docs), 1) + np.maximum(docs, 0)
        if self._dense is not None:
            return np.where(hit, self._dense[keys], NOT_IN_POOL)
        at = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        if self.keys.size:
            hit &= self.keys[at] == keys
        else:
            hit[:] = False
        return np.where(hit, self.values[at] if self.values.size else NOT_IN_POOL, NOT_IN_POOL)


def _positions(values: Any, found_in: Any) -> np.ndarray:
    """`len(values)` int64: the index of each Arrow string of ``values`` in ``found_in``, or
    -1."""
    found = compute("index_in", values, value_set=found_in)
    return np.where(valid(found), numbers(found, np.int32), -1).astype(np.int64)


def rank_columns(
    index: QrelsIndex, batch: ColumnBatch, depth: int | None = None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The rankings of the topics of a batch's runs, as relevance values in trec_eval order.

    Args:
        index: The judgements.
        batch: Runs read as columns together.
        depth: trec_eval's ``-M``.

    Returns:
        ``(codes, flat, num_ret)``: for each run, the `num_topics` int64 topic indices it ranks
        (ascending); the `sum(num_ret)` int64 relevance values of every ranking, run after run
        and topic after topic, best first; and the `sum(num_topics)` int64 ranking lengths.
    """
    topics = len(index.topics)
    code = _positions(batch.qid_values, index.topics)[batch.qid_codes]
    doc = _positions(batch.doc_values, index.docs)[batch.doc_codes]
    run_of = np.repeat(np.arange(len(batch.sizes), dtype=np.int64), batch.sizes)
    score, doc_codes = batch.score, batch.doc_codes
    keep = code >= 0
    if not keep.all():
        kept = np.flatnonzero(keep)
        code, doc, run_of, score = code[kept], doc[kept], run_of[kept], score[kept]
        doc_codes = doc_codes[kept]
    group = run_of * topics + code
    order, heads, num_ret = _trec_order(group, score, _DocnoOrder(batch.doc_values, doc_codes))
    rels = index.lookup(code, doc)[order]
    if depth is not None and int(num_ret.max(initial=0)) > depth:
        starts = np.cumsum(num_ret) - num_ret
        position = np.arange(rels.size) - np.repeat(starts, num_ret)
        rels = rels[position < depth]
        num_ret = np.minimum(num_ret, depth)
    row_run, row_code = np.divmod(heads, topics)
    bounds = np.searchsorted(row_run, np.arange(len(batch.sizes) + 1))
    codes = [row_code[a:b] for a, b in pairwise(bounds.tolist())]
    return codes, rels, num_ret


class _DocnoOrder:
    """The lines' document ids, for ordering: as ranks in their descending (``strcmp``) order
    (the distinct ids, the batch's dictionary, sorted once), or as the strings of a few lines.
    Arrow compares strings byte by byte, as ``strcmp`` does for these NUL-free ASCII ids.

    Args:
        values: The distinct document ids (Arrow strings).
        codes: `n` int64: each line's index into ``values``.
    """

    def __init__(self, values: Any, codes: np.ndarray):
        self.values = values
        self.codes = codes
        self._rank: np.ndarray | None = None

    def descending(self) -> np.ndarray:
        """`n` int64 ranks of the lines' document ids: smaller for a larger id."""
        if self._rank is None:
            order = _sort_indices([self.values], [("docno", "descending")])
            self._rank = np.empty(len(self.values), dtype=np.int64)
            self._rank[order] = np.arange(len(self.values))
        return self._rank[self.codes]

    def strings(self, lines: np.ndarray) -> Any:
        """The document ids of ``lines`` (Arrow strings)."""
        return take(self.values, arrow_numbers(self.codes[lines]))


def _trec_order(
    group: np.ndarray, score: np.ndarray, docno: _DocnoOrder
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lines ordered by ``group`` ascending, then score descending, then docno descending.

    When each group's lines are together with their scores descending (as most files list
    them), the groups are moved as blocks (no sort of the lines), and only the lines of tied
    scores are sorted again (by docno); else one sort of all three keys.

    Returns:
        ``(order, heads, sizes)``: `n` int64 line indices in that order, and the groups
        (ascending) and their sizes (`num_groups` int64 each).
    """
    same = group[1:] == group[:-1]
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1)) if group.size else group[:0]
    keys = group[starts]
    blocks = np.argsort(keys, kind="stable")
    heads = keys[blocks]
    together = not (heads[1:] == heads[:-1]).any()  # no group in two places
    if together and not (same & (score[1:] > score[:-1])).any():
        sizes = np.diff(starts, append=group.size)[blocks]
        moved = starts[blocks] - (np.cumsum(sizes) - sizes)  # (old start - new start)
        order = np.repeat(moved, sizes) + np.arange(group.size)
        if (same & (score[1:] == score[:-1])).any():
            _sort_ties(order, np.repeat(heads, sizes), score[order], docno)
        return order, heads, sizes
    order = np.lexsort((docno.descending(), -score, group))
    ordered = group[order]
    starts = np.flatnonzero(np.diff(ordered, prepend=-1))
    return order, ordered[starts], np.diff(starts, append=ordered.size)


def _sort_ties(order: np.ndarray, group: np.ndarray, score: np.ndarray, docno: _DocnoOrder) -> None:
    """Order each run of equal ``(group, score)`` of the lines ``order`` (in that order) by
    docno descending, in place."""
    tie = (group[1:] == group[:-1]) & (score[1:] == score[:-1])
    member = np.concatenate(([False], tie)) | np.concatenate((tie, [False]))
    where = np.flatnonzero(member)
    segment = np.cumsum(np.concatenate(([True], ~tie)))[where]
    lines = order[where]
    keys = [("segment", "ascending"), ("docno", "descending")]
    order[where] = lines[_sort_indices([arrow_numbers(segment), docno.strings(lines)], keys)]


def _sort_indices(columns: list[Any], keys: list[tuple[str, str]]) -> np.ndarray:
    """`n` int64: the order of the rows of ``columns`` (Arrow arrays) by ``keys``
    (``(column name, order)``, the columns named as the keys in order)."""
    pa = arrow()
    if pa is None:  # pragma: no cover - the batch was read with it
        raise ImportError("pyarrow is needed to rank runs read as columns")
    table = pa.Table.from_arrays(columns, names=[name for name, _ in keys])
    return numbers(compute("sort_indices", table, sort_keys=keys), np.uint64).astype(np.int64)
