"""What ``probrank serve --pool`` judges: the topics, the runs' pool and the documents' texts.

:func:`load_pool_topics` reads a folder of TREC runs (every file in it that does not start with
``.``, in name order; ``.gz`` transparently; a run's name is its file name), a TREC topics file
and the documents' texts (a TREC ``<DOC>`` file, or JSON lines ``{"docno", "text"}``), and
returns one :class:`PoolTopic` per topic that some run ranks: the documents of its depth-``depth``
pool, in the order :meth:`probrank.pooling.Pool.from_runs` numbers them. Everything is
checked before the server binds its port: a missing folder, a file that is not a run, a run
topic without a text, a pooled document without a text.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from probrank.data.topics import read_topics
from probrank.data.trec import Run
from probrank.exceptions import InputDataError
from probrank.pooling.pool import Pool
from probrank.retrieval.collection import Collection

__all__ = ["PoolTopic", "load_pool_topics", "read_runs", "topics_digest"]


@dataclass(frozen=True)
class PoolTopic:
    """One topic to judge.

    Attributes:
        qid: The topic id.
        query: The topic's text.
        pool: The depth-k pool of the runs on this topic alone.
        texts: The text of each pooled document, ``{docno: text}``.
    """

    qid: str
    query: str
    pool: Pool
    texts: dict[str, str]

    @property
    def docnos(self) -> tuple[str, ...]:
        """The pooled documents, in pool order."""
        return tuple(str(doc) for doc in self.pool.docs)

    def __len__(self) -> int:
        return self.pool.num_items


def read_runs(folder: str | os.PathLike[str]) -> list[Run]:
    """Every run in ``folder`` (files not starting with ``.``, in name order).

    Raises:
        InputDataError: a missing folder, a file instead of one, no run in it, a malformed
            run (naming the file and line), two runs of the same name.
    """
    path = Path(folder)
    if not path.exists():
        raise InputDataError("no such folder of runs", path=path)
    if not path.is_dir():
        raise InputDataError("--pool takes a folder of TREC runs, not a file", path=path)
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise InputDataError("the folder holds no run", path=path)
    runs = [Run.read(file) for file in files]
    names = [run.name for run in runs]
    for name in names:
        if names.count(name) > 1:
            raise InputDataError(f"two runs are named {name!r} (a.run and a.run.gz?)", path=path)
    return runs


def _collection(documents: str | os.PathLike[str]) -> Collection:
    name = Path(documents).name.lower().removesuffix(".gz")
    if not Path(documents).is_file():
        raise InputDataError("no such file of documents", path=documents)
    if name.endswith((".jsonl", ".json")):
        return Collection.from_jsonl(documents)
    return Collection.from_trec(documents, progress=False)


def topics_digest(topics: Sequence[PoolTopic]) -> str:
    """SHA-256 of every topic's id and text, in order (the database's identity: runs, depth
    and strategy may change between starts, the topics may not)."""
    digest = hashlib.sha256()
    for topic in topics:
        digest.update(json.dumps([topic.qid, topic.query], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def load_pool_topics(
    runs: str | os.PathLike[str],
    topics: str | os.PathLike[str],
    documents: str | os.PathLike[str],
    *,
    depth: int = 20,
) -> list[PoolTopic]:
    """The topics of the runs in folder ``runs``, each with its depth-``depth`` pool.

    Args:
        runs: A folder of TREC runs.
        topics: A TREC topics file (``<top>`` blocks or ``qid<TAB>text`` lines).
        documents: The documents' texts: a TREC ``<DOC>`` file or JSON lines.
        depth: Documents per run and topic in the pool.

    Returns:
        One topic per topic of the file that some run ranks, in the file's order.

    Raises:
        InputDataError: see :func:`read_runs`; a malformed topics or documents file, a run
            topic without a text, a pooled document without a text, no topic to judge.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputDataError(f"--depth must be a positive integer, got {depth!r}")
    found = read_runs(runs)
    texts = read_topics(topics)
    ranked = [q for run in found for q in run if run.ranking(q, depth)]
    for qid in ranked:
        if qid not in texts:
            raise InputDataError(f"a run ranks documents for topic {qid!r}, which has no text")
    collection = _collection(documents)
    out = []
    for qid in (q for q in texts if q in set(ranked)):
        pool = Pool.from_runs(found, depth=depth, topics=[qid])
        bodies = {}
        for doc in pool.docs:
            body = collection.get(str(doc))
            if body is None:
                raise InputDataError(
                    f"no text for document {doc!r} (topic {qid!r})", path=documents
                )
            bodies[str(doc)] = body
        out.append(PoolTopic(qid, texts[qid], pool, bodies))
    if not out:
        raise InputDataError("the runs rank no document for any topic", path=runs)
    return out
