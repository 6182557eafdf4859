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

import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from probrank.data._io import _GZIP_MAGIC, read_bytes
from probrank.exceptions import InputDataError

__all__ = [
    "ColumnBatch",
    "PlainText",
    "RunColumns",
    "arrow",
    "arrow_numbers",
    "arrow_strings",
    "compute",
    "numbers",
    "plain_text",
    "plain_texts",
    "read_batch",
    "read_columns",
    "read_run_columns",
    "take",
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


def take(array: Any, indices: Any) -> Any:
    """``array[indices]`` for an Arrow array and Arrow integer ``indices``, by the kernel
    (``Array.take`` would import ``pyarrow.compute``: see :func:`compute`)."""
    return compute("take", array, indices)


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
        qid: `num_lines` Arrow strings (an array or a chunked array): query ids.
        docno: `num_lines` Arrow strings (an array or a chunked array): document ids.
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
        data: Its (gunzipped) bytes, ending with a line feed: a slice of ``buffer`` when the
            file was read into it.
        delimiter: The field separator (a space or a tab; a file of both has its tabs made
            spaces).
        lines: The number of lines.
        buffer: The buffer the text lies in (files read together, one after the other:
            :func:`plain_texts`), or ``None``.
        start: The offset of ``data`` in ``buffer``.
    """

    path: Path
    data: bytes | bytearray | memoryview
    delimiter: str
    lines: int
    buffer: mmap.mmap | bytearray | None = None
    start: int = 0

    def first_line(self) -> bytes:
        """The first line, without its line feed."""
        if self.buffer is None:
            return bytes(self.data[: bytes(self.data).index(b"\n")])
        return bytes(self.buffer[self.start : self.buffer.find(b"\n", self.start)])


def plain_text(path: str | os.PathLike[str]) -> PlainText | None:
    """:func:`plain_texts` of one file."""
    return plain_texts([path])[0]


def plain_texts(
    paths: Sequence[str | os.PathLike[str]], pool: Any = None
) -> list[PlainText | None]:
    """Run files' texts, each when it may be a plain, valid run: printable ASCII, fields
    separated by spaces or tabs, no comment line, and no control character but line feeds;
    else ``None`` (also for a file that cannot be read: the strict reader words that error).

    Plain files are read one after the other into one buffer, so that Arrow reads them all in
    one call without copying them together (a call per file costs more, and a map of each
    file would put the process at the mercy of a file cut short while it is read: a SIGBUS);
    gzipped ones (detected by content) are gunzipped on the threads of ``pool`` (a
    ``concurrent.futures`` executor, or ``None``).

    The rest (exactly six fields a line: no blank line, no empty field, no blank at either end
    of a line) is checked by Arrow's CSV reader, which refuses any row of other than six fields
    (:func:`read_batch`): with the counts checked here, every line is then six fields separated
    by single blanks.
    """
    files = [Path(path) for path in paths]
    if not files:
        return []
    sizes = []
    for path in files:
        try:
            sizes.append(max(os.stat(path).st_size, 0))
        except OSError:
            sizes.append(0)
    # room for a missing last line feed each; anonymous memory, its pages provided at once
    # where the system can (Linux: one call instead of a page fault per 4 kB; a bytearray
    # would be filled with zeros first)
    size = sum(sizes) + len(files)
    populate = getattr(mmap, "MAP_POPULATE", 0)
    buffer = (
        mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        if populate
        else mmap.mmap(-1, size)
    )
    view = memoryview(buffer)
    at = 0
    regions: list[tuple[int, int] | bytes | None] = []
    for path, size in zip(files, sizes, strict=True):
        try:
            with open(path, "rb") as handle:
                got = handle.readinto(view[at : at + size]) or 0
                grown = handle.read(1) != b""
        except OSError:
            regions.append(None)  # (missing, a folder, unreadable: the strict reader says)
            continue
        if grown or buffer[at : at + 2] == _GZIP_MAGIC:  # on its own (gunzipped below)
            regions.append(b"" if grown else bytes(view[at : at + got]))
            continue
        if got and buffer[at + got - 1] != 0x0A:
            buffer[at + got] = 0x0A
            got += 1
        regions.append((at, at + got))
        at += got
    own = [i for i, region in enumerate(regions) if isinstance(region, bytes)]
    get = pool.map if pool is not None and len(own) > 1 else map
    for i, data in zip(own, get(_gunzipped, [files[i] for i in own]), strict=True):
        regions[i] = data
    texts: list[PlainText | None] = []
    for path, region in zip(files, regions, strict=True):
        if region is None:
            texts.append(None)
        elif isinstance(region, tuple):
            texts.append(_vouched(path, buffer, *region))
        else:  # gunzipped (or grown while read): a buffer of its own
            data = bytearray(region)
            if data and not data.endswith(b"\n"):
                data += b"\n"
            text = _vouched(path, data, 0, len(data))
            texts.append(
                None if text is None else PlainText(path, data, text.delimiter, text.lines)
            )
    return texts


def _gunzipped(path: Path) -> bytearray | None:
    try:
        return bytearray(read_bytes(path))
    except InputDataError:
        return None


def _vouched(path: Path, buffer: mmap.mmap | bytearray, start: int, stop: int) -> PlainText | None:
    """The text of ``buffer[start:stop]``, or ``None`` when it is empty, not ASCII, holds a
    comment line or a control character other than line feeds and (in a file without spaces)
    five tabs a line. A file of tabs and spaces has its tabs made spaces in place."""
    if stop <= start:
        return None
    if buffer.find(b"#", start, stop) >= 0 and (
        buffer[start] == 0x23 or buffer.find(b"\n#", start, stop) >= 0
    ):
        return None
    codes = np.frombuffer(buffer, dtype=np.uint8, count=stop - start, offset=start)
    tabs = buffer.find(b"\t", start, stop) >= 0
    if tabs and buffer.find(b" ", start, stop) >= 0:
        np.putmask(codes, codes == 0x09, 0x20)
        tabs = False
    lines, below = _counts(codes)
    # line feeds, tabs, any other control character (CR, NUL, vertical tab, ...) and any byte
    # that is not ASCII (negative as int8): six fields a line leave exactly one line feed (and
    # five tabs) a line
    if below != lines * (6 if tabs else 1):
        return None
    view = memoryview(buffer)[start:stop]
    return PlainText(path, view, "\t" if tabs else " ", lines, buffer, start)


_CHUNK = 1 << 20
"""Bytes compared at a time by :func:`_counts` (a scratch mask of this size, reused, costs
less than a mask of the whole file, whose pages the system must first provide)."""


def _counts(codes: np.ndarray) -> tuple[int, int]:
    """The line feeds of `n` uint8 ``codes``, and the bytes below 0x20 or above 0x7F."""
    scratch = np.empty(min(codes.size, _CHUNK), dtype=bool)
    signed = codes.view(np.int8)
    lines = below = 0
    for start in range(0, codes.size, _CHUNK):
        part = codes[start : start + _CHUNK]
        mask = scratch[: part.size]
        lines += int(np.count_nonzero(np.equal(part, 0x0A, out=mask)))
        below += int(np.count_nonzero(np.less(signed[start : start + _CHUNK], 0x20, out=mask)))
    return lines, below


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


@dataclass(frozen=True)
class ColumnBatch:
    """Runs read as columns together: every line of every run, run after run, in file order,
    with each query id and document id coded as its index among the distinct ones.

    Attributes:
        runs: The runs (their columns are slices of the batch's).
        sizes: `num_runs` int64: the lines of each run.
        qid: `num_lines` Arrow strings (a chunked array): query ids.
        docno: `num_lines` Arrow strings (a chunked array): document ids.
        score: `num_lines` float64 scores (``-0.0`` read as ``0.0``).
        qid_codes: `num_lines` int64 indices into ``qid_values``.
        qid_values: Arrow strings: each query id once.
        doc_codes: `num_lines` int64 indices into ``doc_values``.
        doc_values: Arrow strings: each document id once.
    """

    runs: list[RunColumns]
    sizes: np.ndarray
    qid: Any
    docno: Any
    score: np.ndarray
    qid_codes: np.ndarray
    qid_values: Any
    doc_codes: np.ndarray
    doc_values: Any

    @classmethod
    def of(cls, runs: list[RunColumns]) -> ColumnBatch:
        """The batch of runs read apart (their columns concatenated)."""
        pa = arrow()
        if pa is None:  # pragma: no cover - the runs were read with it
            raise ImportError("pyarrow is not installed")
        sizes = np.asarray([len(run.score) for run in runs], dtype=np.int64)
        qid = _chained([run.qid for run in runs])
        docno = _chained([run.docno for run in runs])
        score = np.concatenate([run.score for run in runs])
        return cls(runs, sizes, qid, docno, score, *_codes(qid), *_codes(docno))


def _chained(columns: list[Any]) -> Any:
    """Arrow string arrays or chunked arrays one after the other, as one chunked array (no
    copy)."""
    pa = arrow()
    if pa is None:  # pragma: no cover - the columns were read with it
        raise ImportError("pyarrow is not installed")
    chunks = [c for column in columns for c in getattr(column, "chunks", [column])]
    return pa.chunked_array(chunks, type=pa.string())


def _codes(strings: Any) -> tuple[np.ndarray, Any]:
    """`len(strings)` int64 indices into the distinct strings, and those (Arrow strings).

    Args:
        strings: An Arrow string array or chunked array (encoded as one: the chunks share
            the dictionary).
    """
    encoded = compute("dictionary_encode", strings)
    chunks = getattr(encoded, "chunks", [encoded])
    if not chunks:
        return np.zeros(0, dtype=np.int64), arrow_strings([])
    codes = np.empty(len(strings), dtype=np.int64)
    at = 0
    for chunk in chunks:
        codes[at : at + len(chunk)] = numbers(chunk.indices, np.int32)
        at += len(chunk)
    return codes, chunks[-1].dictionary


def read_columns(texts: list[PlainText]) -> list[RunColumns | None]:
    """Read run files' texts (:func:`plain_text`) as columns, or ``None`` for those the
    compiled reader does not vouch for (see the module documentation)."""
    batch, where = read_batch(texts)
    return [None if batch is None or at is None else batch.runs[at] for at in where]


def read_batch(texts: list[PlainText]) -> tuple[ColumnBatch | None, list[int | None]]:
    """Read run files' texts (:func:`plain_text`) together as one batch.

    The texts are parsed by one call of Arrow's CSV reader (where :func:`plain_texts` read
    them, one after the other), which costs less than a call per file, with tabs as the
    separator when every file has tabs, else spaces.

    Returns:
        ``(batch, where)``: the batch of the runs the compiled reader vouches for (``None``
        when none), and for each text the index of its run in ``batch.runs`` (``None``: not
        vouched for).
    """
    pa = arrow() if texts else None  # (no file: no need to load pyarrow)
    if pa is None:
        return None, [None] * len(texts)
    delimiter = _delimiter(texts)
    pieces: list[tuple[list[int], tuple[Any, Any, np.ndarray]]] = []
    columns = _parse(texts, delimiter)
    if columns is not None:
        pieces.append((list(range(len(texts))), columns))
    else:  # some file is doubtful: find it
        for i, text in enumerate(texts):
            one = _parse([text], delimiter)
            if one is not None:
                pieces.append(([i], one))
    if not pieces:
        return None, [None] * len(texts)
    if len(pieces) == 1:
        qid, docno, score = pieces[0][1]
    else:  # the ids stay in the reader's blocks; one copy of the scores
        qid = _chained([columns[0] for _, columns in pieces])
        docno = _chained([columns[1] for _, columns in pieces])
        score = np.concatenate([columns[2] for _, columns in pieces])
    order = [i for chosen, _ in pieces for i in chosen]
    batch, kept = _batch([texts[i] for i in order], qid, docno, score)
    where: list[int | None] = [None] * len(texts)
    for at, i in enumerate(i for i, ok in zip(order, kept, strict=True) if ok):
        where[i] = at
    return batch, where


def _batch(
    texts: list[PlainText], qid: Any, docno: Any, score: np.ndarray
) -> tuple[ColumnBatch | None, list[bool]]:
    """The batch of the parsed ``texts``, less the files with a score that is not finite or
    a (query, document) pair twice (which the strict reader reads), and which texts it holds.
    """
    sizes = np.asarray([t.lines for t in texts], dtype=np.int64)
    file_of = np.repeat(np.arange(len(texts)), sizes)
    qid_codes, qid_values = _codes(qid)
    doc_codes, doc_values = _codes(docno)
    doubtful = np.zeros(len(texts), dtype=bool)
    doubtful[file_of[~np.isfinite(score)]] = True  # nan, inf, a magnitude beyond a double's
    group = file_of * len(qid_values) + qid_codes
    doubtful[file_of[_repeated(group * max(len(doc_values), 1) + doc_codes)]] = True
    if doubtful.any():  # rare: drop their lines
        keep = np.flatnonzero(~np.repeat(doubtful, sizes))
        taken = arrow_numbers(keep)
        qid, docno, score = take(qid, taken), take(docno, taken), score[keep]
        qid_codes, doc_codes = qid_codes[keep], doc_codes[keep]
        texts = [t for t, bad in zip(texts, doubtful.tolist(), strict=True) if not bad]
        sizes = sizes[~doubtful]
    kept = (~doubtful).tolist()
    if not texts:
        return None, kept
    runs: list[RunColumns] = []
    starts = (np.cumsum(sizes) - sizes).tolist()
    for text, start, size in zip(texts, starts, sizes.tolist(), strict=True):
        name = text.path.name
        runs.append(
            RunColumns(
                name=name[:-3] if name.endswith(".gz") else name,
                tag=text.first_line().split()[5].decode("ascii"),
                qid=qid.slice(start, size),
                docno=docno.slice(start, size),
                score=score[start : start + size],
            )
        )
    batch = ColumnBatch(
        runs, sizes, qid, docno, score, qid_codes, qid_values, doc_codes, doc_values
    )
    return batch, kept


def _delimiter(texts: list[PlainText]) -> str:
    """The field separator of texts parsed together: tabs when every text has tabs, else
    spaces (the tabs of the texts of tabs are then made spaces, in place: no field holds a
    blank, so the fields are the same)."""
    delimiter = "\t" if all(t.delimiter == "\t" for t in texts) else " "
    for text in texts:
        if text.delimiter != delimiter:
            codes = np.frombuffer(text.data, dtype=np.uint8)  # (writable: a buffer's slice)
            np.putmask(codes, codes == 0x09, 0x20)
    return delimiter


def _together(texts: list[PlainText]) -> Any:
    """The texts one after the other: a slice of their buffer when they lie there in order,
    else a copy."""
    first, buffer = texts[0], texts[0].buffer
    at = first.start
    for text in texts:
        if buffer is None or text.buffer is not buffer or text.start != at:
            return b"".join(text.data for text in texts)
        at += len(text.data)
    return memoryview(buffer)[first.start : at] if buffer is not None else first.data


def _parse(texts: list[PlainText], delimiter: str) -> tuple[Any, Any, np.ndarray] | None:
    """The query ids, document ids and scores of the texts, one after the other, or ``None``
    when a line of one of them has other than six fields or a score Arrow refuses."""
    pa = arrow()
    if pa is None:  # pragma: no cover - read_batch checked
        return None
    from pyarrow import csv

    types = {**dict.fromkeys(_RUN_NAMES, pa.string()), "score": pa.float64()}
    data = _together(texts)
    try:
        table = csv.read_csv(
            pa.py_buffer(data),
            read_options=csv.ReadOptions(column_names=list(_RUN_NAMES), use_threads=False),
            parse_options=csv.ParseOptions(
                delimiter=delimiter,
                quote_char=False,
                double_quote=False,
                escape_char=False,
                ignore_empty_lines=False,  # a blank line is a row of one field: refused
            ),
            convert_options=csv.ConvertOptions(
                column_types=types,
                include_columns=["qid", "docno", "score"],
                strings_can_be_null=False,
                null_values=[],
                check_utf8=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return None  # a line of other than six fields, a score that is no number, 2 GB of ids
    if table.num_rows != sum(t.lines for t in texts):  # a CR, which Arrow reads as a line end
        return None
    score = np.empty(table.num_rows, dtype=np.float64)
    at = 0
    for chunk in table.column("score").chunks:
        score[at : at + len(chunk)] = numbers(chunk, np.float64)
        at += len(chunk)
    score += 0.0  # -0.0 -> 0.0 (C: equal)
    # the ids stay in the reader's blocks (chunked arrays): joining them would copy them
    return table.column("qid"), table.column("docno"), score


_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
"""Odd 64-bit multipliers of the hash rounds of :func:`_repeated`."""


def _repeated(keys: np.ndarray) -> np.ndarray:
    """Indices of the entries of `n` int64 ``keys`` (>= 0) whose key occurs more than once.

    A few rounds of hashing set aside the entries whose key shares no hash slot with another
    (each such key occurs once); the few left are compared exactly (sorted).
    """
    index = np.arange(keys.size)
    table = np.empty(1 << int(2 * max(keys.size, 1)).bit_length(), dtype=np.int32)
    for multiplier in _MIX:
        if index.size <= 1024:
            break
        bits = int(2 * index.size).bit_length()  # a table 2 to 4 times larger (reused)
        slots = ((keys.astype(np.uint64) * np.uint64(multiplier)) >> np.uint64(64 - bits)).astype(
            np.intp
        )
        entries = np.arange(keys.size, dtype=np.int32)
        table[slots] = entries  # one of the entries of each slot
        owner = table[slots]
        shared = owner != entries
        shared[owner[shared]] = True  # and the entry it lost to
        keys, index = keys[shared], index[shared]
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    repeated = np.zeros(keys.size, dtype=bool)  # (np.unique would import numpy.ma: 20 ms)
    repeated[order[same]] = repeated[order[same + 1]] = True
    return index[repeated]
