"""The graded judgements of ``probrank serve --pool``, in the judging database.

:class:`PoolStore` opens the same SQLite database as the pairwise pages
(:class:`~probrank.serve.store.JudgementStore`: the one-server lock, annotators and their
tokens, the admin token, the project's identity) and keeps the graded judgements of single
documents in a table of their own, ``pool_judgements``, made on first use::

    seq, id (client-generated, unique), annotator, qid, docno, grade, retracts, created

and, in ``pool_predictions`` (``qid, docno, probability, created``), the relevance model's
predictive P(relevant) of each document the strategy drew uniformly (explored), made when it
was drawn: the judging page's held-out check of the model (:mod:`probrank.pooling.checks`).

An answer has a ``grade`` (>= 0); an undo is an event of its own (``grade`` NULL,
``retracts`` naming the judgement it takes back): nothing is ever deleted. Each record is one
transaction with ``synchronous=FULL`` (committed when :meth:`PoolStore.record` returns).
Recording an id stored before returns the stored row (a double click or a retried request is
harmless). A document has at most one answer that stands per topic: a second one is refused
(:class:`AlreadyJudged`), so the qrels export (:func:`qrels_lines`) has one line per judged
document, as TREC qrels must.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError
from probrank.serve.schema import open_database
from probrank.serve.store import JudgementStore, StaleRoundError, count_table

__all__ = ["AlreadyJudged", "PoolJudgement", "PoolStore", "qrels_lines"]

_TABLE = """
CREATE TABLE IF NOT EXISTS pool_judgements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    annotator TEXT NOT NULL REFERENCES annotators (name),
    qid TEXT NOT NULL,
    docno TEXT NOT NULL,
    grade INTEGER CHECK (grade IS NULL OR grade >= 0),
    retracts TEXT REFERENCES pool_judgements (id),
    created REAL NOT NULL,
    CHECK ((grade IS NULL) = (retracts IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS pool_judgements_by_question ON pool_judgements (qid, seq);
CREATE UNIQUE INDEX IF NOT EXISTS pool_judgements_retracted ON pool_judgements (retracts)
    WHERE retracts IS NOT NULL;
CREATE TABLE IF NOT EXISTS pool_predictions (
    qid TEXT NOT NULL,
    docno TEXT NOT NULL,
    probability REAL NOT NULL CHECK (probability >= 0.0 AND probability <= 1.0),
    created REAL NOT NULL,
    PRIMARY KEY (qid, docno)
);
"""

_COLUMNS = (
    "j.seq, j.id, j.annotator, j.qid, j.docno, j.grade, j.retracts, j.created, "
    "(SELECT u.id FROM pool_judgements u WHERE u.retracts = j.id), "
    "CASE WHEN j.grade IS NULL THEN NULL ELSE (SELECT p.probability FROM pool_predictions p"
    " WHERE p.qid = j.qid AND p.docno = j.docno) END"
)
_LIVE = (
    "j.grade IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pool_judgements u WHERE u.retracts = j.id)"
)


class AlreadyJudged(StaleRoundError):
    """The document has an answer that stands already, or the undo is out of date."""


@dataclass(frozen=True)
class PoolJudgement:
    """One stored event: a graded answer, or an undo.

    Attributes:
        id: The client-generated judgement id (unique in the database).
        annotator: Who judged.
        qid: The topic.
        docno: The document judged (for an undo: the document of the retracted answer).
        grade: The grade (None for an undo event).
        retracts: For an undo event, the id of the answer it takes back.
        created: Unix time of the commit.
        seq: Position in the database (commit order; 0 before it is stored).
        retracted_by: The id of the undo event that took this answer back, if any.
        explored: For an answer to a document the strategy drew uniformly (explored), the
            relevance model's predictive P(relevant) of it when it was chosen; else None.
    """

    id: str
    annotator: str
    qid: str
    docno: str
    grade: int | None
    retracts: str | None = None
    created: float = 0.0
    seq: int = 0
    retracted_by: str | None = None
    explored: float | None = None

    @property
    def live(self) -> bool:
        """An answer that stands: not an undo event, not taken back."""
        return self.grade is not None and self.retracted_by is None

    def to_json(self) -> dict[str, Any]:
        """The JSON-lines export's object."""
        return {
            "id": self.id,
            "seq": self.seq,
            "annotator": self.annotator,
            "qid": self.qid,
            "docno": self.docno,
            "grade": self.grade,
            "created": self.created,
            "retracts": self.retracts,
            "retracted": self.retracted_by is not None,
            "retracted_by": self.retracted_by,
            "explored": self.explored,
        }


def _row(row: tuple[Any, ...]) -> PoolJudgement:
    seq, jid, annotator, qid, docno, grade, retracts, created, retracted_by, explored = row
    return PoolJudgement(
        id=str(jid),
        annotator=str(annotator),
        qid=str(qid),
        docno=str(docno),
        grade=None if grade is None else int(grade),
        retracts=retracts,
        created=float(created),
        seq=int(seq),
        retracted_by=retracted_by,
        explored=None if explored is None else float(explored),
    )


def qrels_lines(judgements: Iterable[PoolJudgement]) -> Iterator[str]:
    """TREC qrels lines ``qid 0 docno grade`` (with newlines) of the answers that stand, in
    judging order (undo events and retracted answers are left out).

    Raises:
        InputDataError: a document with two answers that stand for one topic (the store
            never keeps two; a hand-made list could).
    """
    seen: set[tuple[str, str]] = set()
    for j in judgements:
        if not j.live:
            continue
        if (j.qid, j.docno) in seen:
            raise InputDataError(f"document {j.docno!r} of topic {j.qid!r} is judged twice")
        seen.add((j.qid, j.docno))
        yield f"{j.qid} 0 {j.docno} {j.grade}\n"


class PoolStore:
    """The graded judgements of a pooling project, in the database at ``path``.

    Args:
        path: The database file (made when missing; its folder must exist).

    Attributes:
        base: The database's :class:`~probrank.serve.store.JudgementStore` (the server's
            lock, tokens, annotators, project identity), open while this is.

    Raises:
        InputDataError: see :class:`~probrank.serve.store.JudgementStore`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.base = JudgementStore(path)
        self.path = Path(path)
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        try:
            self._db, _ = open_database(self.path)
            self._db.executescript(f"BEGIN IMMEDIATE;\n{_TABLE}\nCOMMIT;")
            self._reader = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except BaseException:
            self.base.close()
            raise

    def close(self) -> None:
        """Close the database (and release it for another server)."""
        with self._lock, self._read_lock:
            self._reader.close()
            self._db.close()
        self.base.close()

    def __enter__(self) -> PoolStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _get(db: sqlite3.Connection, judgement_id: str) -> PoolJudgement | None:
        row = db.execute(
            f"SELECT {_COLUMNS} FROM pool_judgements j WHERE j.id = ?", (judgement_id,)
        ).fetchone()
        return None if row is None else _row(row)

    def record(self, judgement: PoolJudgement) -> tuple[PoolJudgement, bool]:
        """Store ``judgement`` (an answer or an undo event), committed when this returns.

        Returns:
            ``(stored, created)``: the stored row and whether it is new; for an id stored
            before, that earlier row and False (nothing written).

        Raises:
            AlreadyJudged: an answer to a document that has one standing already; an undo of
                an answer that is not a standing answer of the same annotator and topic.
        """
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                earlier = self._get(db, judgement.id)
                if earlier is not None:
                    db.execute("ROLLBACK")
                    return earlier, False
                self._check(db, judgement)
                db.execute(
                    "INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)",
                    (judgement.annotator, time.time()),
                )
                cursor = db.execute(
                    "INSERT INTO pool_judgements (id, annotator, qid, docno, grade, retracts,"
                    " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        judgement.id,
                        judgement.annotator,
                        judgement.qid,
                        judgement.docno,
                        judgement.grade,
                        judgement.retracts,
                        time.time(),
                    ),
                )
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM pool_judgements j WHERE j.seq = ?",
                    (cursor.lastrowid,),
                ).fetchone()
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return _row(row), True

    @staticmethod
    def _check(db: sqlite3.Connection, judgement: PoolJudgement) -> None:
        if judgement.grade is not None:
            if judgement.grade < 0 or judgement.retracts is not None:
                raise InputDataError(f"a grade must be >= 0, got {judgement.grade}")
            standing = db.execute(
                f"SELECT j.annotator FROM pool_judgements j WHERE j.qid = ? AND j.docno = ?"
                f" AND {_LIVE}",
                (judgement.qid, judgement.docno),
            ).fetchone()
            if standing is not None:
                raise AlreadyJudged(
                    f"document {judgement.docno!r} of topic {judgement.qid!r} was judged "
                    f"already (by {standing[0]})"
                )
            return
        if judgement.retracts is None:
            raise InputDataError("an undo event must name the answer it takes back")
        target = PoolStore._get(db, judgement.retracts)
        if (
            target is None
            or not target.live
            or target.annotator != judgement.annotator
            or target.qid != judgement.qid
            or target.docno != judgement.docno
        ):
            raise AlreadyJudged(
                f"the answer {judgement.retracts!r} is not a standing answer of "
                f"{judgement.annotator!r} on topic {judgement.qid!r}"
            )

    def record_prediction(self, qid: str, docno: str, probability: float) -> None:
        """Store the relevance model's predictive P(relevant) of an explored document of topic
        ``qid``, made when the strategy drew it (before its judgement); a newer prediction of
        the same document replaces it. Committed when this returns."""
        if not 0.0 <= probability <= 1.0:
            raise InputDataError(f"a probability must be in [0, 1], got {probability!r}")
        with self._lock:
            self._db.execute(
                "INSERT INTO pool_predictions (qid, docno, probability, created)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (qid, docno) DO UPDATE SET"
                " probability = excluded.probability, created = excluded.created",
                (qid, docno, float(probability), time.time()),
            )

    def predictions(self, *, qid: str | None = None) -> dict[tuple[str, str], float]:
        """The stored predictions of explored documents: ``(qid, docno) -> P(relevant)``,
        optionally of one topic."""
        query = "SELECT qid, docno, probability FROM pool_predictions"
        values: list[Any] = []
        if qid is not None:
            query += " WHERE qid = ?"
            values.append(qid)
        with self._read_lock:
            rows = self._reader.execute(query, values).fetchall()
        return {(str(q), str(d)): float(p) for q, d, p in rows}

    def get(self, judgement_id: str) -> PoolJudgement | None:
        """The event stored under ``judgement_id``, or None."""
        with self._read_lock:
            return self._get(self._reader, judgement_id)

    def judgements(
        self, *, qid: str | None = None, annotator: str | None = None, live: bool = False
    ) -> list[PoolJudgement]:
        """Stored events in commit order, optionally of one topic and/or annotator, and only
        the answers that stand (``live``)."""
        query = f"SELECT {_COLUMNS} FROM pool_judgements j WHERE 1"
        values: list[Any] = []
        for column, value in (("qid", qid), ("annotator", annotator)):
            if value is not None:
                query += f" AND j.{column} = ?"
                values.append(value)
        if live:
            query += f" AND {_LIVE}"
        with self._read_lock:
            rows = self._reader.execute(query + " ORDER BY j.seq", values).fetchall()
        return [_row(row) for row in rows]

    def counts(self) -> dict[str, dict[str, int]]:
        """Answers that stand per annotator (every registered one) and topic."""
        grouped = (
            f"SELECT j.annotator, j.qid, COUNT(*) FROM pool_judgements j WHERE {_LIVE}"
            " GROUP BY j.annotator, j.qid"
        )
        with self._read_lock:
            return count_table(self._reader, grouped)

    def count(self) -> int:
        """Number of stored events (answers and undo events)."""
        with self._read_lock:
            return int(self._reader.execute("SELECT COUNT(*) FROM pool_judgements").fetchone()[0])
