"""Candidate lists: a query and the candidates (documents, answers, replies) to judge for it.

:class:`CandidateList` is the input of the candidate models (:class:`probrank.models.GPFRanker`,
:class:`probrank.models.MultiTaskRanker`) and the common shape of the QA and dialog loaders.
Labels are optional: an unlabelled list (for prediction) has ``labels == grades == ()``.

Three constructors build lists from a user's own data, each validating its input and naming
the row, line or id at fault:

* :meth:`CandidateList.from_dataframe`: one row per (query, candidate);
* :meth:`CandidateList.from_jsonl`: one JSON object per list,
  ``{"qid", "query", "candidates": [{"id", "text", "label"?, "grade"?}, ...]}``
  (:func:`write_jsonl` writes that layout);
* :meth:`CandidateList.from_trec`: TREC topics, a :class:`~probrank.data.trec.Run` and a
  document lookup (a mapping or a callable), with optional qrels for the labels.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probrank._files import write_text_atomically
from probrank.data._io import json_line, read_text_lines
from probrank.data.topics import read_topics
from probrank.data.trec import Qrels, Run
from probrank.data.trec_frames import MAX_INTEGER, check_columns, frame_id, is_missing
from probrank.exceptions import InputDataError

__all__ = [
    "FIRST_STAGE_FEATURES",
    "CandidateList",
    "Documents",
    "check_lists",
    "first_stage_rows",
    "num_pairs",
    "pair_texts",
    "side_features",
    "split_lists",
    "write_jsonl",
]

Documents = Mapping[str, str] | Callable[[str], "str | None"]
"""Document texts: ``{doc_id: text}`` or a function ``doc_id -> text`` (None: unknown)."""

FIRST_STAGE_FEATURES = ("first_stage_score", "first_stage_score_minmax", "first_stage_log_rank")
"""Names of the side features :meth:`CandidateList.from_trec` derives from a run with
``first_stage_features=True``: the run's score, the score min-max scaled within the topic's
list (1 for the top document; 1 for all when they tie) and ``log(rank)`` (0 for the top)."""


def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def _integer(value: object, what: str, *, int64: bool = True) -> int:
    """``value`` as an int, refusing non-integral numbers, NaN, strings, None and (``int64``)
    integers out of an int64's range (a label, 0 or 1, is checked for that later)."""
    if isinstance(value, bool | int):  # exact, also beyond a double's range
        number = int(value)
    else:
        try:
            real = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            raise InputDataError(f"{what} must be an integer, got {_shown(value)}") from None
        if isinstance(value, str) or not math.isfinite(real) or real != int(real):
            raise InputDataError(f"{what} must be an integer, got {_shown(value)}")
        number = int(real)
    if int64 and abs(number) > MAX_INTEGER:
        raise InputDataError(f"{what} is out of range (|value| < 2**63), got {_shown(value)}")
    return number


def _identifier(value: object, what: str) -> str:
    """An id of a JSON line: a string or a number; null (None), NaN and "" are refused."""
    if is_missing(value):
        raise InputDataError(f"{what} is missing (null)")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputDataError(f"{what} must be a string or a number, got {_shown(value)}")
    text = str(value)
    if not text:
        raise InputDataError(f"empty {what}")
    return text


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InputDataError(f"{what} must be a string, got {value!r}")
    return value


