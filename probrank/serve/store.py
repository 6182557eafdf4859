"""The judgement database: SQLite in WAL mode, judgements committed in groups.

A judgement is acknowledged to the browser only after :meth:`JudgementStore.record` has
committed it (``synchronous=FULL``: the write-ahead log is fsynced at every commit, so a
committed judgement survives ``kill -9`` and a power cut). Judgements that arrive together
are committed together, in arrival order, with one fsync (group commit:
:meth:`JudgementStore.record`). Each judgement carries an id that
the client generated; recording the same id twice stores it once and returns the stored row
(a double click or a browser retry is harmless). ``UNIQUE (annotator, qid, round)`` makes the
database itself refuse a second answer to one round of one annotator's session. An undo is an
event of its own (choice ``undo``, ``retracts`` naming the judgement it takes back): nothing is
ever deleted, and the exports mark retracted judgements.

The database also holds the annotators and the hashes of their tokens and of the admin token
(:mod:`~probrank.serve.annotators`), the project's identity (data, model and settings, checked
at every start: judgements replay only into the model they were made with) and the prior
fingerprint of each question. Opening checks what the file is before writing anything, and
migrates a database of the first version (:mod:`~probrank.serve.schema`).

One server per database: :class:`JudgementStore` holds an exclusive ``flock`` on the file
while it is open, and a second one is refused with an
:class:`~probrank.exceptions.InputDataError`. Reads (token look-ups, exports, counts) go
through other connections (one for the single-row look-ups of every request: tokens and
judgement ids), so they never wait behind a commit's fsync, and a look-up never waits behind
an export.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError
from probrank.serve import annotators as registry
from probrank.serve.identity import Identity
from probrank.serve.schema import DatabaseKind, open_database

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

__all__ = ["Choice", "Judgement", "JudgementStore", "StaleRoundError", "count_table"]

_COLUMNS = (
    "j.seq, j.id, j.annotator, j.qid, j.round, j.left_index, j.right_index, j.left_id, "
    "j.right_id, j.choice, j.created, j.retracts, "
    "(SELECT u.id FROM judgements u WHERE u.retracts = j.id)"
)
_LIVE = "j.choice != 'undo' AND NOT EXISTS (SELECT 1 FROM judgements u WHERE u.retracts = j.id)"
_WINNER = {"winner": ("left", "right"), "loser": ("right", "left")}
_JSON = (
    "json_object('id', j.id, 'seq', j.seq, 'annotator', j.annotator, 'qid', j.qid, "
    "'round', j.round, 'left', j.left_id, 'right', j.right_id, 'choice', j.choice, "
    + ", ".join(
        f"'{key}', CASE j.choice WHEN 'left' THEN j.{first}_id WHEN 'right' THEN j.{second}_id END"
        for key, (first, second) in _WINNER.items()
    )
    + ", 'created', json(printf('%!.17g', j.created)), 'retracts', j.retracts, "
    "'retracted', json(CASE WHEN r.id IS NULL THEN 'false' ELSE 'true' END), "
    "'retracted_by', r.id) "
    "FROM judgements j LEFT JOIN judgements r ON r.retracts = j.id"
)


class Choice(str, Enum):
    """An annotator's answer to "which answer is better?"."""

    LEFT = "left"
    """The left answer is better."""
    RIGHT = "right"
    """The right answer is better."""
    TIE = "tie"
    """Both bad, or can't tell: no preference is learnt and the pair is not offered again."""
    UNDO = "undo"
    """Not an answer: the event that takes back the annotator's last judgement."""


