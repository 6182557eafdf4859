"""TREC relevance judgements (:class:`Qrels`) and ranked runs (:class:`Run`).

Readers follow trec_eval: whitespace-separated columns, gzip read transparently, anything after
the sixth column of a run line ignored, the rank column ignored (trec_eval re-sorts by score,
ties broken by docno in descending order). Everything else is strict: a malformed file raises
:class:`~probrank.exceptions.InputDataError` naming the file, the 1-based line and the value.

Both classes are read-only mappings ``query_id -> {doc_id: value}``; constructors copy their
input, and no method mutates the object or its arguments.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from types import MappingProxyType

from probrank._options import parse_enum
from probrank.data._io import atomic_write, read_text_lines
from probrank.exceptions import InputDataError

__all__ = ["OnDuplicate", "Qrels", "Run", "trec_order"]

# A decimal number as C's strtod reads it, without hex, inf or nan (which trec_eval never sees
# in a valid run) and without Python-only spellings such as underscores.
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT = re.compile(r"[+-]?\d+")


class OnDuplicate(str, Enum):
    """What :meth:`Run.read` does when a (query, document) pair appears twice."""

    ERROR = "error"
    """Raise :class:`InputDataError` naming both lines (trec_eval refuses such runs too)."""
    MAX = "max"
    """Keep the higher score."""
    FIRST = "first"
    """Keep the score on the earlier line."""


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents of one query in trec_eval's evaluation order.

    trec_eval sorts by score, descending, and breaks ties by docno in descending string order.

    Args:
        scores: ``doc_id -> score`` for one query.

    Returns:
        ``(doc_id, score)`` pairs, best first.
    """
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def _first_line(lines: list[str], qid: str, doc: str) -> int:
    """1-based number of the first run line that ranks ``doc`` for ``qid``."""
    for number, text in enumerate(lines, start=1):
        parts = text.split(maxsplit=6)
        if len(parts) >= 6 and parts[0] == qid and parts[2] == doc:
            return number
    return 0


def _parse_score(token: str, path: Path, line: int) -> float:
    if _FLOAT.fullmatch(token) is None:
        raise InputDataError(f"score {token!r} is not a number", path=path, line=line)
    value = float(token)
    if not math.isfinite(value):
        raise InputDataError(f"score {token!r} is not finite", path=path, line=line)
    return value


