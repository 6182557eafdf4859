"""First stages: anything that turns topics into a ranked :class:`~probrank.data.trec.Run`.

Two kinds (:class:`FirstStageKind`):

* ``bm25s`` (the default): :class:`~probrank.retrieval.bm25.BM25Index`, pure Python with
  numpy and scipy, index saved to disk and reused;
* ``pyterrier``: any PyTerrier retrieval transformer (``pt.terrier.Retriever`` with Java and
  the Terrier jars, ``pyterrier_pisa``, a dense retriever, a whole pipeline ...), called on a
  ``qid, query`` DataFrame (:class:`PyTerrierFirstStage`). PyTerrier 1.x imports without
  Java, but its own BM25 (``pt.terrier.Retriever``) starts a JVM and downloads Terrier's jars
  on first use; on a machine without them, use ``bm25s`` (also inside PyTerrier pipelines:
  ``probrank.integrations.pyterrier.BM25Retriever``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from probrank.data.trec import Run
from probrank.exceptions import InputDataError

__all__ = ["FirstStage", "FirstStageKind", "PyTerrierFirstStage", "run_from_frame"]


class FirstStageKind(str, Enum):
    """Which first stage retrieves the candidates."""

    BM25S = "bm25s"
    """BM25 with bm25s (:class:`~probrank.retrieval.bm25.BM25Index`)."""
    PYTERRIER = "pyterrier"
    """A PyTerrier transformer (:class:`PyTerrierFirstStage`; the ``pyterrier`` extra)."""


@runtime_checkable
class FirstStage(Protocol):
    """What a first stage offers: ``search(topics, k=..., name=...) -> Run``."""

    def search(self, topics: Mapping[str, str], *, k: int = 1000, name: str = "bm25") -> Run: ...


def run_from_frame(frame: Any, *, name: str = "run") -> Run:
    """A run from a PyTerrier-style results DataFrame (columns ``qid, docno, score``).

    Raises:
        InputDataError: a missing column, a non-finite score or a document twice for a topic.
    """
    columns = [str(c) for c in getattr(frame, "columns", [])]
    missing = [c for c in ("qid", "docno", "score") if c not in columns]
    if missing:
        raise InputDataError(f"results need columns qid, docno, score; missing {missing}")
    out: dict[str, dict[str, float]] = {}
    for qid, docno, score in zip(frame["qid"], frame["docno"], frame["score"], strict=True):
        value = float(score)
        if not math.isfinite(value):
            raise InputDataError(f"score of {docno!r} for topic {qid!r} is {value}")
        row = out.setdefault(str(qid), {})
        if str(docno) in row:
            raise InputDataError(f"document {docno!r} is ranked twice for topic {qid!r}")
        row[str(docno)] = value
    return Run(out, name=name, tag=name)


class PyTerrierFirstStage:
    """A PyTerrier transformer as a first stage.

    Args:
        transformer: A ``pyterrier.Transformer`` (or anything with ``transform(frame)``)
            that maps a ``qid, query`` DataFrame to ``qid, docno, score`` results.

    Example::

        bm25 = pt.terrier.Retriever(index, wmodel="BM25")      # needs Java and Terrier
        run = PyTerrierFirstStage(bm25).search(topics, k=1000)
    """

    def __init__(self, transformer: Any) -> None:
        if not callable(getattr(transformer, "transform", None)):
            raise InputDataError(
                f"a PyTerrier first stage needs a transformer with transform(), got {transformer!r}"
            )
        self.transformer = transformer

    def search(self, topics: Mapping[str, str], *, k: int = 1000, name: str = "pyterrier") -> Run:
        """Run the transformer on ``topics`` and keep each topic's top ``k`` documents."""
        import pandas as pd

        frame = pd.DataFrame({"qid": list(topics), "query": list(topics.values())})
        results = self.transformer.transform(frame)
        return run_from_frame(results, name=name).truncate(k)
