"""Readers of document collections and topics: TREC ``<DOC>`` files, JSON lines and pandas.

Every reader is strict: a malformed input is an :class:`~probrank.exceptions.InputDataError`
naming the file, the line and the value, never a silently skipped document.

TREC ``<DOC>`` files (:func:`iter_trec_documents`) are read line by line (streaming: a
collection never has to fit in memory as one string), gzip-compressed or not (detected by
content), UTF-8 (a byte-order mark at the start is skipped, CRLF accepted). Each document is::

    <DOC>
    <DOCNO> id </DOCNO>
    ... text, possibly inside further tags (<TEXT>, <HEADLINE>, ...) ...
    </DOC>

The text is everything between ``<DOC>`` and ``</DOC>`` except the ``DOCNO`` element, with
tags removed and whitespace collapsed; with ``text_tags=("TEXT", "HEADLINE")`` only those
elements' contents are kept. Errors: a ``<DOC>`` inside a document, a ``</DOC>`` without
one, a file that ends inside a document, non-blank text outside documents, a document
without or with two ``<DOCNO>``, an empty or blank docno, a docno with whitespace inside, and
a docno given twice (both lines named).

JSON lines (:func:`iter_jsonl_documents`): one object per line with a docno and a text field
(names configurable). Topics come from TREC topic files
(:func:`probrank.data.topics.read_topics`), JSON lines (:func:`read_jsonl_topics`) or a
DataFrame (:func:`topics_from_dataframe`).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from probrank.data._io import json_line
from probrank.exceptions import InputDataError

__all__ = [
    "documents_from_dataframe",
    "iter_jsonl_documents",
    "iter_text_lines",
    "iter_trec_documents",
    "read_jsonl_topics",
    "topics_from_dataframe",
]

_GZIP_MAGIC = b"\x1f\x8b"
_TAG = re.compile(r"<[^<>]*>")
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_OPEN_DOC = re.compile(r"^\s*<DOC>\s*$", re.IGNORECASE)
_CLOSE_DOC = re.compile(r"^\s*</DOC>\s*$", re.IGNORECASE)
_DOC_TAG = re.compile(r"</?DOC>", re.IGNORECASE)


def _open_binary(path: Path) -> IO[bytes]:
    try:
        handle: IO[bytes] = open(path, "rb")
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputDataError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise InputDataError(f"cannot read: {exc.strerror}", path=path) from None
    magic = handle.read(2)
    handle.seek(0)
    if magic == _GZIP_MAGIC:
        return gzip.open(handle, "rb")  # type: ignore[return-value]
    return handle


def iter_text_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Stream ``(line number, line)`` of a UTF-8 text file (gzip detected by content).

    Lines are yielded without their ``\\n`` (or ``\\r\\n``) end. A byte-order mark at the
    start of the file is skipped.

    Raises:
        InputDataError: a missing file, corrupt gzip data, bytes that are not UTF-8, a NUL
            byte or a carriage return inside a line (the message names the line).
    """
    path = Path(path)
    number = 0
    with _open_binary(path) as handle:
        try:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    bad = raw[exc.start : exc.start + 1]
                    raise InputDataError(
                        f"undecodable byte {bad!r} (file must be UTF-8)", path=path, line=number
                    ) from None
                if number == 1 and line.startswith("\ufeff"):
                    line = line[1:]
                line = line.removesuffix("\n").removesuffix("\r")
                if "\r" in line:
                    raise InputDataError(
                        "carriage return (CR) inside a line; line ends must be LF or CRLF",
                        path=path,
                        line=number,
                    )
                if "\x00" in line:
                    raise InputDataError("NUL byte in a text file", path=path, line=number)
                yield number, line
        except (OSError, EOFError) as exc:  # gzip errors surface while reading
            raise InputDataError(f"corrupt gzip data ({exc})", path=path, line=number + 1) from None


def _clean(text: str) -> str:
    return " ".join(_TAG.sub(" ", text).split())


