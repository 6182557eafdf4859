"""A pool of runs: every (topic, document) that some run ranks within the pool depth, with its
rank in every run, as flat numpy arrays that the strategies and estimators share.

The pool's *items* are its (topic, document) pairs, numbered ``0 .. num_items - 1`` topic by
topic. Rankings are trec_eval's order (score descending, ties by docno descending), read through
:meth:`probrank.data.Run.ranking`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError

__all__ = ["Judgements", "Pool"]


@dataclass(frozen=True, eq=False)
class Pool:
    """The depth-``depth`` pool of ``runs`` over ``topics``.

    Attributes:
        run_names: The runs' names, `num_runs`.
        topics: The topics, `num_topics`.
        depth: Documents per run and topic.
        docs: Each item's document id, `num_items`.
        item_topic: Each item's topic index, `num_items`.
        topic_start: First item of each topic, `num_topics + 1` (the last is `num_items`).
        rankings: Each run's ranking per topic as item indices, `num_runs x num_topics x depth`,
            ``-1`` past the end of a short ranking.
        ranks: Each item's 1-based rank in each run, ``0`` where the run does not rank it
            within the depth, `num_runs x num_items`.
    """

    run_names: tuple[str, ...]
    topics: tuple[str, ...]
    depth: int
    docs: np.ndarray
    item_topic: np.ndarray
    topic_start: np.ndarray
    rankings: np.ndarray
    ranks: np.ndarray
    _index: dict[tuple[str, str], int] = field(repr=False, default_factory=dict)

    @classmethod
    def from_runs(
        cls,
        runs: Sequence[Run],
        *,
        depth: int = 100,
        topics: Sequence[str] | None = None,
    ) -> Pool:
        """Build the pool of ``runs`` cut at ``depth``.

        Args:
            runs: The runs (distinct names).
            depth: Documents per run and topic that enter the pool.
            topics: The topics to keep (default: every topic some run has), in this order.

        Raises:
            InputDataError: no run, a repeated run name, a depth below 1, no topic.
        """
        if not runs:
            raise InputDataError("a pool needs at least one run")
        if depth < 1:
            raise InputDataError(f"pool depth must be a positive integer, got {depth}")
        names = tuple(run.name for run in runs)
        if len(set(names)) != len(names):
            repeated = sorted({n for n in names if names.count(n) > 1})
            raise InputDataError(f"run names must be distinct, repeated: {', '.join(repeated)}")
        if topics is None:
            found: set[str] = set()
            for run in runs:
                found.update(run)
            topics = sorted(found, key=_topic_key)
        topics = tuple(topics)
        if not topics:
            raise InputDataError("the pool has no topic")
        lists = [[run.ranking(q, depth) if q in run else [] for q in topics] for run in runs]
        index: dict[tuple[str, str], int] = {}
        docs: list[str] = []
        item_topic: list[int] = []
        starts = [0]
        for t, qid in enumerate(topics):
            for r in range(len(runs)):
                for doc, _ in lists[r][t]:
                    if (qid, doc) not in index:
                        index[(qid, doc)] = len(docs)
                        docs.append(doc)
                        item_topic.append(t)
            starts.append(len(docs))
        rankings = np.full((len(runs), len(topics), depth), -1, dtype=np.int64)
        ranks = np.zeros((len(runs), len(docs)), dtype=np.int64)
        for r in range(len(runs)):
            for t, qid in enumerate(topics):
                items = [index[(qid, doc)] for doc, _ in lists[r][t]]
                rankings[r, t, : len(items)] = items
                ranks[r, items] = np.arange(1, len(items) + 1)
        return cls(
            run_names=names,
            topics=topics,
            depth=depth,
            docs=np.array(docs, dtype=object),
            item_topic=np.array(item_topic, dtype=np.int64),
            topic_start=np.array(starts, dtype=np.int64),
            rankings=rankings,
            ranks=ranks,
            _index=index,
        )

    @property
    def num_items(self) -> int:
        """Documents in the pool (all topics)."""
        return len(self.docs)

    @property
    def num_runs(self) -> int:
        """Runs in the pool."""
        return len(self.run_names)

    @property
    def num_topics(self) -> int:
        """Topics in the pool."""
        return len(self.topics)

    def item(self, topic: str, doc: str) -> int | None:
        """The item of ``doc`` for ``topic``, or None when it is not in the pool."""
        return self._index.get((topic, doc))

    def topic_items(self, t: int) -> np.ndarray:
        """The items of topic index ``t``, `n_t`."""
        return np.arange(self.topic_start[t], self.topic_start[t + 1])

    def grades_from(self, qrels: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        """Each item's grade in ``qrels`` (0 where the qrels do not judge it), `num_items`."""
        grades = np.zeros(self.num_items, dtype=np.int64)
        for (qid, doc), i in self._index.items():
            judged = qrels.get(qid)
            if judged is not None:
                grades[i] = judged.get(doc, 0)
        return grades

    def unpooled_relevant(self, qrels: Mapping[str, Mapping[str, int]], level: int) -> np.ndarray:
        """Relevant documents (grade >= ``level``) of ``qrels`` outside the pool, `num_topics`."""
        counts = np.zeros(self.num_topics, dtype=np.int64)
        for t, qid in enumerate(self.topics):
            for doc, grade in qrels.get(qid, {}).items():
                if grade >= level and (qid, doc) not in self._index:
                    counts[t] += 1
        return counts


