"""TREC relevance judgements (:class:`Qrels`) and ranked runs (:class:`Run`).

The readers accept what trec_eval 10 accepts, in the same way, and reject the rest with an
:class:`~probrank.exceptions.InputDataError` naming the file, the 1-based line and the value:

* A qrels line is ``query_id iteration doc_id grade``, exactly four fields; a run line is
  ``query_id Q0 doc_id rank score tag``, six fields, any after the sixth ignored. The rank
  column is not used (trec_eval re-sorts by score, ties broken by docno, descending).
* Fields are separated by ASCII spaces and tabs only: any other whitespace (no-break space
  U+00A0, ideographic space U+3000, vertical tab, form feed, ...) is an error.
* Files are UTF-8 (gzip read transparently, detected by content); a byte-order mark at the
  start is skipped; CRLF line ends are accepted, a carriage return anywhere else is an error.
  Blank lines are skipped. A line starting with ``#`` (in a run: after blanks) is a comment,
  as in trec_eval 10.
* Numbers are ASCII decimal, as C's ``strtod`` and ``strtol`` read them: a score is
  ``[+-]digits[.digits][e[+-]digits]``, a grade ``[+-]digits`` within a C ``long``. Full-width
  or other non-ASCII digits, ``nan``, ``inf``, hexadecimal and Python's ``1_000`` are errors,
  and so is a score whose magnitude overflows a double (``1e400``).
* A document judged twice for a topic, or ranked twice in a run (unless ``on_duplicate``
  says otherwise), is an error naming both lines, as trec_eval refuses it.

Large files take a fast path (one split of the whole text, one conversion per column) that
gives the same result as the line-by-line reader, which runs when the fast path meets anything
unusual and produces the error messages.

Both classes are read-only mappings ``query_id -> {doc_id: value}``; constructors copy their
input, and no method mutates the object or its arguments.
"""

from __future__ import annotations

import gc
import math
import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from enum import Enum
from itertools import compress, islice, pairwise
from operator import ne
from pathlib import Path
from types import MappingProxyType
from typing import Any

from probrank._options import parse_enum
from probrank.data._io import atomic_write, check_separators, read_text
from probrank.exceptions import InputDataError

__all__ = ["OnDuplicate", "Qrels", "Run", "trec_order"]