@dataclass(frozen=True, init=False)
class CandidateList:
    """One query (question, topic or dialog context) and its candidates.

    Args:
        qid: Query id.
        query: Query text.
        candidate_ids: `n` candidate ids, unique within the list.
        candidates: `n` candidate texts.
        labels: `n` binary relevance labels (1 relevant), or None for an unlabelled list;
            derived from ``grades`` (``grade >= 1``) when only grades are given.
        grades: `n` graded judgements; default ``labels``.
        features: `n x k` numeric side features per candidate (e.g. a first-stage score,
            :data:`FIRST_STAGE_FEATURES`), or None; the candidate models append them to the
            encoder's features.
        feature_names: The `k` names of ``features`` (required with them).

    Attributes:
        labels: `n` 0/1 labels, ``()`` when the list is unlabelled.
        grades: `n` grades, ``()`` when the list is unlabelled.
        features: `n` rows of `k` floats, ``()`` when the list has no side features.
        feature_names: `k` names, ``()`` without side features.

    Raises:
        InputDataError: no candidates, lengths that differ, a repeated candidate id, a
            non-string text, labels other than 0/1 or non-integer grades.
    """

    qid: str
    query: str
    candidate_ids: tuple[str, ...]
    candidates: tuple[str, ...]
    labels: tuple[int, ...]
    grades: tuple[int, ...]
    # keyword-only with defaults, so that subclasses' generated __init__ (MediqaList) keep
    # their positional fields
    features: tuple[tuple[float, ...], ...] = field(default=(), kw_only=True)
    feature_names: tuple[str, ...] = field(default=(), kw_only=True)

    def __init__(
        self,
        qid: str,
        query: str,
        candidate_ids: Sequence[str],
        candidates: Sequence[str],
        labels: Sequence[int] | None = None,
        grades: Sequence[int] | None = None,
        *,
        features: Sequence[Sequence[float]] | None = None,
        feature_names: Sequence[str] | None = None,
    ) -> None:
        where = f"candidate list {qid!r}"
        if labels is None and grades is not None:
            grade_values = [_integer(g, f"{where}: grade") for g in grades]
            labels = [int(g >= 1) for g in grade_values]
        label_tuple = (
            ()
            if labels is None
            else tuple(_integer(y, f"{where}: label", int64=False) for y in labels)
        )
        grade_tuple = (
            label_tuple if grades is None else tuple(_integer(g, f"{where}: grade") for g in grades)
        )
        object.__setattr__(self, "qid", str(qid))
        object.__setattr__(self, "query", query)
        object.__setattr__(self, "candidate_ids", tuple(str(c) for c in candidate_ids))
        object.__setattr__(self, "candidates", tuple(candidates))
        object.__setattr__(self, "labels", label_tuple)
        object.__setattr__(self, "grades", grade_tuple)
        rows, names = _side_features(features, feature_names, where)
        object.__setattr__(self, "features", rows)
        object.__setattr__(self, "feature_names", names)
        self.__post_init__()

    def __post_init__(self) -> None:
        where = f"candidate list {self.qid!r}"
        _text(self.query, f"{where}: the query")
        n = len(self.candidates)
        if n == 0:
            raise InputDataError(f"{where} has no candidates")
        if len(self.candidate_ids) != n:
            raise InputDataError(
                f"{where}: {len(self.candidate_ids)} candidate ids but {n} candidate texts"
            )
        for cid, text in zip(self.candidate_ids, self.candidates, strict=True):
            _text(text, f"{where}: the text of candidate {cid!r}")
        seen: set[str] = set()
        for cid in self.candidate_ids:
            if cid in seen:
                raise InputDataError(f"{where}: candidate id {cid!r} appears twice")
            seen.add(cid)
        if len(self.labels) not in (0, n) or len(self.grades) != len(self.labels):
            raise InputDataError(
                f"{where}: {n} candidates, {len(self.labels)} labels and {len(self.grades)} "
                "grades (give one label and grade per candidate, or none)"
            )
        bad = [y for y in self.labels if y not in (0, 1)]
        if bad:
            raise InputDataError(f"{where}: labels must be 0 or 1, got {bad[0]!r}")
        if self.features and len(self.features) != n:
            raise InputDataError(
                f"{where}: {n} candidates but {len(self.features)} rows of side features"
            )

    def __len__(self) -> int:
        return len(self.candidates)

    @property
    def has_labels(self) -> bool:
        """Whether the list carries labels (and grades)."""
        return bool(self.labels)

    @classmethod
    def from_dataframe(
        cls,
        frame: Any,
        *,
        qid: str = "qid",
        query: str = "query",
        candidate_id: str = "candidate_id",
        candidate: str = "candidate",
        label: str | None = "label",
        grade: str | None = "grade",
        relevance_level: int = 1,
    ) -> list[CandidateList]:
        """Lists from a pandas DataFrame with one row per (query, candidate).

        Rows are grouped by query id in order of first appearance; candidates keep their row
        order. The label and grade columns are used when present (set them to None to ignore
        a column); with grades only, a label is ``grade >= relevance_level``.

        Args:
            frame: The DataFrame; not modified.
            qid: Column of query ids (converted to ``str``).
            query: Column of query texts (one text per query id).
            candidate_id: Column of candidate ids (converted to ``str``).
            candidate: Column of candidate texts.
            label: Column of 0/1 labels.
            grade: Column of integer grades.
            relevance_level: Lowest grade labelled relevant when labels come from grades.

        Returns:
            One :class:`CandidateList` per query id.

        Raises:
            InputDataError: a missing column, no rows, a missing or non-string text, a query
                id with two different texts, a candidate id twice for one query, or a bad
                label or grade (the message names the row's index).
        """
        columns = check_columns(frame)
        required = [qid, query, candidate_id, candidate]
        missing = [c for c in required if c not in columns]
        if missing:
            raise InputDataError(f"missing columns {missing}; the DataFrame has {columns}")
        if len(frame) == 0:
            raise InputDataError("the DataFrame has no rows")
        has_label = label is not None and label in columns
        has_grade = grade is not None and grade in columns
        groups: dict[str, dict[str, Any]] = {}
        for index, row in zip(frame.index, frame.to_dict("records"), strict=True):
            where = f"row {index!r}"
            key = frame_id(row[qid], where, repr(qid))
            text = _text(row[query], f"{where}: {query!r}")
            group = groups.setdefault(
                key, {"query": text, "ids": [], "texts": [], "labels": [], "grades": [], "rows": {}}
            )
            if group["query"] != text:
                raise InputDataError(
                    f"{where}: query {key!r} has two texts, {group['query'][:60]!r} and "
                    f"{text[:60]!r}"
                )
            cid = frame_id(row[candidate_id], where, repr(candidate_id))
            if cid in group["rows"]:
                raise InputDataError(
                    f"{where}: candidate {cid!r} of query {key!r} also in row "
                    f"{group['rows'][cid]!r}"
                )
            group["rows"][cid] = index
            group["ids"].append(cid)
            group["texts"].append(_text(row[candidate], f"{where}: {candidate!r}"))
            g = _integer(row[grade], f"{where}: {grade!r}") if has_grade else None
            if has_label:
                group["labels"].append(_integer(row[label], f"{where}: {label!r}", int64=False))
            elif g is not None:
                group["labels"].append(int(g >= relevance_level))
            if g is not None:
                group["grades"].append(g)
        return [
            cls(
                key,
                group["query"],
                group["ids"],
                group["texts"],
                group["labels"] if (has_label or has_grade) else None,
                group["grades"] if has_grade else None,
            )
            for key, group in groups.items()
        ]

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str]) -> list[CandidateList]:
        """Lists from a JSON-lines file, one list per line (``.gz`` transparently).

        Each line is ``{"qid": ..., "query": ..., "candidates": [{"id": ..., "text": ...,
        "label": 0|1, "grade": int}, ...]}``; ``label`` and ``grade`` are optional but, when
        used, given for every candidate of the list. Blank lines are skipped.

        Raises:
            InputDataError: a missing file, invalid JSON, a missing key, a bad value, or a
                query id on two lines (the message names the file and line).
        """
        path = Path(path)
        lists: list[CandidateList] = []
        first_line: dict[str, int] = {}
        for number, line in enumerate(read_text_lines(path), start=1):
            if not line.strip():
                continue
            record = json_line(line, path, number)
            try:
                item = _list_from_record(cls, record)
            except InputDataError as exc:
                raise InputDataError(exc.reason, path=path, line=number) from None
            if item.qid in first_line:
                raise InputDataError(
                    f"query {item.qid!r} appears twice (first on line {first_line[item.qid]})",
                    path=path,
                    line=number,
                )
            first_line[item.qid] = number
            lists.append(item)
        if not lists:
            raise InputDataError("no candidate lists in the file", path=path)
        return lists

    @classmethod
    def from_trec(
        cls,
        topics: Mapping[str, str] | str | os.PathLike[str],
        run: Run,
        documents: Documents,
        qrels: Qrels | None = None,
        *,
        depth: int | None = 100,
        relevance_level: int = 1,
        first_stage_features: bool = False,
    ) -> list[CandidateList]:
        """One list per topic of ``run``: its top ``depth`` documents in trec_eval order.

        Args:
            topics: ``{query_id: text}`` or a TREC topics file (see
                :func:`probrank.data.topics.read_topics`).
            run: The run whose lists are re-ranked; not modified.
            documents: ``{doc_id: text}`` or a function ``doc_id -> text`` (None: unknown).
            qrels: Judgements for labels and grades (unjudged documents: grade 0); None for
                unlabelled lists.
            depth: Candidates per topic (None: all).
            relevance_level: Lowest grade labelled relevant.
            first_stage_features: Attach the run's scores as side features
                (:data:`FIRST_STAGE_FEATURES`), for models fitted on such lists.

        Returns:
            One :class:`CandidateList` per topic with a non-empty list, in the run's order.

        Raises:
            InputDataError: a run topic without a text, a document without a text, a bad
                ``depth`` or a run with no documents.
        """
        if depth is not None and depth < 1:
            raise InputDataError(f"depth must be a positive integer or None, got {depth}")
        if not isinstance(run, Run):
            raise InputDataError(f"run must be a probrank.data.Run, got {type(run).__name__}")
        texts = dict(topics) if isinstance(topics, Mapping) else read_topics(topics)
        lookup = documents.get if isinstance(documents, Mapping) else documents
        if not callable(lookup):
            raise InputDataError(
                f"documents must be a mapping doc_id -> text or a callable, got {documents!r}"
            )
        judged = qrels.as_dict() if qrels is not None else None
        lists: list[CandidateList] = []
        for qid in run:
            ranking = run.ranking(qid, depth)
            if not ranking:
                continue
            if qid not in texts:
                raise InputDataError(f"no topic text for query {qid!r} of run {run.name!r}")
            ids = [doc for doc, _ in ranking]
            bodies = []
            for doc in ids:
                body = lookup(doc)
                if body is None:
                    raise InputDataError(f"no text for document {doc!r} (query {qid!r})")
                bodies.append(body)
            grades = None
            if judged is not None:
                grades = [judged.get(qid, {}).get(doc, 0) for doc in ids]
            labels = None if grades is None else [int(g >= relevance_level) for g in grades]
            extra: dict[str, Any] = {}
            if first_stage_features:
                extra = {
                    "features": first_stage_rows([score for _, score in ranking]),
                    "feature_names": FIRST_STAGE_FEATURES,
                }
            lists.append(cls(qid, texts[qid], ids, bodies, labels, grades, **extra))
        if not lists:
            raise InputDataError(f"run {run.name!r} ranks no documents")
        return lists


