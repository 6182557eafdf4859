"""TREC topic files: ``{query_id: query text}``.

Two layouts are read (``.gz`` transparently):

* TREC SGML: ``<top>`` blocks with ``<num>`` (``Number: 301`` or a bare id) and ``<title>``
  (the query text is the title, up to the next tag; an optional ``Topic:`` prefix is dropped);
* one topic per line, ``query_id<TAB>text`` (or the id and the text separated by spaces).

Whitespace inside a title is collapsed to single spaces.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from probrank.data._io import read_text_lines
from probrank.exceptions import InputDataError

__all__ = ["read_topics"]

_TOP = re.compile(r"<top>(.*?)</top>", re.IGNORECASE | re.DOTALL)
_NUM = re.compile(r"<num>\s*(?:Number:)?\s*([^\s<]+)", re.IGNORECASE)
_TITLE = re.compile(r"<title>\s*(?:Topic:)?(.*?)(?=<|\Z)", re.IGNORECASE | re.DOTALL)


def _sgml(text: str, path: Path) -> dict[str, str]:
    topics: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for block in _TOP.finditer(text):
        line = text.count("\n", 0, block.start()) + 1
        body = block.group(1)
        num, title = _NUM.search(body), _TITLE.search(body)
        if num is None:
            raise InputDataError("<top> without a <num>", path=path, line=line)
        qid = num.group(1)
        query = " ".join(title.group(1).split()) if title is not None else ""
        if not query:
            raise InputDataError(f"topic {qid!r} has no <title> text", path=path, line=line)
        if qid in topics:
            raise InputDataError(
                f"topic {qid!r} appears twice (first on line {first_line[qid]})",
                path=path,
                line=line,
            )
        topics[qid], first_line[qid] = query, line
    return topics


def _lines(lines: list[str], path: Path) -> dict[str, str]:
    topics: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        parts = text.strip().split("\t", 1) if "\t" in text else text.strip().split(None, 1)
        if len(parts) < 2 or not parts[1].strip():
            raise InputDataError(
                f"expected 'query_id<TAB>text', got {text.strip()[:80]!r}", path=path, line=number
            )
        qid, query = parts[0].strip(), " ".join(parts[1].split())
        if qid in topics:
            raise InputDataError(
                f"topic {qid!r} appears twice (first on line {first_line[qid]})",
                path=path,
                line=number,
            )
        topics[qid], first_line[qid] = query, number
    return topics


def read_topics(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a TREC topics file (SGML ``<top>`` blocks or ``query_id<TAB>text`` lines).

    Args:
        path: The topics file.

    Returns:
        ``{query_id: query text}`` in file order.

    Raises:
        InputDataError: a missing or undecodable file, no topics, a topic without an id or
            text, or a query id given twice (the message names the line).
    """
    path = Path(path)
    lines = read_text_lines(path)
    text = "\n".join(lines)
    topics = _sgml(text, path) if _TOP.search(text) else _lines(lines, path)
    if not topics:
        raise InputDataError("no topics found", path=path)
    return topics