def _document_text(body: str, text_tags: Sequence[str] | None) -> str:
    body = _DOCNO.sub(" ", body)
    if not text_tags:
        return _clean(body)
    parts: list[str] = []
    for tag in text_tags:
        pattern = re.compile(
            rf"<{re.escape(tag)}(?:\s[^>]*)?>(.*?)</{re.escape(tag)}>", re.I | re.S
        )
        parts.extend(_clean(match) for match in pattern.findall(body))
    return " ".join(p for p in parts if p)


def iter_trec_documents(
    path: str | os.PathLike[str], *, text_tags: Sequence[str] | None = None
) -> Iterator[tuple[str, str, int]]:
    """Stream the documents of a TREC ``<DOC>`` file (see the module docstring).

    Args:
        path: The file (``.gz`` or not).
        text_tags: Keep only the contents of these elements (e.g. ``("TEXT",)``); None: all
            text but the docno.

    Yields:
        ``(docno, text, line)`` with ``line`` the line of the document's ``<DOC>``.

    Raises:
        InputDataError: see the module docstring (the message names the file and line).
    """
    path = Path(path)
    start: int | None = None
    lines: list[str] = []
    seen: dict[str, int] = {}
    for number, line in iter_text_lines(path):
        if start is None:
            if _OPEN_DOC.match(line):
                start, lines = number, []
            elif _CLOSE_DOC.match(line):
                raise InputDataError("</DOC> without a <DOC>", path=path, line=number)
            elif line.strip():
                raise InputDataError(
                    f"text outside a <DOC> element: {line.strip()[:60]!r}", path=path, line=number
                )
            continue
        if _CLOSE_DOC.match(line):
            body = "\n".join(lines)
            docnos = _DOCNO.findall(body)
            if len(docnos) != 1:
                what = "no <DOCNO>" if not docnos else f"{len(docnos)} <DOCNO> elements"
                raise InputDataError(f"document with {what}", path=path, line=start)
            docno = docnos[0].strip()
            if not docno or any(c.isspace() for c in docno):
                raise InputDataError(
                    f"docno {docnos[0]!r} is empty or holds whitespace", path=path, line=start
                )
            if docno in seen:
                raise InputDataError(
                    f"docno {docno!r} appears twice (first on line {seen[docno]})",
                    path=path,
                    line=start,
                )
            seen[docno] = start
            yield docno, _document_text(body, text_tags), start
            start = None
            continue
        if _DOC_TAG.search(line):
            raise InputDataError(
                f"<DOC> inside the document opened on line {start}", path=path, line=number
            )
        lines.append(line)
    if start is not None:
        raise InputDataError("the file ends inside a <DOC> element", path=path, line=start)


def _json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in iter_text_lines(path):
        if not line.strip():
            continue
        record = json_line(line, path, number)
        if not isinstance(record, dict):
            raise InputDataError(
                f"expected a JSON object, got {type(record).__name__}", path=path, line=number
            )
        yield number, record


def _string_field(record: dict[str, Any], field: str, path: Path, number: int) -> str:
    if field not in record:
        raise InputDataError(f"missing key {field!r}", path=path, line=number)
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputDataError(
            f"{field!r} must be a string, got {value!r}"[:120], path=path, line=number
        )
    return str(value)


def iter_jsonl_documents(
    path: str | os.PathLike[str], *, docno_field: str = "docno", text_field: str = "text"
) -> Iterator[tuple[str, str, int]]:
    """Stream documents from JSON lines ``{"docno": ..., "text": ...}`` (blank lines skipped).

    Yields:
        ``(docno, text, line)``.

    Raises:
        InputDataError: invalid JSON, a missing field, a docno that is empty, holds whitespace
            or appears twice, or a text that is not a string (the message names the line).
    """
    path = Path(path)
    seen: dict[str, int] = {}
    for number, record in _json_objects(path):
        docno = _string_field(record, docno_field, path, number)
        text = record.get(text_field)
        if text_field not in record or not isinstance(text, str):
            raise InputDataError(
                f"{text_field!r} must be a string, got {text!r}"[:120], path=path, line=number
            )
        if not docno or any(c.isspace() for c in docno):
            raise InputDataError(
                f"docno {docno!r} is empty or holds whitespace", path=path, line=number
            )
        if docno in seen:
            raise InputDataError(
                f"docno {docno!r} appears twice (first on line {seen[docno]})",
                path=path,
                line=number,
            )
        seen[docno] = number
        yield docno, text, number