def first_stage_rows(scores: Sequence[float]) -> list[tuple[float, float, float]]:
    """The :data:`FIRST_STAGE_FEATURES` of one topic's candidates, given their `n` first-stage
    scores in rank order (best first)."""
    values = [float(s) for s in scores]
    if not values:
        return []
    high, low = max(values), min(values)
    span = high - low
    return [
        (s, (s - low) / span if span > 0 else 1.0, math.log(rank))
        for rank, s in enumerate(values, start=1)
    ]


def _side_features(
    features: Sequence[Sequence[float]] | None, names: Sequence[str] | None, where: str
) -> tuple[tuple[tuple[float, ...], ...], tuple[str, ...]]:
    if features is None:
        if names:
            raise InputDataError(f"{where}: feature_names given without features")
        return (), ()
    if names is None:
        raise InputDataError(f"{where}: side features need feature_names")
    name_tuple = tuple(str(n) for n in names)
    if not name_tuple or len(set(name_tuple)) != len(name_tuple):
        raise InputDataError(f"{where}: feature_names must be unique and non-empty, got {names!r}")
    rows = []
    for i, row in enumerate(features):
        values = tuple(float(v) for v in row)
        if len(values) != len(name_tuple) or not all(math.isfinite(v) for v in values):
            raise InputDataError(
                f"{where}: side-feature row {i} must hold {len(name_tuple)} finite numbers, "
                f"got {tuple(row)!r}"
            )
        rows.append(values)
    return tuple(rows), name_tuple