class Judgements:
    """The judgements made so far on a pool, in judging order.

    Args:
        pool: The pool judged.
    """

    def __init__(self, pool: Pool):
        self.pool = pool
        self.order: list[int] = []
        self.grades = np.full(pool.num_items, -1, dtype=np.int64)

    @property
    def judged(self) -> np.ndarray:
        """Whether each item is judged, `num_items` (bool)."""
        return self.grades >= 0

    def __len__(self) -> int:
        return len(self.order)

    def add(self, items: Sequence[int] | np.ndarray, grades: Sequence[int] | np.ndarray) -> None:
        """Record the grades of ``items`` (in this order); an item judged twice is an error."""
        for i, g in zip(np.asarray(items).tolist(), np.asarray(grades).tolist(), strict=True):
            if self.grades[i] >= 0:
                raise InputDataError(f"item {i} is judged twice")
            self.grades[i] = max(int(g), 0)
            self.order.append(int(i))

    @classmethod
    def from_qrels(cls, pool: Pool, qrels: Mapping[str, Mapping[str, int]]) -> Judgements:
        """The judgements of ``qrels`` on the pool's items (qrels lines outside the pool are
        ignored), in qrels order."""
        judgements = cls(pool)
        items: dict[int, int] = {}
        for qid, docs in qrels.items():
            for doc, grade in docs.items():
                i = pool.item(qid, doc)
                if i is not None and i not in items:
                    items[i] = grade
        judgements.add(list(items), list(items.values()))
        return judgements

    def to_qrels(self, name: str = "judged") -> Qrels:
        """The judgements as :class:`Qrels`, topics and documents in judging order."""
        data: dict[str, dict[str, int]] = {}
        for i in self.order:
            qid = self.pool.topics[self.pool.item_topic[i]]
            data.setdefault(qid, {})[str(self.pool.docs[i])] = int(self.grades[i])
        return Qrels(data, name=name)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the judgements as TREC qrels, one line per judgement in judging order."""
        from probrank.data._io import atomic_write

        with atomic_write(path) as out:
            for i in self.order:
                qid = self.pool.topics[self.pool.item_topic[i]]
                out.write(f"{qid} 0 {self.pool.docs[i]} {int(self.grades[i])}\n")


def _topic_key(qid: str) -> tuple[int, int | str]:
    return (0, int(qid)) if qid.isdigit() else (1, qid)