# A decimal number as C's strtod reads it, without hex, inf or nan (which trec_eval never sees
# in a valid run), without Python-only spellings such as underscores, ASCII digits only.
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"[+-]?[0-9]+")
_LONG_MAX = 2**63 - 1
_MARK = "\x01"  # stands for a line end in the fast path's token list
_RUN_COMMENT = re.compile(r"^[ \t]*#", re.MULTILINE)
_QRELS_COMMENT = re.compile(r"^#", re.MULTILINE)


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

    trec_eval sorts by score (as C doubles), descending, and breaks ties by docno in
    descending ``strcmp`` order (Python's ``str`` order: by code point, which is the order of
    the UTF-8 bytes).

    Args:
        scores: ``doc_id -> score`` for one query.

    Returns:
        ``(doc_id, score)`` pairs, best first.
    """
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file is parsed: parsing makes millions of
    objects and no reference cycle, and the collector would only scan them again and again
    (15% of the time to read a run of 2 million lines). Its previous state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _content_lines(text: str, comment: re.Pattern[str]) -> Iterator[tuple[int, list[str]]]:
    """``(1-based line number, fields)`` of every line that is neither blank nor a comment."""
    has_comments = "#" in text and comment.search(text) is not None
    for number, line in enumerate(text.split("\n"), start=1):
        parts = line.split()
        if parts and not (has_comments and comment.match(line)):
            yield number, parts


def _fast_columns(text: str, width: int, comment: re.Pattern[str]) -> list[str] | None:
    """The fields of a file whose content lines all hold exactly ``width`` fields, with a
    marker after each line (``None`` when the file needs the line-by-line reader)."""
    if _MARK in text or ("#" in text and comment.search(text) is not None):
        return None
    if not text.endswith("\n") or text.endswith(("\n\n", " \n", "\t\n")):
        text = text.rstrip(" \t\n") + "\n"  # copies the text: only when it ends oddly
    lines = text.count("\n")
    tokens = text.replace("\n", " " + _MARK + " ").split()
    stride = width + 1
    if not lines or len(tokens) != stride * lines or tokens[width::stride].count(_MARK) != lines:
        return None
    return tokens


def _segments(qids: list[str]) -> list[tuple[str, int, int]]:
    """``(qid, start, stop)`` of each run of equal consecutive query ids."""
    bounds = [0, *compress(range(1, len(qids)), map(ne, islice(qids, 1, None), qids)), len(qids)]
    return [(qids[a], a, b) for a, b in pairwise(bounds)]


def _plain_ascii(tokens: list[str]) -> bool:
    """Whether the tokens are ASCII without ``_``: then Python's ``float`` and ``int`` accept
    what C's ``strtod`` and ``strtol`` accept, besides ``nan`` and ``inf`` (which give values
    that are not finite, checked separately, or a ``ValueError``)."""
    joined = " ".join(tokens)
    return joined.isascii() and "_" not in joined


def _parse_score(token: str, path: Path, line: int) -> float:
    if _FLOAT.fullmatch(token) is None:
        raise InputDataError(f"score {token!r} is not a number", path=path, line=line)
    value = float(token)
    if not math.isfinite(value):
        raise InputDataError(
            f"score {token!r} overflows a double (its magnitude exceeds 1.8e308)",
            path=path,
            line=line,
        )
    return value


def _grade(value: object, qid: object, doc: object) -> int:
    """A grade given in memory, as an ``int``."""
    try:
        grade = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        if not (isinstance(value, float) and value.is_integer()):
            raise InputDataError(
                f"grade of {doc!r} for query {qid!r} is {value!r}, not an integer"
            ) from None
        grade = int(value)
    if abs(grade) > _LONG_MAX:
        raise InputDataError(f"grade of {doc!r} for query {qid!r} is out of range: {grade}")
    return grade


def _parse_grade(token: str, path: Path, line: int) -> int:
    if _INT.fullmatch(token) is None:
        raise InputDataError(f"relevance grade {token!r} is not an integer", path=path, line=line)
    value = int(token)
    if abs(value) > _LONG_MAX:
        raise InputDataError(
            f"relevance grade {token!r} is out of range (a C long)", path=path, line=line
        )
    return value


class Qrels(Mapping[str, Mapping[str, int]]):
    """Relevance judgements: ``query_id -> {doc_id: grade}``.

    Args:
        judgements: ``query_id -> {doc_id: grade}``; grades are integers (within a C ``long``),
            negative grades mean in the pool but not judged (as in trec_eval). Copied.
        name: A label for messages and tables.
    """

    def __init__(self, judgements: Mapping[str, Mapping[str, int]], name: str = "qrels"):
        self._data: dict[str, dict[str, int]] = {
            str(q): {str(d): _grade(g, q, d) for d, g in docs.items()}
            for q, docs in judgements.items()
        }
        self.name = name

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Qrels:
        """Read a TREC qrels file: ``query_id iteration doc_id grade`` per line (``.gz`` too).

        See the module documentation for the rules.

        Raises:
            InputDataError: no judgement, a line without exactly four fields, a grade that is
                not an integer, a document judged twice for one query, a separator other than
                space and tab, a lone CR, undecodable bytes.
        """
        path = Path(path)
        text = read_text(path)
        check_separators(text, path)
        with _gc_paused():
            data = _qrels_fast(text)
            if data is None:
                data = _qrels_by_line(text, path)
        return cls._trusted(data, name=_stem(path))

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, int]], name: str) -> Qrels:
        """Qrels over ``data`` as is: ``int`` grades, string ids, not shared."""
        qrels = cls.__new__(cls)
        qrels._data = data
        qrels.name = name
        return qrels

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the judgements atomically in TREC qrels format (gzip if the name ends ``.gz``).

        Raises:
            InputDataError: a query or document id that is empty or holds whitespace.
        """
        _check_ids(self._data)
        with atomic_write(path) as out:
            for qid, docs in self._data.items():
                for doc, grade in docs.items():
                    out.write(f"{qid} 0 {doc} {grade}\n")

    @classmethod
    def from_dataframe(
        cls,
        frame: Any,
        *,
        qid: str = "qid",
        docno: str = "docno",
        label: str = "label",
        name: str = "qrels",
    ) -> Qrels:
        """Judgements from a pandas DataFrame with one row per (query, document).

        The default columns are PyTerrier's (``qid, docno, label``); ir-measures' names
        (``query_id, doc_id, relevance``) are used when those are absent. Other columns are
        ignored. See :mod:`probrank.data.trec_frames` for the rules.

        Raises:
            InputDataError: a missing column, no rows, a missing id, a grade that is not an
                integer, a document judged twice for one query (naming both rows).
        """
        from probrank.data.trec_frames import frame_to_mapping

        data = frame_to_mapping(frame, qid=qid, docno=docno, value=label, kind="grade")
        return cls(data, name=name)

    def to_dataframe(self) -> Any:
        """The judgements as a PyTerrier qrels frame: columns ``qid, docno, label``, one row per
        judgement, in the judgements' order. ``Qrels.from_dataframe`` reads it back."""
        from probrank.data.trec_frames import qrels_frame

        return qrels_frame(self._data)

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

        Fields after the sixth are ignored and the rank column is not used, as in trec_eval;
        the tag is the first line's. See the module documentation for the rules.

        Args:
            path: The run file.
            on_duplicate: What to do with a (query, document) pair seen twice.
            name: The run's name; default: the file name without ``.gz``.

        Raises:
            InputDataError: no ranked document, a line with fewer than six fields, a score that
                is not an ASCII decimal number or overflows a double, a duplicate pair (with
                ``on_duplicate="error"``), a separator other than space and tab, a lone CR,
                undecodable bytes (see the module documentation).
        """
        path = Path(path)
        policy = parse_enum(OnDuplicate, on_duplicate, "on_duplicate")
        text = read_text(path)
        check_separators(text, path)
        with _gc_paused():
            fast = _run_fast(text)
            data, tag = fast if fast is not None else _run_by_line(text, path, policy)
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

        Scores are written with ``repr`` (17 significant digits at most), so that reading the
        file back, here or with trec_eval's ``strtod``, gives the same doubles and the same
        evaluation. A name ending in ``.gz`` is gzip-compressed.

        The tag is written with any whitespace in it replaced by ``_`` (it is one field).

        Raises:
            InputDataError: a query or document id that is empty or holds whitespace (the
                file could not be read back); nothing is written then.
        """
        _check_ids(self._data)
        tag = "_".join(self.tag.split()) or "run"
        with atomic_write(path) as out:
            for qid, docs in self._data.items():
                for rank, (doc, score) in enumerate(trec_order(docs)[:depth], start=1):
                    out.write(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")

    @classmethod
    def from_dataframe(
        cls,
        frame: Any,
        *,
        qid: str = "qid",
        docno: str = "docno",
        score: str = "score",
        name: str = "run",
        tag: str | None = None,
    ) -> Run:
        """A run from a pandas DataFrame with one row per (query, document), e.g. PyTerrier's
        results.

        The default columns are PyTerrier's (``qid, docno, score``); ir-measures' names
        (``query_id, doc_id``) are used when those are absent. A ``rank`` column and any other
        are ignored: the order is the score order, as in trec_eval. See
        :mod:`probrank.data.trec_frames` for the rules.

        Raises:
            InputDataError: a missing column, no rows, a missing id, a score that is not a
                finite number, a document twice for one query (naming both rows).
        """
        from probrank.data.trec_frames import frame_to_mapping

        data = frame_to_mapping(frame, qid=qid, docno=docno, value=score, kind="score")
        return cls._trusted(data, name=name, tag=tag)

    def to_dataframe(self, depth: int | None = None) -> Any:
        """The run as a PyTerrier results frame: columns ``qid, docno, score, rank``, each
        query's documents in trec_eval order (score descending, docno descending) with ``rank``
        from 0, as PyTerrier numbers it; cut at ``depth`` when given. Scores are the doubles
        held, so ``Run.from_dataframe`` gives back an equal run."""
        from probrank.data.trec_frames import run_frame

        if depth is not None and depth < 1:
            raise InputDataError(f"depth must be a positive integer, got {depth}")
        return run_frame({q: self.ranking(q, depth) for q in self._data})

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


def _check_ids(data: Mapping[str, Mapping[str, object]]) -> None:
    """Every query and document id is one non-empty field, so that a written file reads back."""
    for qid, docs in [("", {q: None for q in data}), *data.items()]:
        ids = list(docs)
        if len(" ".join(ids).split()) != len(ids) or not all(ids):
            bad = next(i for i in ids if i.split() != [i])
            what = f"document id {bad!r} of query {qid!r}" if qid else f"query id {bad!r}"
            raise InputDataError(f"{what} is not one field (empty or with whitespace)")


def _qrels_fast(text: str) -> dict[str, dict[str, int]] | None:
    """The judgements of a plain, valid qrels file, or None (the line reader decides)."""
    tokens = _fast_columns(text, 4, _QRELS_COMMENT)
    if tokens is None:
        return None
    grade_tokens = tokens[3::5]
    if not _plain_ascii(grade_tokens):
        return None
    try:
        grades = list(map(int, grade_tokens))
    except ValueError:
        return None
    if grades and max(map(abs, grades)) > _LONG_MAX:
        return None
    qids, docs = tokens[0::5], tokens[2::5]
    data: dict[str, dict[str, int]] = {}
    for qid, start, stop in _segments(qids):
        if qid in data:
            return None  # a topic in two places: let the line reader check it
        row = data[qid] = dict(zip(docs[start:stop], grades[start:stop], strict=True))
        if len(row) != stop - start:
            return None  # a document judged twice
    return data


def _qrels_by_line(text: str, path: Path) -> dict[str, dict[str, int]]:
    data: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, parts in _content_lines(text, _QRELS_COMMENT):
        if len(parts) != 4:
            raise InputDataError(
                f"expected 4 columns (query iteration doc grade), found {len(parts)}: "
                f"{' '.join(parts)[:80]!r}",
                path=path,
                line=number,
            )
        qid, _, doc, token = parts
        grade = _parse_grade(token, path, number)
        docs = data.setdefault(qid, {})
        if doc in docs:
            raise InputDataError(
                f"document {doc!r} judged twice for query {qid!r} "
                f"(first on line {first_line[(qid, doc)]})",
                path=path,
                line=number,
            )
        docs[doc] = grade
        first_line[(qid, doc)] = number
    if not data:
        raise InputDataError("empty qrels file: no judgements", path=path)
    return data


def _run_fast(text: str) -> tuple[dict[str, dict[str, float]], str] | None:
    """The scores and tag of a plain, valid run file, or None (the line reader decides)."""
    tokens = _fast_columns(text, 6, _RUN_COMMENT)
    if tokens is None:
        return None
    score_tokens = tokens[4::7]
    if not _plain_ascii(score_tokens):
        return None
    try:
        scores = list(map(float, score_tokens))
    except ValueError:
        return None
    if not math.isfinite(sum(scores)):  # nan, inf, or finite scores whose sum overflows
        return None
    qids, docs = tokens[0::7], tokens[2::7]
    data: dict[str, dict[str, float]] = {}
    for qid, start, stop in _segments(qids):
        if qid in data:
            return None  # a topic in two places: let the line reader check for duplicates
        row = data[qid] = dict(zip(docs[start:stop], scores[start:stop], strict=True))
        if len(row) != stop - start:
            return None  # a duplicate document
    return data, tokens[5]


def _run_by_line(
    text: str, path: Path, policy: OnDuplicate
) -> tuple[dict[str, dict[str, float]], str]:
    data: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
    tag: str | None = None
    for number, parts in _content_lines(text, _RUN_COMMENT):
        if len(parts) < 6:
            raise InputDataError(
                f"expected 6 columns (query Q0 doc rank score tag), found {len(parts)}: "
                f"{' '.join(parts)[:80]!r}",
                path=path,
                line=number,
            )
        qid, _, doc, _, token, run_tag = parts[:6]
        score = _parse_score(token, path, number)
        if tag is None:
            tag = run_tag
        docs = data.setdefault(qid, {})
        if doc in docs:
            if policy is OnDuplicate.ERROR:
                raise InputDataError(
                    f"duplicate document {doc!r} for query {qid!r} (first on line "
                    f"{first_line[(qid, doc)]}); pass on_duplicate='max' or 'first'",
                    path=path,
                    line=number,
                )
            if policy is OnDuplicate.MAX and score > docs[doc]:
                docs[doc] = score
            continue
        docs[doc] = score
        first_line[(qid, doc)] = number
    if tag is None:
        raise InputDataError("empty run file: no ranked documents", path=path)
    return data, tag