def _list_from_record(cls: type[CandidateList], record: object) -> CandidateList:
    if not isinstance(record, dict):
        raise InputDataError(f"expected a JSON object, got {type(record).__name__}")
    missing = [k for k in ("qid", "query", "candidates") if k not in record]
    if missing:
        raise InputDataError(f"missing keys {missing}")
    candidates = record["candidates"]
    if not isinstance(candidates, list) or not all(isinstance(c, dict) for c in candidates):
        raise InputDataError("'candidates' must be a list of objects")
    qid = _identifier(record["qid"], "'qid'")
    for key in ("id", "text"):
        if any(key not in c for c in candidates):
            raise InputDataError(f"list {qid!r}: every candidate needs {key!r}")
    labels = grades = None
    for key in ("label", "grade"):
        present = [key in c for c in candidates]
        if any(present) and not all(present):
            raise InputDataError(f"list {qid!r}: {key!r} given for some candidates only")
    if candidates and "label" in candidates[0]:
        labels = [c["label"] for c in candidates]
    if candidates and "grade" in candidates[0]:
        grades = [c["grade"] for c in candidates]
    return cls(
        qid,
        record["query"],
        [_identifier(c["id"], f"list {qid!r}: candidate 'id'") for c in candidates],
        [c["text"] for c in candidates],
        labels,
        grades,
    )