def read_jsonl_topics(
    path: str | os.PathLike[str], *, qid_field: str = "qid", query_field: str = "query"
) -> dict[str, str]:
    """Topics from JSON lines ``{"qid": ..., "query": ...}``.

    Returns:
        ``{qid: query}`` in file order (whitespace in a query collapsed).

    Raises:
        InputDataError: invalid JSON, a missing field, an empty query, a qid twice, or no
            topics (the message names the line).
    """
    path = Path(path)
    topics: dict[str, str] = {}
    first: dict[str, int] = {}
    for number, record in _json_objects(path):
        qid = _string_field(record, qid_field, path, number).strip()
        query = " ".join(_string_field(record, query_field, path, number).split())
        if not qid or not query:
            raise InputDataError("empty qid or query", path=path, line=number)
        if qid in topics:
            raise InputDataError(
                f"topic {qid!r} appears twice (first on line {first[qid]})", path=path, line=number
            )
        topics[qid], first[qid] = query, number
    if not topics:
        raise InputDataError("no topics found", path=path)
    return topics


def _frame_rows(frame: Any, columns: Sequence[str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    found = [str(c) for c in getattr(frame, "columns", [])]
    missing = [c for c in columns if c not in found]
    if missing:
        raise InputDataError(f"missing columns {missing}; the DataFrame has {found}")
    if len(frame) == 0:
        raise InputDataError("the DataFrame has no rows")
    yield from zip(frame.index, frame[list(columns)].to_dict("records"), strict=True)


def documents_from_dataframe(
    frame: Any, *, docno: str = "docno", text: str = "text"
) -> Iterator[tuple[str, str, Any]]:
    """Documents of a pandas DataFrame with one row per document.

    Yields:
        ``(docno, text, row index)``; the frame is not modified.

    Raises:
        InputDataError: a missing column, no rows, a missing or non-string text, or a docno
            that is empty, holds whitespace or appears twice (the message names the row).
    """
    seen: dict[str, Any] = {}
    for index, row in _frame_rows(frame, (docno, text)):
        key, body = row[docno], row[text]
        if key is None or isinstance(key, float) or not str(key).strip():
            raise InputDataError(f"row {index!r}: missing {docno!r}")
        key = str(key)
        if any(c.isspace() for c in key):
            raise InputDataError(f"row {index!r}: docno {key!r} holds whitespace")
        if not isinstance(body, str):
            raise InputDataError(f"row {index!r}: {text!r} must be a string, got {body!r}"[:120])
        if key in seen:
            raise InputDataError(f"row {index!r}: docno {key!r} also in row {seen[key]!r}")
        seen[key] = index
        yield key, body, index


def topics_from_dataframe(frame: Any, *, qid: str = "qid", query: str = "query") -> dict[str, str]:
    """``{qid: query}`` from a DataFrame with one row per topic (PyTerrier's layout).

    Raises:
        InputDataError: a missing column, no rows, an empty query or a qid twice.
    """
    topics: dict[str, str] = {}
    for index, row in _frame_rows(frame, (qid, query)):
        key, text = row[qid], row[query]
        if key is None or isinstance(key, float) or not str(key).strip():
            raise InputDataError(f"row {index!r}: missing {qid!r}")
        if not isinstance(text, str) or not text.strip():
            raise InputDataError(f"row {index!r}: {query!r} must be a non-empty string")
        key = str(key).strip()
        if key in topics:
            raise InputDataError(f"row {index!r}: topic {key!r} appears twice")
        topics[key] = " ".join(text.split())
    return topics