@dataclass(frozen=True)
class Judgement:
    """One stored answer.

    Attributes:
        id: The client-generated judgement id (unique in the database).
        annotator: Who answered.
        qid: The question.
        round: The round of the annotator's session on ``qid`` it answers (0-based).
        left: Index of the left candidate (as shown).
        right: Index of the right candidate.
        left_id: Candidate id of the left candidate.
        right_id: Candidate id of the right candidate.
        choice: The answer.
        created: Unix time of the commit.
        seq: Position in the database (commit order; 0 before it is stored).
        retracts: For an undo event, the id of the judgement it takes back.
        retracted_by: The id of the undo event that took this judgement back, if any.
    """

    id: str
    annotator: str
    qid: str
    round: int
    left: int
    right: int
    left_id: str
    right_id: str
    choice: Choice
    created: float = 0.0
    seq: int = 0
    retracts: str | None = None
    retracted_by: str | None = None

    @property
    def live(self) -> bool:
        """An answer that stands: not an undo event, not taken back."""
        return self.choice is not Choice.UNDO and self.retracted_by is None

    @property
    def winner(self) -> int | None:
        """Index of the preferred candidate (None for a tie)."""
        return {Choice.LEFT: self.left, Choice.RIGHT: self.right}.get(self.choice)

    @property
    def loser(self) -> int | None:
        """Index of the other candidate (None for a tie)."""
        return {Choice.LEFT: self.right, Choice.RIGHT: self.left}.get(self.choice)

    def same_answer(self, other: Judgement) -> bool:
        """Whether ``other`` answers the same round with the same pair and choice."""
        keys = ("annotator", "qid", "round", "left", "right", "choice", "retracts")
        return all(getattr(self, k) == getattr(other, k) for k in keys)

    def to_json(self) -> dict[str, Any]:
        """The export's JSON object (winner and loser as candidate ids, null for a tie)."""
        ids = {self.left: self.left_id, self.right: self.right_id}
        return {
            "id": self.id,
            "seq": self.seq,
            "annotator": self.annotator,
            "qid": self.qid,
            "round": self.round,
            "left": self.left_id,
            "right": self.right_id,
            "choice": self.choice.value,
            "winner": None if self.winner is None else ids[self.winner],
            "loser": None if self.loser is None else ids[self.loser],
            "created": self.created,
            "retracts": self.retracts,
            "retracted": self.retracted_by is not None,
            "retracted_by": self.retracted_by,
        }


class StaleRoundError(InputDataError):
    """Another answer to the same round of the same session is stored already."""


def count_table(
    reader: sqlite3.Connection,
    grouped: str,
    values: tuple[Any, ...] = (),
    *,
    every_annotator: bool = True,
) -> dict[str, dict[str, int]]:
    """``{annotator: {qid: count}}`` from ``grouped``, a query of ``(annotator, qid, count)``
    rows; with ``every_annotator``, every registered annotator is a key (in the order they
    were added), also one with no row."""
    table: dict[str, dict[str, int]] = {}
    if every_annotator:
        names = reader.execute("SELECT name FROM annotators ORDER BY created, name")
        table = {str(name): {} for (name,) in names.fetchall()}
    for name, qid, count in reader.execute(grouped, values).fetchall():
        table.setdefault(str(name), {})[str(qid)] = int(count)
    return table


def _filters(qid: str | None, annotator: str | None) -> tuple[str, list[Any]]:
    """`` AND ...`` conditions on the question and the annotator (None: any), and their
    parameters."""
    where, values = "", []
    for column, value in (("qid", qid), ("annotator", annotator)):
        if value is not None:
            where += f" AND j.{column} = ?"
            values.append(value)
    return where, values


def _row(row: tuple[Any, ...]) -> Judgement:
    seq, jid, annotator, qid, round_, left, right, left_id, right_id, choice, created = row[:11]
    retracts, retracted_by = row[11:13]
    return Judgement(
        id=jid,
        annotator=annotator,
        qid=qid,
        round=int(round_),
        left=int(left),
        right=int(right),
        left_id=left_id,
        right_id=right_id,
        choice=Choice(choice),
        created=float(created),
        seq=int(seq),
        retracts=retracts,
        retracted_by=retracted_by,
    )


class _Pending:
    """A judgement waiting for its commit, and what its commit settled."""

    __slots__ = ("done", "error", "judgement", "result")

    def __init__(self, judgement: Judgement) -> None:
        self.judgement = judgement
        self.done = False
        self.result: tuple[Judgement, bool] | None = None
        self.error: BaseException | None = None