def write_jsonl(lists: Iterable[CandidateList], path: str | os.PathLike[str]) -> Path:
    """Write lists atomically in :meth:`CandidateList.from_jsonl`'s layout (UTF-8)."""
    lines = []
    for item in lists:
        candidates = []
        for i, (cid, text) in enumerate(zip(item.candidate_ids, item.candidates, strict=True)):
            entry: dict[str, Any] = {"id": cid, "text": text}
            if item.has_labels:
                entry["label"], entry["grade"] = item.labels[i], item.grades[i]
            candidates.append(entry)
        record = {"qid": item.qid, "query": item.query, "candidates": candidates}
        lines.append(json.dumps(record, ensure_ascii=False))
    return write_text_atomically(path, "".join(line + "\n" for line in lines))


def check_lists(lists: Sequence[CandidateList], *, labelled: bool, what: str = "lists") -> None:
    """Raise :class:`InputDataError` unless ``lists`` is a non-empty sequence of
    :class:`CandidateList` with unique query ids (and labels on every list if ``labelled``)."""
    if isinstance(lists, CandidateList) or not isinstance(lists, Sequence) or not lists:
        raise InputDataError(f"{what} must be a non-empty sequence of CandidateList")
    seen: set[str] = set()
    for item in lists:
        if not isinstance(item, CandidateList):
            raise InputDataError(f"{what} must hold CandidateList objects, got {type(item)!r}")
        if item.qid in seen:
            raise InputDataError(f"{what}: query id {item.qid!r} appears twice")
        seen.add(item.qid)
        if labelled and not item.has_labels:
            raise InputDataError(f"{what}: list {item.qid!r} has no labels")


def split_lists(
    train: Sequence[CandidateList],
    validation: Sequence[CandidateList] | None,
    fraction: float,
    *,
    seed: int,
) -> tuple[list[CandidateList], list[CandidateList]]:
    """Labelled training and validation lists: as given, or a held-out share of ``train``.

    Args:
        train: Labelled training lists.
        validation: Labelled validation lists, or None to hold out lists of ``train``.
        fraction: Share of ``train`` held out when ``validation`` is None (at least one list,
            at most all but one), chosen at random.
        seed: Seeds the choice.

    Returns:
        ``(training lists, validation lists)``, each in input order.

    Raises:
        InputDataError: empty or unlabelled lists, repeated query ids, or fewer than two
            training lists (or ``fraction <= 0``) when some must be held out.
    """
    import torch

    check_lists(train, labelled=True, what="train_lists")
    if validation is not None:
        check_lists(validation, labelled=True, what="validation_lists")
        return list(train), list(validation)
    if len(train) < 2 or fraction <= 0:
        raise InputDataError(
            "without validation lists, at least 2 training lists and a validation fraction > 0 "
            "are needed to hold some out"
        )
    n_val = min(len(train) - 1, max(1, round(fraction * len(train))))
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed)).tolist()
    held = set(order[:n_val])
    return (
        [item for i, item in enumerate(train) if i not in held],
        [item for i, item in enumerate(train) if i in held],
    )


def num_pairs(lists: Sequence[CandidateList]) -> int:
    """Number of (query, candidate) pairs in ``lists``."""
    return sum(len(item) for item in lists)


def pair_texts(lists: Sequence[CandidateList]) -> tuple[list[str], list[str]]:
    """The `n` query texts and `n` candidate texts of all pairs, list by list (`n` =
    :func:`num_pairs`), as encoders' ``encode_pairs`` takes them."""
    queries = [item.query for item in lists for _ in item.candidates]
    candidates = [c for item in lists for c in item.candidates]
    return queries, candidates


def side_features(
    lists: Sequence[CandidateList],
) -> tuple[list[tuple[float, ...]], tuple[str, ...]]:
    """The `n` side-feature rows of all candidates of ``lists`` (list by list) and their names.

    Raises:
        InputDataError: lists that carry different side features (or some none).
    """
    names = lists[0].feature_names if lists else ()
    for item in lists:
        if item.feature_names != names:
            raise InputDataError(
                f"list {item.qid!r} carries side features {list(item.feature_names)}, list "
                f"{lists[0].qid!r} carries {list(names)}: give every list the same ones"
            )
    return [row for item in lists for row in item.features], names
