"""A compiled fast path for reading TREC runs: pyarrow's CSV reader, column by column.

:func:`read_run_columns` reads a plain, valid run file into Arrow columns (query ids, document
ids, scores as doubles) without building a Python object per line, for evaluating many or large
runs (:mod:`probrank.evaluation.trec_eval.batch`). It vouches only for files it can read with
certainty and returns ``None`` for anything doubtful, so that the caller reads that file with
the strict line reader (:meth:`probrank.data.trec.Run.read`), which accepts the same files
with the same values and words every error (file, line, value). Doubtful is:

* a byte that is not ASCII, a control character other than tab and line feed (CR, NUL,
  vertical tab, form feed, ...), a comment line (``#``), a blank line, an empty field or a
  blank at either end of a line (two blanks in a row), a line of other than six fields;
* a score Arrow's parser refuses or reads as not finite (``nan``, ``inf``, ``1e400``): it
  accepts exactly the decimal numbers of the strict reader, ``[+-]digits[.digits][e[+-]digits]``
  (the tests check this), and rounds them correctly, as ``strtod`` does;
* a (query, document) pair twice (the strict reader applies ``on_duplicate``).

pyarrow
comes with pandas; without it :func:`arrow` returns ``None`` and every file takes the strict
reader. Nothing here is imported by ``probrank.data``: the evaluation path imports it when it
evaluates files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from probrank.data._io import read_bytes
from probrank.exceptions import InputDataError

__all__ = [
    "PlainText",
    "RunColumns",
    "arrow",
    "arrow_numbers",
    "arrow_strings",
    "compute",
    "numbers",
    "plain_text",
    "read_columns",
    "read_run_columns",
    "valid",
]

# pyarrow imports pandas the first time it converts a Python object or calls numpy's
# conversion (pa.array, Array.to_numpy, a Python scalar argument): 0.3 s that reading a run
# does not need. The helpers below build and read arrays from their buffers instead.

_RUN_NAMES = ("qid", "q0", "docno", "rank", "score", "tag")


def arrow() -> ModuleType | None:
    """``pyarrow`` with its ``csv`` module loaded, or ``None`` when absent."""
    try:
        import pyarrow
        import pyarrow.csv
    except ImportError:  # pragma: no cover - pyarrow comes with pandas here
        return None
    return pyarrow


def compute(name: str, *args: Any, **options: Any) -> Any:
    """Arrow compute function ``name`` on ``args`` (``value_set=`` or ``sort_keys=``).

    Calls the kernels through ``pyarrow._compute`` (where ``pyarrow.compute.call_function``
    lives): importing ``pyarrow.compute`` generates a Python wrapper for each of its hundreds
    of functions, a third of pyarrow's import time, for the four kernels used here.
    """
    try:
        from pyarrow._compute import SetLookupOptions, SortOptions, call_function
    except ImportError:  # pragma: no cover - another layout of pyarrow
        from pyarrow.compute import SetLookupOptions, SortOptions, call_function
    if "value_set" in options:
        return call_function(name, list(args), SetLookupOptions(options["value_set"]))
    if "sort_keys" in options:
        return call_function(name, list(args), SortOptions(options["sort_keys"]))
    return call_function(name, list(args))


def numbers(array: Any, dtype: type | np.dtype[Any]) -> np.ndarray:
    """The values of a primitive Arrow array without nulls' meaning (a read-only view).

    Args:
        array: An Arrow array of a fixed-width type.
        dtype: Its numpy dtype.
    """
    size = np.dtype(dtype).itemsize
    return np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * size
    )


def valid(array: Any) -> np.ndarray:
    """`len(array)` bool: which entries of an Arrow array are not null."""
    bitmap = array.buffers()[0]
    if bitmap is None:
        return np.ones(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def arrow_numbers(values: np.ndarray) -> Any:
    """A numpy array of int64, uint64 or float64 as an Arrow array (no copy when contiguous)."""
    pa = arrow()
    if pa is None:  # pragma: no cover - callers checked arrow()
        raise ImportError("pyarrow is not installed")
    values = np.ascontiguousarray(values)
    kind = {"i": pa.int64(), "u": pa.uint64(), "f": pa.float64()}[values.dtype.kind]
    return pa.Array.from_buffers(kind, values.size, [None, pa.py_buffer(values)])


def arrow_strings(values: list[str]) -> Any:
    """Python strings as an Arrow string array (UTF-8)."""
    pa = arrow()
    if pa is None:  # pragma: no cover - callers checked arrow()
        raise ImportError("pyarrow is not installed")
    encoded = [value.encode("utf-8") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    small = offsets[-1] < 2**31
    kind = pa.string() if small else pa.large_string()
    bounds = pa.py_buffer(offsets.astype(np.int32) if small else offsets)
    return pa.Array.from_buffers(
        kind, len(encoded), [None, bounds, pa.py_buffer(b"".join(encoded))]
    )


@dataclass(frozen=True)
class RunColumns:
    """A run read as columns, lines in file order.

    Attributes:
        name: The run's name (the file name without ``.gz``).
        tag: The tag of the first line.
        qid: `num_lines` Arrow strings: query ids.
        docno: `num_lines` Arrow strings: document ids.
        score: `num_lines` float64 scores (``-0.0`` read as ``0.0``: trec_eval compares them
            as equal).
    """

    name: str
    tag: str
    qid: Any
    docno: Any
    score: np.ndarray


@dataclass(frozen=True)
class PlainText:
    """A run file's text as the compiled reader reads it.

    Attributes:
        path: The file.
        data: Its (gunzipped) bytes, ending with a line feed.
        delimiter: The field separator (a space or a tab).
        lines: The number of lines.
    """

    path: Path
    data: bytes
    delimiter: str
    lines: int


def plain_text(path: str | os.PathLike[str]) -> PlainText | None:
    """A run file's text when every line is fields of printable ASCII separated by one space
    or one tab each, with no blank line, no blank at either end of a line and no comment line;
    else ``None`` (also for a file that cannot be read: the strict reader words that error).
    """
    path = Path(path)
    try:
        data = read_bytes(path)
    except InputDataError:
        return None
    if not data or not data.isascii():
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    if b"#" in data and (data.startswith(b"#") or b"\n#" in data):
        return None
    codes = np.frombuffer(data, dtype=np.uint8)
    blank = codes < 0x21
    spaces = int(np.count_nonzero(codes == 0x20))
    tabs = int(np.count_nonzero(codes == 0x09))
    lines = int(np.count_nonzero(codes == 0x0A))
    if int(np.count_nonzero(blank)) != spaces + tabs + lines:
        return None  # a control character (CR, NUL, vertical tab, ...)
    if blank[0] or (blank[1:] & blank[:-1]).any():
        return None  # an empty field, a blank line or a blank at a line's end
    if spaces and tabs:
        return PlainText(path, data.replace(b"\t", b" "), " ", lines)
    return PlainText(path, data, "\t" if tabs else " ", lines)


def read_run_columns(path: str | os.PathLike[str], name: str | None = None) -> RunColumns | None:
    """Read a plain, valid run file as columns, or ``None`` when the file is doubtful (see the
    module documentation: the strict reader then decides, and words any error).

    Args:
        path: The run file (gzip detected by content).
        name: The run's name; default: the file name without ``.gz``.
    """
    text = plain_text(path)
    if text is None:
        return None
    (columns,) = read_columns([text])
    if columns is not None and name is not None:
        columns = RunColumns(name, columns.tag, columns.qid, columns.docno, columns.score)
    return columns


def read_columns(texts: list[PlainText]) -> list[RunColumns | None]:
    """Read run files' texts (:func:`plain_text`) as columns, or ``None`` for those the
    compiled reader does not vouch for (see the module documentation).

    The texts of one field separator are parsed by one call of Arrow's CSV reader, which costs
    less than a call per file (each call hands work to Arrow's threads).
    """
    pa = arrow()
    if pa is None:
        return [None] * len(texts)
    out: list[RunColumns | None] = [None] * len(texts)
    for delimiter in (" ", "\t"):
        chosen = [i for i, t in enumerate(texts) if t.delimiter == delimiter]
        if not chosen:
            continue
        parsed = _parse([texts[i] for i in chosen], delimiter)
        if parsed is None:  # some file is doubtful: find it
            parsed = [_one(texts[i], delimiter) for i in chosen]
        for i, columns in zip(chosen, parsed, strict=True):
            out[i] = columns
    return out


def _one(text: PlainText, delimiter: str) -> RunColumns | None:
    result = _parse([text], delimiter)
    return None if result is None else result[0]


def _parse(texts: list[PlainText], delimiter: str) -> list[RunColumns | None] | None:
    """Columns of each text, or ``None`` when a line of one of them has other than six fields
    or a score Arrow refuses."""
    pa = arrow()
    if pa is None:  # pragma: no cover - read_columns checked
        return None
    from pyarrow import csv

    types = {**dict.fromkeys(_RUN_NAMES, pa.string()), "score": pa.float64()}
    data = texts[0].data if len(texts) == 1 else b"".join(t.data for t in texts)
    try:
        table = csv.read_csv(
            pa.py_buffer(data),
            read_options=csv.ReadOptions(column_names=list(_RUN_NAMES), use_threads=False),
            parse_options=csv.ParseOptions(
                delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=csv.ConvertOptions(
                column_types=types,
                include_columns=["qid", "docno", "score"],
                strings_can_be_null=False,
                null_values=[],
                check_utf8=False,
            ),
        )
        qid, docno, values = (table.column(c).combine_chunks() for c in ("qid", "docno", "score"))
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return None  # a line of other than six fields, a score that is no number, 2 GB of ids
    score = numbers(values, np.float64) + 0.0  # -0.0 -> 0.0 (C compares them as equal)
    sizes = np.asarray([t.lines for t in texts], dtype=np.int64)
    if int(sizes.sum()) != len(score):  # pragma: no cover - every line is a row
        return None
    file_of = np.repeat(np.arange(len(texts)), sizes)
    doubtful = np.zeros(len(texts), dtype=bool)
    doubtful[file_of[~np.isfinite(score)]] = True  # nan, inf, a magnitude beyond a double's
    doubtful[_duplicated(qid, docno, file_of)] = True  # on_duplicate decides
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).tolist()
    out: list[RunColumns | None] = []
    for text, start, size, bad in zip(texts, starts, sizes.tolist(), doubtful, strict=True):
        if bad:
            out.append(None)
            continue
        name = text.path.name
        out.append(
            RunColumns(
                name=name[:-3] if name.endswith(".gz") else name,
                tag=text.data[: text.data.index(b"\n")].split()[5].decode("ascii"),
                qid=qid.slice(start, size),
                docno=docno.slice(start, size),
                score=score[start : start + size],
            )
        )
    return out


_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9], dtype=np.uint64)


def _fingerprints(strings: Any) -> np.ndarray:
    """`len(strings)` uint64: a fingerprint of each Arrow string (its length, first and last
    eight bytes, mixed); equal strings have equal fingerprints."""
    count = len(strings)
    offsets = np.frombuffer(
        strings.buffers()[1], dtype=np.int32, count=count + 1, offset=strings.offset * 4
    ).astype(np.int64)
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    size = data.size + 8 - data.size % 8 + 24
    padded = np.zeros(size, dtype=np.uint8)  # 8 zero bytes, the data, zeros
    padded[8 : 8 + data.size] = data
    words = padded.view(np.uint64)
    starts, ends = offsets[:-1] + 8, offsets[1:] + 8
    lengths = np.minimum(ends - starts, 8).astype(np.uint64)
    short = lengths < 8
    bits = np.uint64(8) * lengths
    first = _word_at(words, starts)
    first = np.where(short, first & ((np.uint64(1) << bits) - np.uint64(1)), first)
    last = _word_at(words, ends - 8)
    last = np.where(short, last >> (np.uint64(64) - bits) % np.uint64(64), last)
    last = np.where(lengths == 0, np.uint64(0), last)
    return first * _MIX[0] + last * _MIX[1] + (ends - starts).astype(np.uint64) * _MIX[2]


def _word_at(words: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The eight bytes at each byte position of ``words``' buffer, as little-endian uint64."""
    index = positions >> 3
    shift = (positions & 7).astype(np.uint64) * np.uint64(8)
    low = words[index] >> shift
    high = words[index + 1] << ((np.uint64(64) - shift) % np.uint64(64))
    return low | np.where(shift == 0, np.uint64(0), high)


def _duplicated(qid: Any, docno: Any, file_of: np.ndarray) -> np.ndarray:
    """The files (indices) in which a (query, document) pair occurs twice.

    Pairs are compared by fingerprint (:func:`_fingerprints`) first; the few whose
    fingerprints meet are compared as strings.
    """
    queries = numbers(compute("dictionary_encode", qid).indices, np.int32).astype(np.uint64)
    span = np.uint64(int(np.max(queries, initial=0)) + 1)
    group: np.ndarray = file_of.astype(np.uint64) * span + queries
    keys = _fingerprints(docno) ^ (group * _MIX[2] + _MIX[0])
    ordered = np.sort(keys)
    met = ordered[1:][ordered[1:] == ordered[:-1]]
    if not met.size:
        return np.zeros(0, dtype=np.int64)
    suspects = np.flatnonzero(np.isin(keys, met)).tolist()
    seen: set[tuple[int, str, str]] = set()
    files: set[int] = set()
    for i in suspects:
        pair = (int(file_of[i]), qid[i].as_py(), docno[i].as_py())
        if pair in seen:
            files.add(pair[0])
        seen.add(pair)
    return np.asarray(sorted(files), dtype=np.int64)