class JudgementStore:
    """The SQLite database of one judging project (created when missing).

    Args:
        path: The database file; its folder must exist.

    Attributes:
        migrated: Whether the file was a first-version database, migrated on opening (its
            shared token no longer works).
        created: Whether the file was made (or was empty) on opening.

    Raises:
        InputDataError: a missing folder, a folder, a non-SQLite file or another
            application's database at ``path`` (nothing written), or a database that
            another process holds open.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputDataError("the database's folder does not exist", path=self.path)
        if self.path.is_dir():
            raise InputDataError("is a folder, not a database file", path=self.path)
        from probrank.serve.schema import inspect_database

        inspect_database(self.path)  # refuse another application's file before the lock
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._lookup_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending] = []  # judgements waiting for the next commit
        self._known: set[str] = set()  # annotators whose row is committed (never deleted)
        self._lock_fd = self._hold(self.path)
        try:
            self._db, kind = open_database(self.path)
            self._reader = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self._lookups = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except BaseException:
            for name in ("_reader", "_db"):
                if getattr(self, name, None) is not None:
                    getattr(self, name).close()
            self._release()
            raise
        self.migrated = kind is DatabaseKind.V1
        self.created = kind is DatabaseKind.NEW
        self.journal_mode = str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower()

    @staticmethod
    def _hold(path: Path) -> int | None:
        if fcntl is None:  # pragma: no cover
            return None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            raise InputDataError(f"cannot open ({exc.strerror})", path=path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputDataError(
                "is in use by another probrank serve (one server per database)", path=path
            ) from None
        return fd

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # after the connection: closing it drops SQLite's locks
            self._lock_fd = None

    def close(self) -> None:
        """Close the database and release it for another server."""
        with self._lock, self._read_lock, self._lookup_lock:
            for name in ("_lookups", "_reader", "_db"):
                connection = getattr(self, name, None)
                if connection is not None:
                    connection.close()
                    setattr(self, name, None)
            self._release()

    def __enter__(self) -> JudgementStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- project facts and tokens ---------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def announce_url(self, url: str) -> None:
        """Record the address the server of this database listens on (``probrank annotators
        add`` without ``--url`` builds its links on it)."""
        with self._lock:
            registry.announce_url(self._db, url)

    def issue_admin_token(self) -> str:
        """A new admin token (shown once; the earlier admin link ends)."""
        with self._lock:
            return registry.issue_admin_token(self._db)

    def add_annotator(self, name: str) -> str:
        """Register annotator ``name`` with a new link; returns the link's token."""
        with self._lock:
            return registry.add_annotator(self._db, name)[1]

    def revoke_annotator(self, name: str) -> int:
        """End every link of annotator ``name``; returns how many."""
        with self._lock:
            return registry.revoke_annotator(self._db, name)

    def identify(self, token: str) -> Identity | None:
        """Who holds ``token`` (None: unknown or revoked), looked up at every request (on a
        connection of its own: one indexed read that never waits behind an export or a
        commit, cheap enough for the server's event loop)."""
        with self._lookup_lock:
            return registry.identify(self._lookups, token)

    def check_project(self, identity: Mapping[str, Any]) -> None:
        """Remember the project's identity on first use; later, refuse another one.

        Args:
            identity: JSON facts that decide how judgements replay (data digest, model,
                posterior, strategy, seed).

        Raises:
            InputDataError: the database was made for another project (naming the first
                fact that differs).
        """
        text = json.dumps(dict(identity), sort_keys=True)
        with self._lock:
            stored = self._meta("project")
            if stored is None:
                self._set_meta("project", text)
                return
        before = json.loads(stored)
        for key in sorted(set(before) | set(identity)):
            if before.get(key) != identity.get(key):
                raise InputDataError(
                    f"the judgements here were made with {key} = {before.get(key)!r}, this "
                    f"server has {identity.get(key)!r}; start it as before or use another --db",
                    path=self.path,
                )

    def check_prior(self, qid: str, fingerprint: str) -> bool:
        """Remember question ``qid``'s prior fingerprint; False when another one is stored."""
        with self._lock:
            row = self._db.execute(
                "SELECT fingerprint FROM priors WHERE qid = ?", (qid,)
            ).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO priors (qid, fingerprint) VALUES (?, ?)", (qid, fingerprint)
                )
                return True
        return bool(row[0] == fingerprint)

    # -- annotators and judgements --------------------------------------------------------

    def annotators(self) -> list[str]:
        """Every annotator, in order of registration."""
        with self._read_lock:
            rows = self._reader.execute("SELECT name FROM annotators ORDER BY created, name")
            return [str(name) for (name,) in rows.fetchall()]

    def record(self, judgement: Judgement) -> tuple[Judgement, bool]:
        """Store ``judgement`` (an answer or an undo event), committed when this returns.

        Group commit: judgements recorded at the same time by several threads are queued in
        arrival order, and whichever thread takes the writer next commits every queued one in
        one transaction (a refused one undoes only its own insert and leaves the others
        stored) and one fsync; each caller returns only after the commit that holds its
        judgement. Under many annotators a commit's fsync is then paid once per batch instead of
        once per judgement, and no judgement waits behind later ones.

        Returns:
            ``(stored, created)``: the stored row (with ``seq`` and ``created``) and whether
            it is new; for an id stored before, that earlier row and False (nothing written).

        Raises:
            StaleRoundError: another event is stored for the same round of the session, or
                the judgement an undo names was taken back already.
        """
        entry = _Pending(judgement)
        with self._queue_lock:
            self._queue.append(entry)
        with self._lock:  # our entry was queued before: this commits it, or a batch did
            if not entry.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit(batch)
        if entry.error is not None:
            raise entry.error
        if entry.result is None:  # pragma: no cover - _commit settles every entry
            raise RuntimeError("a judgement was left out of its commit")
        return entry.result

    def _commit(self, batch: list[_Pending]) -> None:
        """Write ``batch`` in one transaction; settle every entry (result or error)."""
        staged: list[tuple[_Pending, Judgement]] = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for entry in batch:
                stored = self._stage(entry)
                if stored is not None:
                    staged.append((entry, stored))
            self._db.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            for entry in batch:  # nothing of this batch is stored: no entry is acknowledged
                entry.result, entry.error = None, exc
            for entry in batch:
                entry.done = True
            raise
        for entry, stored in staged:
            self._known.add(stored.annotator)  # committed: the annotator's row stays
            entry.result = (stored, True)
        for entry in batch:
            entry.done = True

    def _stage(self, entry: _Pending) -> Judgement | None:
        """Insert one judgement inside the open transaction: the row as stored, or None when
        the entry is settled already (an id stored before, or refused). A refused insert
        undoes itself only (SQLite's ``ABORT``; with the annotator's row, when this commit
        brings it, in a savepoint), the transaction and the others stay; the stored row is
        the inserted values with their ``seq`` and time (nothing read back)."""
        judgement = entry.judgement
        fresh = judgement.annotator not in self._known  # the first since the store opened
        if fresh:
            self._db.execute("SAVEPOINT judgement")
            self._db.execute(
                "INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)",
                (judgement.annotator, time.time()),
            )
        created = time.time()
        try:
            cursor = self._db.execute(
                "INSERT INTO judgements (id, annotator, qid, round, left_index, right_index,"
                " left_id, right_id, choice, retracts, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    judgement.id,
                    judgement.annotator,
                    judgement.qid,
                    judgement.round,
                    judgement.left,
                    judgement.right,
                    judgement.left_id,
                    judgement.right_id,
                    judgement.choice.value,
                    judgement.retracts,
                    created,
                ),
            )
        except sqlite3.IntegrityError:
            if fresh:
                self._db.execute("ROLLBACK TO judgement")
                self._db.execute("RELEASE judgement")
            earlier = self._get(self._db, judgement.id)
            if earlier is not None:  # the same id, stored before: that row, nothing written
                entry.result = (earlier, False)
                return None
            entry.error = StaleRoundError(
                f"round {judgement.round} of {judgement.annotator!r} on question "
                f"{judgement.qid!r} was answered already"
            )
            return None
        if fresh:
            self._db.execute("RELEASE judgement")
        seq = int(cursor.lastrowid or 0)
        return replace(judgement, seq=seq, created=created, retracted_by=None)

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    @staticmethod
    def _get(db: sqlite3.Connection, judgement_id: str) -> Judgement | None:
        row = db.execute(
            f"SELECT {_COLUMNS} FROM judgements j WHERE j.id = ?", (judgement_id,)
        ).fetchone()
        return None if row is None else _row(row)

    def get(self, judgement_id: str) -> Judgement | None:
        """The judgement stored under ``judgement_id``, or None (one indexed read, on the
        connection of the token look-ups: never behind an export)."""
        with self._lookup_lock:
            return self._get(self._lookups, judgement_id)

    def judgements(
        self,
        *,
        qid: str | None = None,
        annotator: str | None = None,
        after: int = 0,
        live: bool = False,
    ) -> list[Judgement]:
        """Stored events in commit order (one indexed query), optionally of one question
        and/or annotator, after position ``after`` only, and only the answers that stand
        (``live``: no undo events, no retracted judgements)."""
        where, values = _filters(qid, annotator)
        query = f"SELECT {_COLUMNS} FROM judgements j WHERE j.seq > ?{where}"
        values = [after, *values]
        if live:
            query += f" AND {_LIVE}"
        with self._read_lock:
            rows = self._reader.execute(query + " ORDER BY j.seq", values).fetchall()
        return [_row(row) for row in rows]

    def export_jsonl(self, *, qid: str | None = None, annotator: str | None = None) -> str:
        """Every stored event as JSON lines, made by SQLite itself in one indexed query
        (the objects of :meth:`Judgement.to_json`, keys in the same order)."""
        where, values = _filters(qid, annotator)
        query = f"SELECT {_JSON} WHERE 1{where}"
        with self._read_lock:
            rows = self._reader.execute(query + " ORDER BY j.seq", values).fetchall()
        return "".join(f"{line}\n" for (line,) in rows)

    def counts(self, annotator: str | None = None) -> dict[str, dict[str, int]]:
        """Per annotator (every registered one, or ``annotator`` only), answers that stand
        per question (one grouped, indexed query)."""
        where, values = ("", ()) if annotator is None else (" AND j.annotator = ?", (annotator,))
        grouped = (
            f"SELECT j.annotator, j.qid, COUNT(*) FROM judgements j WHERE {_LIVE}{where}"
            " GROUP BY j.annotator, j.qid"
        )
        with self._read_lock:
            return count_table(self._reader, grouped, values, every_annotator=annotator is None)

    def count(self) -> int:
        """Number of stored events (answers and undo events)."""
        with self._read_lock:
            return int(self._reader.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])
