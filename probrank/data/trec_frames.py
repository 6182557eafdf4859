"""pandas DataFrames to and from :class:`~probrank.data.trec.Run` and `Qrels`.

The column names follow PyTerrier (``qid, docno, score, rank`` for results; ``qid, docno,
label`` for judgements), so a frame goes straight into a PyTerrier pipeline or
``pt.Experiment``; ir-measures' names (``query_id, doc_id, score`` / ``relevance``) are read
too when the PyTerrier ones are absent. Written by hand because neither library converts to a
double-precision, validated mapping with this package's errors; pandas is imported only here,
only when a frame is built (the evaluation path never imports it).

Validation is the readers' (:mod:`probrank.data.trec`): ids are converted to ``str`` and must
be present; a score must be a finite number; a grade an integer (``3.0`` is accepted, ``2.5``
is not); a (query, document) pair twice is an error naming both rows' index labels; a frame
without rows is an error, as an empty file is.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from probrank.exceptions import InputDataError

__all__ = [
    "MAX_INTEGER",
    "check_columns",
    "frame_id",
    "frame_to_mapping",
    "is_missing",
    "qrels_frame",
    "run_frame",
]

MAX_INTEGER = 2**63 - 1
"""Largest magnitude of a grade or label (an int64, as tensors and pandas hold them)."""

_ALIASES = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}


def _column(columns: Sequence[str], wanted: str) -> str:
    """``wanted``, or its ir-measures alias when only that is present."""
    if wanted in columns:
        return wanted
    alias = _ALIASES.get(wanted)
    if alias is not None and alias in columns:
        return alias
    also = f" (or {alias!r})" if alias else ""
    raise InputDataError(f"the DataFrame has no column {wanted!r}{also}; it has {list(columns)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def is_missing(value: object) -> bool:
    """Whether ``value`` is a missing marker: None, a float NaN, ``pd.NA`` or ``pd.NaT``."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return isinstance(value, numbers.Real) and math.isnan(value)
    except (OverflowError, TypeError, ValueError):
        return False


def frame_id(value: object, where: str, what: str) -> str:
    """An id as ``str``: missing markers (None, NaN, ``pd.NA``) and empty ids are refused."""
    if is_missing(value):
        raise InputDataError(f"{where}: missing {what}")
    text = str(value)
    if not text:
        raise InputDataError(f"{where}: empty {what}")
    return text


def check_columns(frame: Any) -> list[str]:
    """The column names of a DataFrame as ``str``; refuses anything else and duplicate names.

    Raises:
        InputDataError: not a DataFrame, or two columns of one name (which one is meant?).
    """
    if not hasattr(frame, "columns") or not hasattr(frame, "index"):
        raise InputDataError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    columns = [str(c) for c in frame.columns]
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise InputDataError(f"the DataFrame has two or more columns named {twice}")
    return columns


def _score(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputDataError(f"{where}: score {_short(value)} is not a number")
    try:
        score = float(value)
    except OverflowError:
        score = math.inf
    if not math.isfinite(score):
        raise InputDataError(f"{where}: score {_short(value)} is not a finite double")
    return score


def _grade(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputDataError(f"{where}: grade {_short(value)} is not an integer")
    if isinstance(value, numbers.Integral):
        number = int(value)
    else:
        real = float(value)
        if not real.is_integer():
            raise InputDataError(f"{where}: grade {_short(value)} is not an integer")
        number = int(real)
    if abs(number) > MAX_INTEGER:
        raise InputDataError(f"{where}: grade {_short(value)} is out of range (|grade| < 2**63)")
    return number


def frame_to_mapping(
    frame: Any, *, qid: str, docno: str, value: str, kind: str
) -> dict[str, dict[str, Any]]:
    """``query_id -> {doc_id: value}`` from a frame with one row per (query, document).

    Args:
        frame: A pandas DataFrame; not modified.
        qid, docno, value: The columns of query ids, document ids and values.
        kind: ``"score"`` (finite floats) or ``"grade"`` (integers).

    Returns:
        The mapping, queries and documents in row order.

    Raises:
        InputDataError: a missing column, no rows, a missing id, a bad value, a pair twice.
    """
    columns = check_columns(frame)
    names = [_column(columns, c) for c in (qid, docno, value)]
    if len(frame) == 0:
        raise InputDataError("the DataFrame has no rows")
    convert = _score if kind == "score" else _grade
    data: dict[str, dict[str, Any]] = {}
    first: dict[tuple[str, str], object] = {}
    rows = zip(frame.index, *(frame[c].tolist() for c in names), strict=True)
    for index, q, d, v in rows:
        where = f"row {index!r}"
        key = (frame_id(q, where, repr(names[0])), frame_id(d, where, repr(names[1])))
        if key in first:
            raise InputDataError(
                f"{where}: document {key[1]!r} appears twice for query {key[0]!r} "
                f"(rows {first[key]!r} and {index!r})"
            )
        first[key] = index
        data.setdefault(key[0], {})[key[1]] = convert(v, where)
    return data


def run_frame(ranked: Mapping[str, Sequence[tuple[str, float]]]) -> Any:
    """A PyTerrier results frame ``qid, docno, score, rank`` (rank from 0, as PyTerrier).

    Args:
        ranked: ``query_id -> [(doc_id, score), ...]`` in trec_eval order.
    """
    import pandas as pd

    rows = [
        (qid, doc, score, rank)
        for qid, docs in ranked.items()
        for rank, (doc, score) in enumerate(docs)
    ]
    frame = pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])
    return frame.astype({"qid": "object", "docno": "object", "score": "float64", "rank": "int64"})


def qrels_frame(judgements: Mapping[str, Mapping[str, int]]) -> Any:
    """A PyTerrier qrels frame ``qid, docno, label``."""
    import pandas as pd

    rows = [(qid, doc, grade) for qid, docs in judgements.items() for doc, grade in docs.items()]
    frame = pd.DataFrame(rows, columns=["qid", "docno", "label"])
    return frame.astype({"qid": "object", "docno": "object", "label": "int64"})
