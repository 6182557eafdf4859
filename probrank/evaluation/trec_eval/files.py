"""Evaluating many runs together: files read in parallel, rankings evaluated in groups.

The runs are taken in groups of about :data:`GROUP_BYTES` of
files. The files of a group are read on a few threads (gunzipping and Arrow's CSV reader
release the GIL), each by the compiled reader when it vouches for the file and by the strict
reader otherwise; then the group's column-read runs are ranked and evaluated at once
(:meth:`TrecEvalEngine.per_query_columns`) and its other runs together
(:meth:`TrecEvalEngine.per_query_many`). Errors keep the order of a loop that reads every file
first and then evaluates: the first unreadable file (in the given order) is the error, before
any run that shares no query with the qrels.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probrank.data.trec import OnDuplicate, Run
from probrank.exceptions import InputDataError

if TYPE_CHECKING:
    from probrank.data.trec_columns import RunColumns
    from probrank.evaluation.trec_eval.engine import TopicValues, TrecEvalEngine

__all__ = ["GROUP_BYTES", "RunLike", "RunValues", "evaluate_many"]

RunLike = Run | Mapping[str, Mapping[str, float]] | str | os.PathLike[str]
"""A run: a :class:`Run`, a mapping ``query_id -> {doc_id: score}`` or a file path."""

GROUP_BYTES = 64 * 2**20
"""Run files evaluated together hold at most about this many bytes (the first file of a group
whatever its size): enough to share the work, few enough to bound the memory."""


@dataclass(frozen=True)
class RunValues:
    """One run's values, as :meth:`Evaluator.evaluate_many` gives them.

    Attributes:
        name: The run's name (a file's name without ``.gz``).
        tag: The run's tag (a file's first line's).
        per_query: ``{query_id: {measure name: value}}``, queries in trec_eval's order.
        totals: trec_eval's ``all`` values.
    """

    name: str
    tag: str
    per_query: TopicValues
    totals: dict[str, float]


def _load(
    items: list[RunLike], policy: OnDuplicate, pool: Any
) -> list[RunColumns | Run | Mapping[str, Mapping[str, float]]]:
    """Runs as columns (plain files, read together), :class:`Run` (other files, read by the
    strict reader, in order) or as given."""
    from probrank.data.trec_columns import plain_text, read_columns

    files = [(i, item) for i, item in enumerate(items) if not isinstance(item, (Run, Mapping))]
    get = pool.map if pool is not None else map
    texts = list(get(plain_text, [item for _, item in files]))
    plain = [(i, t) for (i, _), t in zip(files, texts, strict=True) if t is not None]
    read = dict(zip([i for i, _ in plain], read_columns([t for _, t in plain]), strict=True))
    loaded: list[RunColumns | Run | Mapping[str, Mapping[str, float]]] = []
    for i, item in enumerate(items):
        columns = read.get(i)
        if columns is not None:
            loaded.append(columns)
        elif isinstance(item, (Run, Mapping)):
            loaded.append(item)
        else:  # doubtful: the strict reader reads it or words the error
            loaded.append(Run.read(item, on_duplicate=policy))
    return loaded


def _size(item: RunLike) -> int:
    if isinstance(item, (Run, Mapping)):
        return sum(len(docs) for docs in item.values()) * 40
    try:
        size = os.path.getsize(item)
    except OSError:
        return 0
    return size * 5 if os.fspath(item).endswith(".gz") else size


def _groups(items: Sequence[RunLike], limit: int) -> Iterator[list[int]]:
    """Indices of ``items`` in groups of about ``limit`` bytes."""
    group: list[int] = []
    total = 0
    for i, item in enumerate(items):
        size = _size(item)
        if group and total + size > limit:
            yield group
            group, total = [], 0
        group.append(i)
        total += size
    if group:
        yield group


@contextmanager
def _pool(threads: int) -> Iterator[Any]:
    """A pool of ``threads`` threads, or ``None`` for one."""
    if threads <= 1:
        yield None
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="probrank-read") as pool:
        yield pool


def evaluate_many(
    engine: TrecEvalEngine,
    runs: Sequence[RunLike],
    on_duplicate: OnDuplicate | str,
    threads: int | None,
) -> list[RunValues]:
    """See :meth:`probrank.evaluation.measures.Evaluator.evaluate_many`."""
    from probrank._options import parse_enum
    from probrank._threads import default_threads
    from probrank.data.trec_columns import RunColumns

    policy = parse_enum(OnDuplicate, on_duplicate, "on_duplicate")
    count = max(1, min(threads if threads is not None else default_threads(), len(runs)))
    results: list[RunValues | None] = [None] * len(runs)
    pending: InputDataError | None = None  # a run that shares no query, raised last
    with _pool(count) as pool:
        for group in _groups(runs, GROUP_BYTES):
            loaded = _load([runs[i] for i in group], policy, pool)
            if pending is not None:
                continue  # only reading errors can still come first
            columns = [
                (i, r) for i, r in zip(group, loaded, strict=True) if isinstance(r, RunColumns)
            ]
            others = [
                (i, r) for i, r in zip(group, loaded, strict=True) if not isinstance(r, RunColumns)
            ]
            try:
                if columns:
                    tables = engine.per_query_columns([r for _, r in columns])
                    for (i, run), table in zip(columns, tables, strict=True):
                        results[i] = _values(engine, run.name, run.tag, table)
                if others:
                    names = [getattr(r, "name", "run") for _, r in others]
                    tables = engine.per_query_many([_mapping(r) for _, r in others], names)
                    for (i, other), table, name in zip(others, tables, names, strict=True):
                        tag = getattr(other, "tag", name)
                        results[i] = _values(engine, name, tag, table)
            except InputDataError as exc:
                pending = exc
    if pending is not None:
        raise pending
    return [r for r in results if r is not None]


def _mapping(run: Run | Mapping[str, Mapping[str, float]]) -> Mapping[str, Mapping[str, float]]:
    if isinstance(run, Run):
        return run.as_dict()
    if not isinstance(run, Mapping):  # pragma: no cover - _load returns one of the three
        raise TypeError(type(run).__name__)
    return Run(run).as_dict()


def _values(engine: TrecEvalEngine, name: str, tag: str, table: TopicValues) -> RunValues:

    return RunValues(name=name, tag=tag, per_query=table, totals=engine.aggregate(table))