class Qrels(Mapping[str, Mapping[str, int]]):
    """Relevance judgements: ``query_id -> {doc_id: grade}``.

    Args:
        judgements: ``query_id -> {doc_id: grade}``; grades are integers, negative grades mean
            judged non-relevant (as in trec_eval). Copied.
        name: A label for messages and tables.
    """

    def __init__(self, judgements: Mapping[str, Mapping[str, int]], name: str = "qrels"):
        self._data: dict[str, dict[str, int]] = {
            str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in judgements.items()
        }
        self.name = name

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Qrels:
        """Read a TREC qrels file: ``query_id iteration doc_id grade`` per line (``.gz`` too).

        Raises:
            InputDataError: empty file, a line without exactly four columns, a non-integer
                grade, a document judged twice for one query, or undecodable bytes.
        """
        path = Path(path)
        data: dict[str, dict[str, int]] = {}
        seen_line: dict[tuple[str, str], int] = {}
        for number, text in enumerate(read_text_lines(path), start=1):
            parts = text.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputDataError(
                    f"expected 4 columns (query iteration doc grade), found {len(parts)}: "
                    f"{text.strip()[:80]!r}",
                    path=path,
                    line=number,
                )
            qid, _, doc, grade = parts
            if _INT.fullmatch(grade) is None:
                raise InputDataError(
                    f"relevance grade {grade!r} is not an integer", path=path, line=number
                )
            docs = data.setdefault(qid, {})
            if doc in docs:
                raise InputDataError(
                    f"document {doc!r} judged twice for query {qid!r} "
                    f"(first on line {seen_line[(qid, doc)]})",
                    path=path,
                    line=number,
                )
            docs[doc] = int(grade)
            seen_line[(qid, doc)] = number
        if not data:
            raise InputDataError("empty qrels file: no judgements", path=path)
        return cls(data, name=_stem(path))

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the judgements atomically in TREC qrels format (gzip if the name ends ``.gz``)."""
        with atomic_write(path) as out:
            for qid, docs in self._data.items():
                for doc, grade in docs.items():
                    out.write(f"{qid} 0 {doc} {grade}\n")

    def num_relevant(self, relevance_level: int = 1) -> dict[str, int]:
        """Number of documents with grade ``>= relevance_level`` for each query."""
        return {
            q: sum(1 for g in docs.values() if g >= relevance_level)
            for q, docs in self._data.items()
        }

    def as_dict(self) -> dict[str, dict[str, int]]:
        """The underlying ``dict`` of dicts, shared, not copied: treat it as read-only."""
        return self._data

    def to_dict(self) -> dict[str, dict[str, int]]:
        """A deep copy as plain dicts."""
        return {q: dict(docs) for q, docs in self._data.items()}

    def __getitem__(self, qid: str) -> Mapping[str, int]:
        return MappingProxyType(self._data[qid])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        judged = sum(len(d) for d in self._data.values())
        return f"Qrels(name={self.name!r}, queries={len(self)}, judgements={judged})"


class Run(Mapping[str, Mapping[str, float]]):
    """A ranked run: ``query_id -> {doc_id: score}``; the order is the score order.

    Args:
        scores: ``query_id -> {doc_id: score}``, finite floats. Copied.
        name: The run's name (``Run.read`` uses the file name without ``.gz``).
        tag: The run tag written in the sixth column.
    """

    def __init__(
        self,
        scores: Mapping[str, Mapping[str, float]],
        name: str = "run",
        tag: str | None = None,
    ):
        self._data: dict[str, dict[str, float]] = {}
        for q, docs in scores.items():
            row: dict[str, float] = {}
            for d, s in docs.items():
                value = float(s)
                if not math.isfinite(value):
                    raise InputDataError(f"score of {d!r} for query {q!r} is {value}")
                row[str(d)] = value
            self._data[str(q)] = row
        self.name = name
        self.tag = tag if tag is not None else name

    @classmethod
    def read(
        cls,
        path: str | os.PathLike[str],
        *,
        on_duplicate: OnDuplicate | str = OnDuplicate.ERROR,
        name: str | None = None,
    ) -> Run:
        """Read a TREC run: ``query_id Q0 doc_id rank score tag`` per line (``.gz`` too).

        Columns after the sixth are ignored and the rank column is not used, as in trec_eval.

        Args:
            path: The run file.
            on_duplicate: What to do with a (query, document) pair seen twice.
            name: The run's name; default: the file name without ``.gz``.

        Raises:
            InputDataError: empty file, fewer than six columns, a non-numeric, NaN or infinite
                score, a duplicate pair (with ``on_duplicate="error"``), undecodable bytes.
        """
        path = Path(path)
        policy = parse_enum(OnDuplicate, on_duplicate, "on_duplicate")
        data: dict[str, dict[str, float]] = {}
        tag: str | None = None
        lines = read_text_lines(path)
        for number, text in enumerate(lines, start=1):
            parts = text.split(maxsplit=6)
            if not parts:
                continue
            if len(parts) < 6:
                raise InputDataError(
                    f"expected 6 columns (query Q0 doc rank score tag), found {len(parts)}: "
                    f"{text.strip()[:80]!r}",
                    path=path,
                    line=number,
                )
            qid, _, doc, _, score_token, run_tag = parts[:6]
            try:  # fast path; anything float() accepts but trec_eval would not is re-checked
                score = float(score_token)
            except ValueError:
                score = _parse_score(score_token, path, number)
            if not math.isfinite(score) or "_" in score_token or not score_token.isascii():
                score = _parse_score(score_token, path, number)
            if tag is None:
                tag = run_tag
            docs = data.get(qid)
            if docs is None:
                docs = data[qid] = {}
            if doc in docs:
                if policy is OnDuplicate.ERROR:
                    first = _first_line(lines, qid, doc)
                    raise InputDataError(
                        f"duplicate document {doc!r} for query {qid!r} (first on line "
                        f"{first}); pass on_duplicate='max' or 'first'",
                        path=path,
                        line=number,
                    )
                if policy is OnDuplicate.MAX and score > docs[doc]:
                    docs[doc] = score
                continue
            docs[doc] = score
        if not data:
            raise InputDataError("empty run file: no ranked documents", path=path)
        return cls._trusted(data, name=name if name is not None else _stem(path), tag=tag)

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, float]], name: str, tag: str | None) -> Run:
        """A run over ``data`` as is: finite float scores, string ids, not shared."""
        run = cls.__new__(cls)
        run._data = data
        run.name = name
        run.tag = tag if tag is not None else name
        return run

    def write(self, path: str | os.PathLike[str], *, depth: int | None = None) -> None:
        """Write the run atomically in TREC format, trec_eval order, ranks from 1.

        Scores are written with full precision so that reading the file back gives the same
        floats. A name ending in ``.gz`` is gzip-compressed.
        """
        with atomic_write(path) as out:
            for qid, docs in self._data.items():
                for rank, (doc, score) in enumerate(trec_order(docs)[:depth], start=1):
                    out.write(f"{qid} Q0 {doc} {rank} {score!r} {self.tag}\n")

    def ranking(self, qid: str, depth: int | None = None) -> list[tuple[str, float]]:
        """``(doc_id, score)`` pairs of one query in trec_eval order, cut at ``depth``."""
        return trec_order(self._data[qid])[:depth]

    def truncate(self, depth: int) -> Run:
        """A new run keeping each query's top ``depth`` documents in trec_eval order (``-M``)."""
        if depth < 1:
            raise InputDataError(f"depth must be a positive integer, got {depth}")
        return Run(
            {q: dict(trec_order(docs)[:depth]) for q, docs in self._data.items()},
            name=self.name,
            tag=self.tag,
        )

    def restrict(self, query_ids: Iterable[str]) -> Run:
        """A new run with only the given queries (those the run has)."""
        keep = [q for q in query_ids if q in self._data]
        return Run({q: self._data[q] for q in keep}, name=self.name, tag=self.tag)

    def as_dict(self) -> dict[str, dict[str, float]]:
        """The underlying ``dict`` of dicts, shared, not copied: treat it as read-only."""
        return self._data

    def to_dict(self) -> dict[str, dict[str, float]]:
        """A deep copy as plain dicts."""
        return {q: dict(docs) for q, docs in self._data.items()}

    def __getitem__(self, qid: str) -> Mapping[str, float]:
        return MappingProxyType(self._data[qid])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        ranked = sum(len(d) for d in self._data.values())
        return f"Run(name={self.name!r}, queries={len(self)}, documents={ranked})"


def _stem(path: Path) -> str:
    name = path.name
    return name[:-3] if name.endswith(".gz") else name
