"""Many runs ranked at once: trec_eval's ordering and relevance lookup on Arrow columns.

:func:`rank_columns` takes runs read by :func:`probrank.data.trec_columns.read_run_columns`
and gives the relevance values of every (run, topic) ranking, without a Python object per
document:

* each query id becomes its topic's index in trec_eval's topic order (a hash lookup); lines of
  topics the qrels lack are dropped, as trec_eval ignores them;
* each document id becomes its index among the judged documents (a hash lookup), and each
  (topic, document) pair is found among the judgements (a binary search of integer keys) and
  gets the relevance value :meth:`RankedTopic.rank` would give it;
* one sort orders every run's topics by score descending, ties by docno descending (Arrow
  compares strings byte by byte, which is ``strcmp``'s order for these NUL-free ASCII ids);
  scores were read with ``-0.0`` as ``0.0``, which C compares as equal;
* ``-M`` keeps each ranking's top ``depth``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from probrank.data.trec_columns import (
    RunColumns,
    arrow,
    arrow_numbers,
    arrow_strings,
    compute,
    numbers,
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
        vocabulary: dict[str, int] = {}
        topic_codes: list[int] = []
        doc_codes: list[int] = []
        values: list[int] = []
        for code, qid in enumerate(order):
            grades = judged[qid].grades
            topic_codes.extend([code] * len(grades))
            doc_codes.extend(vocabulary.setdefault(doc, len(vocabulary)) for doc in grades)
            values.extend(grades.values())
        self.topics = arrow_strings(list(order))
        self.docs = arrow_strings(list(vocabulary))
        keys = np.asarray(topic_codes, dtype=np.int64) * max(len(vocabulary), 1)
        keys += np.asarray(doc_codes, dtype=np.int64)
        ordered = np.argsort(keys, kind="stable")
        self.keys = keys[ordered]
        self.values = np.asarray(values, dtype=np.int64)[ordered]
        size = len(order) * max(len(vocabulary), 1)
        self._dense: np.ndarray | None = None
        if size <= DENSE_KEYS:  # a table indexed by key: no binary search
            self._dense = np.full(size, NOT_IN_POOL, dtype=np.int64)
            self._dense[self.keys] = self.values

    def lookup(self, codes: np.ndarray, docno: Any) -> np.ndarray:
        """`num_docs` int64 relevance values of documents ``docno`` (Arrow strings) of topics
        ``codes`` (`num_docs` int64), :data:`NOT_IN_POOL` when not judged."""
        found = compute("index_in", docno, value_set=self.docs)
        hit = valid(found)
        doc = np.where(hit, numbers(found, np.int32), 0)
        keys = codes * max(len(self.docs), 1) + doc
        if self._dense is not None:
            return np.where(hit, self._dense[keys], NOT_IN_POOL)
        at = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        if self.keys.size:
            hit &= self.keys[at] == keys
        else:
            hit[:] = False
        return np.where(hit, self.values[at] if self.values.size else NOT_IN_POOL, NOT_IN_POOL)


def rank_columns(
    index: QrelsIndex, runs: Sequence[RunColumns], depth: int | None = None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The rankings of ``runs``' topics, as relevance values in trec_eval order.

    Args:
        index: The judgements.
        runs: Runs read as columns.
        depth: trec_eval's ``-M``.

    Returns:
        ``(codes, flat, num_ret)``: for each run, the `num_topics` int64 topic indices it ranks
        (ascending); the `sum(num_ret)` int64 relevance values of every ranking, run after run
        and topic after topic, best first; and the `sum(num_topics)` int64 ranking lengths.
    """
    pa = arrow()
    if pa is None:  # pragma: no cover - the index was built, so pyarrow is here
        raise ImportError("pyarrow is needed to rank runs read as columns")
    sizes = [len(run.score) for run in runs]
    qid = pa.concat_arrays([run.qid for run in runs])
    found = compute("index_in", qid, value_set=index.topics)
    code = numbers(found, np.int32).astype(np.int64)
    keep = valid(found)
    run_of = np.repeat(np.arange(len(runs), dtype=np.int64), sizes)
    docno: Any = pa.concat_arrays([run.docno for run in runs])
    score = np.concatenate([run.score for run in runs])
    if not keep.all():
        kept = np.flatnonzero(keep)
        code, run_of, score = code[kept], run_of[kept], score[kept]
        docno = docno.take(arrow_numbers(kept))
    rels = index.lookup(code, docno)
    group = run_of * len(index.topics) + code
    table = pa.Table.from_arrays(
        [arrow_numbers(group), arrow_numbers(score), docno], names=["group", "score", "docno"]
    )
    order = numbers(
        compute(
            "sort_indices",
            table,
            sort_keys=[("group", "ascending"), ("score", "descending"), ("docno", "descending")],
        ),
        np.uint64,
    )
    rels, group = rels[order], group[order]
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    num_ret = np.diff(starts, append=group.size)
    if depth is not None and int(num_ret.max(initial=0)) > depth:
        position = np.arange(group.size) - np.repeat(starts, num_ret)
        rels = rels[position < depth]
        num_ret = np.minimum(num_ret, depth)
    row_run, row_code = np.divmod(group[starts], len(index.topics))
    bounds = np.searchsorted(row_run, np.arange(len(runs) + 1))
    codes = [row_code[a:b] for a, b in pairwise(bounds.tolist())]
    return codes, rels, num_ret
