"""Evaluating many runs together: files read in parallel, rankings evaluated in groups.

The runs are taken in groups of about :data:`GROUP_BYTES` of
files. The plain files of a group are read one after the other into one buffer and parsed by
one call of Arrow's CSV reader, gzipped ones gunzipped on a few threads (gunzipping releases
the GIL), each file by the compiled reader when it vouches for it and by the strict reader
otherwise; then the group's column-read runs are ranked and evaluated at once
(:meth:`TrecEvalEngine.per_query_batch`) and its other runs together
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
    from probrank.data.trec_columns import ColumnBatch
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
) -> tuple[ColumnBatch | None, list[int | None], list[Run | Mapping[str, Mapping[str, float]]]]:
    """The runs: plain files read together as one batch (``where[i]``: the index of item
    ``i``'s run in the batch, or ``None``), and the others, read by the strict reader in
    order, or as given (``None`` where the batch holds the item)."""
    from probrank.data.trec_columns import plain_texts, read_batch

    files = [(i, item) for i, item in enumerate(items) if not isinstance(item, (Run, Mapping))]
    texts = plain_texts([item for _, item in files], pool)
    plain = [(i, t) for (i, _), t in zip(files, texts, strict=True) if t is not None]
    batch, found = read_batch([t for _, t in plain])
    where: list[int | None] = [None] * len(items)
    for (i, _), at in zip(plain, found, strict=True):
        where[i] = at
    others: list[Run | Mapping[str, Mapping[str, float]]] = []
    for i, item in enumerate(items):
        if where[i] is not None:
            others.append({})
        elif isinstance(item, (Run, Mapping)):
            others.append(item)
        else:  # doubtful: the strict reader reads it or words the error
            others.append(Run.read(item, on_duplicate=policy))
    return batch, where, others


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

    policy = parse_enum(OnDuplicate, on_duplicate, "on_duplicate")
    count = max(1, min(threads if threads is not None else default_threads(), len(runs)))
    results: list[RunValues | None] = [None] * len(runs)
    pending: InputDataError | None = None  # a run that shares no query, raised last
    with _pool(count) as pool:
        for group in _groups(runs, GROUP_BYTES):
            batch, where, loaded = _load([runs[i] for i in group], policy, pool)
            if pending is not None:
                continue  # only reading errors can still come first
            others = [(i, r) for i, r, at in zip(group, loaded, where, strict=True) if at is None]
            try:
                if batch is not None:
                    tables = engine.per_query_batch(batch)
                    for i, at in zip(group, where, strict=True):
                        if at is not None:
                            run = batch.runs[at]
                            results[i] = _values(engine, run.name, run.tag, tables[at])
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
