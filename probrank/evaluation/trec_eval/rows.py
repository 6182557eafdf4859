"""Many rankings at once: the (run, topic) rankings of one or more runs as one padded matrix.

Row ``i`` holds the relevance values of one topic's retrieved documents in trec_eval order
(see :mod:`probrank.evaluation.trec_eval.ranking`), ``num_ret[i]`` of them, then :data:`PAD`
to the width of the longest row. :data:`PAD` is below every relevance value, so it is never
relevant, judged, unjudged or positive, and the measures of
:mod:`probrank.evaluation.trec_eval.vectorised` read the matrix as they would read each row
cut at its length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from probrank.evaluation.trec_eval.ranking import JudgedTopic, RankedTopic

__all__ = ["CELLS", "PAD", "RankedRows", "ranked_chunks"]

PAD = -3
"""Relevance value of the cells after a row's last document."""
CELLS = 1 << 24
"""Cells of one padded matrix beyond which rows are taken in chunks of similar lengths (a
long ranking among short ones would otherwise pad every row to its length)."""


class RankedRows:
    """Relevance values of many rankings, best first, padded to one width.

    Args:
        rels: `num_rows x width` int64 relevance values, :data:`PAD` after each row's end.
        num_ret: `num_rows` int64: documents ranked in each row.
        judged: The judgements of each row's topic (`num_rows` of them).

    Attributes:
        rels, num_ret, judged: As given.
    """

    def __init__(self, rels: np.ndarray, num_ret: np.ndarray, judged: Sequence[JudgedTopic]):
        self.rels = rels
        self.num_ret = num_ret
        self.judged = list(judged)
        self._relevant: dict[int, np.ndarray] = {}
        self._cumulative: dict[int, np.ndarray] = {}
        self._num_rel: dict[int, np.ndarray] = {}

    @classmethod
    def from_flat(
        cls, flat: np.ndarray, num_ret: np.ndarray, judged: Sequence[JudgedTopic]
    ) -> RankedRows:
        """Rows from their values one after the other.

        Args:
            flat: `sum(num_ret)` int64 relevance values, row after row, each best first.
            num_ret: `num_rows` int64 row lengths.
            judged: Each row's judgements.
        """
        width = int(num_ret.max()) if num_ret.size else 0
        rels = np.full((num_ret.size, width), PAD, dtype=np.int64)
        rels[np.arange(width) < num_ret[:, None]] = flat
        return cls(rels, num_ret, judged)

    @property
    def width(self) -> int:
        """The number of columns."""
        return int(self.rels.shape[1])

    def __len__(self) -> int:
        return int(self.rels.shape[0])

    def topic(self, row: int) -> RankedTopic:
        """Row ``row`` as one :class:`RankedTopic` (for the measures computed topic by topic)."""
        return RankedTopic(self.judged[row], self.rels[row, : int(self.num_ret[row])])

    def relevant(self, level: int) -> np.ndarray:
        """`num_rows x width` bool: judged with a grade >= ``level`` (cached per level)."""
        mask = self._relevant.get(level)
        if mask is None:
            mask = self._relevant[level] = self.rels >= max(level, 0)
        return mask

    def cumulative(self, level: int) -> np.ndarray:
        """`num_rows x width` int64: relevant documents within the top ``j + 1``."""
        counts = self._cumulative.get(level)
        if counts is None:
            counts = self._cumulative[level] = self.relevant(level).cumsum(axis=1, dtype=np.int64)
        return counts

    def num_rel(self, level: int) -> np.ndarray:
        """`num_rows` int64: each topic's judged documents with grade >= ``level``."""
        counts = self._num_rel.get(level)
        if counts is None:
            counts = np.fromiter((j.num_rel(level) for j in self.judged), np.int64, len(self))
            self._num_rel[level] = counts
        return counts

    def relevant_within(self, level: int, k: np.ndarray | int) -> np.ndarray:
        """`num_rows` int64: relevant documents among each row's top ``min(k, num_ret)``.

        Args:
            level: The relevance level.
            k: A cut-off, or `num_rows` int64 cut-offs (0 or less: none).
        """
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), (len(self),))
        if not self.width:
            return np.zeros(len(self), dtype=np.int64)
        column = np.minimum(k, self.width) - 1
        inside = column >= 0
        counts = self.cumulative(level)[np.arange(len(self)), np.maximum(column, 0)]
        return np.where(inside, counts, 0)

    def num_rel_ret(self, level: int) -> np.ndarray:
        """`num_rows` int64: relevant documents retrieved."""
        return self.relevant_within(level, self.width)


def ranked_chunks(
    flat: np.ndarray, num_ret: np.ndarray, judged: Sequence[JudgedTopic], cells: int = CELLS
) -> list[tuple[np.ndarray, RankedRows]]:
    """The rankings as padded matrices of at most about ``cells`` cells.

    Args:
        flat: `sum(num_ret)` int64 relevance values, row after row, each best first.
        num_ret: `num_rows` int64 row lengths.
        judged: Each row's judgements.
        cells: The size above which the rows are split, shortest first.

    Returns:
        ``(rows, matrix)`` pairs: the `num_chunk_rows` int64 indices of the rows a matrix
        holds, in its order; together they hold every row once.
    """
    count = int(num_ret.size)
    if count * int(num_ret.max(initial=0)) <= cells:
        return [(np.arange(count), RankedRows.from_flat(flat, num_ret, judged))]
    starts = np.concatenate(([0], np.cumsum(num_ret)[:-1])).astype(np.int64)
    order = np.argsort(num_ret, kind="stable")
    chunks: list[tuple[np.ndarray, RankedRows]] = []
    first = 0
    while first < count:
        last = first + 1  # rows first..last-1, the longest last: its length sets the width
        while last < count and (last + 1 - first) * int(num_ret[order[last]]) <= cells:
            last += 1
        rows = order[first:last]
        lengths = num_ret[rows]
        offsets = np.repeat(starts[rows] - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        values = flat[offsets + np.arange(int(lengths.sum()))]
        chunks.append((rows, RankedRows.from_flat(values, lengths, [judged[i] for i in rows])))
        first = last
    return chunks
