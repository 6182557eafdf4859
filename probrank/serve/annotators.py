"""The annotators of a judgement database and their links (``probrank annotators``).

:class:`AnnotatorRegistry` opens the database without the server's lock (SQLite's own locking
and WAL let it work beside a running ``probrank serve``): an added annotator's link works at
once, a revoked one is refused from the next request on (the server looks every token up in
the database).
"""

from __future__ import annotations

import os
import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from probrank.exceptions import InputDataError
from probrank.serve.identity import Identity, Role, check_name, hash_token, new_token
from probrank.serve.schema import open_database

__all__ = [
    "AnnotatorInfo",
    "AnnotatorRegistry",
    "add_annotator",
    "identify",
    "issue_admin_token",
    "list_annotators",
    "revoke_annotator",
]


@dataclass(frozen=True)
class AnnotatorInfo:
    """One annotator of a database.

    Attributes:
        name: The name (NFC).
        created: Unix time of registration.
        active: Whether a link of theirs works.
        answers: Answers stored (retracted ones and undo events not counted).
    """

    name: str
    created: float
    active: bool
    answers: int


def _names(db: sqlite3.Connection) -> list[str]:
    return [str(n) for (n,) in db.execute("SELECT name FROM annotators ORDER BY created, name")]


def add_annotator(db: sqlite3.Connection, name: str) -> tuple[str, str]:
    """Register ``name`` (if new) and make a link token for it.

    Returns:
        ``(name, token)``: the NFC name and the token (shown once; only its hash is stored).

    Raises:
        InputDataError: an invalid or look-alike name, or a name with a working link already.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        name = check_name(name, _names(db))
        active = db.execute(
            "SELECT COUNT(*) FROM tokens WHERE annotator = ? AND revoked IS NULL", (name,)
        ).fetchone()[0]
        if active:
            raise InputDataError(
                f"annotator {name!r} has a working link already; revoke it first "
                f"(probrank annotators revoke {name}) to make a new one"
            )
        now = time.time()
        db.execute("INSERT OR IGNORE INTO annotators (name, created) VALUES (?, ?)", (name, now))
        token = new_token()
        db.execute(
            "INSERT INTO tokens (hash, role, annotator, created) VALUES (?, 'annotator', ?, ?)",
            (hash_token(token), name, now),
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return name, token


def revoke_annotator(db: sqlite3.Connection, name: str) -> int:
    """End every link of annotator ``name`` (their judgements stay).

    Returns:
        The number of links ended.

    Raises:
        InputDataError: no such annotator.
    """
    wanted = unicodedata.normalize("NFC", name)  # any stored name, even one made before checks
    if db.execute("SELECT 1 FROM annotators WHERE name = ?", (wanted,)).fetchone() is None:
        raise InputDataError(f"there is no annotator {wanted!r} in this database")
    cursor = db.execute(
        "UPDATE tokens SET revoked = ? WHERE annotator = ? AND revoked IS NULL",
        (time.time(), wanted),
    )
    return int(cursor.rowcount)


def list_annotators(db: sqlite3.Connection) -> list[AnnotatorInfo]:
    """Every annotator in order of registration, with link state and answers."""
    rows = db.execute(
        "SELECT a.name, a.created,"
        " EXISTS (SELECT 1 FROM tokens t WHERE t.annotator = a.name AND t.revoked IS NULL),"
        " (SELECT COUNT(*) FROM judgements j WHERE j.annotator = a.name"
        "  AND j.choice != 'undo'"
        "  AND NOT EXISTS (SELECT 1 FROM judgements u WHERE u.retracts = j.id))"
        " FROM annotators a ORDER BY a.created, a.name"
    ).fetchall()
    return [AnnotatorInfo(str(n), float(c), bool(a), int(k)) for n, c, a, k in rows]


ANNOUNCED_URL = "url"
"""The ``meta`` key of the address the database's server announced when it started."""


def announce_url(db: sqlite3.Connection, url: str) -> None:
    """Record ``url`` as the address the database's server listens on."""
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (ANNOUNCED_URL, url))


def announced_url(db: sqlite3.Connection) -> str | None:
    """The address the database's server announced when it last started (None: never)."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (ANNOUNCED_URL,)).fetchone()
    return None if row is None else str(row[0])


def issue_admin_token(db: sqlite3.Connection) -> str:
    """A new admin token; every earlier admin token is revoked."""
    token = new_token()
    now = time.time()
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("UPDATE tokens SET revoked = ? WHERE role = 'admin' AND revoked IS NULL", (now,))
        db.execute(
            "INSERT INTO tokens (hash, role, annotator, created) VALUES (?, 'admin', NULL, ?)",
            (hash_token(token), now),
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return token


def identify(db: sqlite3.Connection, token: str) -> Identity | None:
    """Who holds ``token``: None for an unknown or revoked one (one primary-key look-up)."""
    row = db.execute(
        "SELECT role, annotator FROM tokens WHERE hash = ? AND revoked IS NULL",
        (hash_token(token),),
    ).fetchone()
    return None if row is None else Identity(Role(row[0]), row[1])


class AnnotatorRegistry:
    """The annotators of the database at ``path`` (made when missing; see
    :func:`~probrank.serve.schema.open_database`), beside a running server or not.

    Raises:
        InputDataError: see :func:`~probrank.serve.schema.open_database`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._db, _ = open_database(self.path)

    def add(self, name: str) -> tuple[str, str]:
        """See :func:`~probrank.serve.annotators.add_annotator`."""
        try:
            return add_annotator(self._db, name)
        except InputDataError as exc:
            raise InputDataError(exc.reason, path=self.path) from None

    def revoke(self, name: str) -> int:
        """See :func:`~probrank.serve.annotators.revoke_annotator`."""
        try:
            return revoke_annotator(self._db, name)
        except InputDataError as exc:
            raise InputDataError(exc.reason, path=self.path) from None

    def list(self) -> list[AnnotatorInfo]:
        """See :func:`list_annotators`."""
        return list_annotators(self._db)

    def announced_url(self) -> str | None:
        """See :func:`announced_url`."""
        return announced_url(self._db)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def __enter__(self) -> AnnotatorRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
