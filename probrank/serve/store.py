"""The judgement database: SQLite in WAL mode, one transaction per judgement.

A judgement is acknowledged to the browser only after :meth:`JudgementStore.record` has
committed it (``synchronous=FULL``: the write-ahead log is fsynced at every commit, so a
committed judgement survives ``kill -9`` and a power cut). Each judgement carries an id that
the client generated; recording the same id twice stores it once and returns the stored row
(a double click or a browser retry is harmless). ``UNIQUE (annotator, qid, round)`` makes the
database itself refuse a second answer to one round of one annotator's session.

The database also holds the project's secret token (made once, at creation), the project's
identity (data, model and settings, checked at every start: judgements replay only into the
model they were made with) and the prior fingerprint of each question.

One server per database: :class:`JudgementStore` holds an exclusive ``flock`` on the file
while it is open, and a second one is refused with an
:class:`~probrank.exceptions.InputDataError`.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

__all__ = ["Choice", "Judgement", "JudgementStore", "StaleRoundError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (name TEXT PRIMARY KEY, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS priors (qid TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judgements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    annotator TEXT NOT NULL REFERENCES annotators (name),
    qid TEXT NOT NULL,
    round INTEGER NOT NULL CHECK (round >= 0),
    left_index INTEGER NOT NULL,
    right_index INTEGER NOT NULL,
    left_id TEXT NOT NULL,
    right_id TEXT NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('left', 'right', 'tie')),
    created REAL NOT NULL,
    UNIQUE (annotator, qid, round)
);
CREATE INDEX IF NOT EXISTS judgements_by_question ON judgements (qid, seq);
"""

_COLUMNS = (
    "seq, id, annotator, qid, round, left_index, right_index, left_id, right_id, choice, created"
)


class Choice(str, Enum):
    """An annotator's answer to "which answer is better?"."""

    LEFT = "left"
    """The left answer is better."""
    RIGHT = "right"
    """The right answer is better."""
    TIE = "tie"
    """Both bad, or can't tell: no preference is learnt and the pair is not offered again."""


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
        keys = ("annotator", "qid", "round", "left", "right", "choice")
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
        }


class StaleRoundError(InputDataError):
    """Another answer to the same round of the same session is stored already."""


def _row(row: tuple[Any, ...]) -> Judgement:
    seq, jid, annotator, qid, round_, left, right, left_id, right_id, choice, created = row
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
    )


class JudgementStore:
    """The SQLite database of one judging project (created when missing).

    Args:
        path: The database file; its folder must exist.

    Raises:
        InputDataError: a missing folder, a folder or a non-SQLite file at ``path``, or a
            database that another process holds open.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputDataError("the database's folder does not exist", path=self.path)
        if self.path.is_dir():
            raise InputDataError("is a folder, not a database file", path=self.path)
        self._lock = threading.Lock()
        self._lock_fd = self._hold(self.path)
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
            self.journal_mode = str(mode).lower()
            if self._meta("token") is None:
                self._set_meta("token", secrets.token_urlsafe(24))
        except sqlite3.DatabaseError as exc:
            self._release()
            raise InputDataError(f"not a usable SQLite database ({exc})", path=self.path) from None

    @staticmethod
    def _hold(path: Path) -> int | None:
        if fcntl is None:  # pragma: no cover
            return None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
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
        with self._lock:
            if getattr(self, "_db", None) is not None:
                self._db.close()
                self._db = None  # type: ignore[assignment]
            self._release()

    def __enter__(self) -> JudgementStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- project facts --------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def token(self) -> str:
        """The project's secret token (made when the database was created)."""
        with self._lock:
            token = self._meta("token")
        if token is None:  # pragma: no cover - made in __init__
            raise InputDataError("the database has no token", path=self.path)
        return token

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

    def add_annotator(self, name: str) -> None:
        """Register ``name`` (nothing happens when it is known)."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)",
                (name, time.time()),
            )

    def annotators(self) -> list[str]:
        """Every annotator, in order of registration."""
        with self._lock:
            rows = self._db.execute("SELECT name FROM annotators ORDER BY created, name")
            return [str(name) for (name,) in rows.fetchall()]

    def record(self, judgement: Judgement) -> tuple[Judgement, bool]:
        """Store ``judgement`` in its own transaction, committed when this returns.

        Returns:
            ``(stored, created)``: the stored row (with ``seq`` and ``created``) and whether
            it is new; for an id stored before, that earlier row and False (nothing written).

        Raises:
            StaleRoundError: another judgement answers the same round of the session.
        """
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                earlier = self._get(judgement.id)
                if earlier is not None:
                    self._db.execute("ROLLBACK")
                    return earlier, False
                self._db.execute(
                    "INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)",
                    (judgement.annotator, time.time()),
                )
                cursor = self._db.execute(
                    "INSERT INTO judgements (id, annotator, qid, round, left_index, right_index,"
                    " left_id, right_id, choice, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        time.time(),
                    ),
                )
                seq = cursor.lastrowid
                self._db.execute("COMMIT")
            except sqlite3.IntegrityError:
                self._rollback()
                raise StaleRoundError(
                    f"round {judgement.round} of {judgement.annotator!r} on question "
                    f"{judgement.qid!r} was answered already"
                ) from None
            except BaseException:
                self._rollback()
                raise
            stored = self._get_seq(int(seq or 0))
        return stored, True

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _get(self, judgement_id: str) -> Judgement | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM judgements WHERE id = ?", (judgement_id,)
        ).fetchone()
        return None if row is None else _row(row)

    def _get_seq(self, seq: int) -> Judgement:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM judgements WHERE seq = ?", (seq,))
        return _row(row.fetchone())

    def get(self, judgement_id: str) -> Judgement | None:
        """The judgement stored under ``judgement_id``, or None."""
        with self._lock:
            return self._get(judgement_id)

    def judgements(
        self, *, qid: str | None = None, annotator: str | None = None, after: int = 0
    ) -> list[Judgement]:
        """Stored judgements in commit order, optionally of one question and/or annotator
        and after position ``after`` only."""
        query = f"SELECT {_COLUMNS} FROM judgements WHERE seq > ?"
        values: list[Any] = [after]
        if qid is not None:
            query += " AND qid = ?"
            values.append(qid)
        if annotator is not None:
            query += " AND annotator = ?"
            values.append(annotator)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY seq", values).fetchall()
        return [_row(row) for row in rows]

    def count(self) -> int:
        """Number of stored judgements."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])
