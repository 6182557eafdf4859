"""Opening a judgement database: what is in the file, the schema, the migration, permissions.

:func:`open_database` looks at an existing file read-only first (:func:`inspect_database`) and
refuses, before anything is written (no WAL conversion, no table, no token), a file that is not
SQLite or is the database of another application. A database of the first version (one shared
token in ``meta``, no ``tokens`` table, answers only) is migrated in one transaction: the
judgements are kept as they are, the shared token is deleted (its links stop working: give
each annotator a link of their own with ``probrank annotators add``), and the schema gains
per-annotator tokens and retraction events (undo).

The file and its ``-wal`` / ``-shm`` companions are made and kept readable by their owner only
(0600): they hold every judgement and the token hashes.
"""

from __future__ import annotations

import os
import sqlite3
from enum import Enum
from pathlib import Path
from urllib.parse import quote

from probrank.exceptions import InputDataError

__all__ = ["APP", "SCHEMA_VERSION", "DatabaseKind", "inspect_database", "open_database"]

APP = "probrank-serve"
"""The ``meta`` value ``app`` that marks a probrank judgement database."""

SCHEMA_VERSION = 2
"""The schema this version writes."""

_V1_TABLES = frozenset({"meta", "annotators", "priors", "judgements", "sqlite_sequence"})

_JUDGEMENTS = """
CREATE TABLE judgements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    annotator TEXT NOT NULL REFERENCES annotators (name),
    qid TEXT NOT NULL,
    round INTEGER NOT NULL CHECK (round >= 0),
    left_index INTEGER NOT NULL,
    right_index INTEGER NOT NULL,
    left_id TEXT NOT NULL,
    right_id TEXT NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('left', 'right', 'tie', 'undo')),
    retracts TEXT REFERENCES judgements (id),
    created REAL NOT NULL,
    UNIQUE (annotator, qid, round),
    CHECK ((choice = 'undo') = (retracts IS NOT NULL))
);
CREATE INDEX judgements_by_question ON judgements (qid, seq);
CREATE INDEX judgements_by_annotator ON judgements (annotator, qid, seq);
CREATE UNIQUE INDEX judgements_retracted ON judgements (retracts) WHERE retracts IS NOT NULL;
"""

_TOKENS = """
CREATE TABLE tokens (
    hash TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK (role IN ('admin', 'annotator')),
    annotator TEXT REFERENCES annotators (name),
    created REAL NOT NULL,
    revoked REAL,
    CHECK ((role = 'admin') = (annotator IS NULL))
);
CREATE INDEX tokens_by_annotator ON tokens (annotator);
"""

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE annotators (name TEXT PRIMARY KEY, created REAL NOT NULL);
CREATE TABLE priors (qid TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
{_JUDGEMENTS}
{_TOKENS}
INSERT INTO meta (key, value) VALUES ('app', '{APP}'), ('schema', '{SCHEMA_VERSION}');
"""

_MIGRATE_V1 = f"""
ALTER TABLE judgements RENAME TO judgements_v1;
DROP INDEX IF EXISTS judgements_by_question;
{_JUDGEMENTS}
INSERT INTO judgements (seq, id, annotator, qid, round, left_index, right_index, left_id,
    right_id, choice, retracts, created)
SELECT seq, id, annotator, qid, round, left_index, right_index, left_id, right_id, choice,
    NULL, created FROM judgements_v1 ORDER BY seq;
DROP TABLE judgements_v1;
{_TOKENS}
DELETE FROM meta WHERE key = 'token';
INSERT OR REPLACE INTO meta (key, value) VALUES ('app', '{APP}'), ('schema', '{SCHEMA_VERSION}');
"""


class DatabaseKind(str, Enum):
    """What :func:`inspect_database` found."""

    NEW = "new"
    """No file, an empty file, or a SQLite file without tables: made from scratch."""
    V1 = "v1"
    """A database of the first version (one shared token): migrated on open."""
    CURRENT = "current"
    """This version's schema."""


def _read_only(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=30.0)


def inspect_database(path: str | os.PathLike[str]) -> DatabaseKind:
    """What the file at ``path`` is, read without writing anything.

    Raises:
        InputDataError: a folder, a file that is not SQLite, another application's database,
            or a probrank database of a newer schema.
    """
    path = Path(path)
    if path.is_dir():
        raise InputDataError("is a folder, not a database file", path=path)
    if not path.exists() or path.stat().st_size == 0:
        return DatabaseKind.NEW
    try:
        with open(path, "rb") as handle:
            if handle.read(16) != b"SQLite format 3\x00":
                raise InputDataError(
                    "is not a SQLite database (another application's file?); probrank serve "
                    "leaves it alone: name another --db",
                    path=path,
                )
        db = _read_only(path)
        try:
            tables = {
                str(name)
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            meta: dict[str, str] = {}
            if "meta" in tables:
                meta = {str(k): str(v) for k, v in db.execute("SELECT key, value FROM meta")}
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise InputDataError(f"not a usable SQLite database ({exc})", path=path) from None
    except OSError as exc:
        raise InputDataError(f"cannot be read ({exc.strerror})", path=path) from None
    if not tables:
        return DatabaseKind.NEW
    if meta.get("app") == APP:
        version = meta.get("schema", "?")
        if version != str(SCHEMA_VERSION):
            raise InputDataError(
                f"a probrank judgement database of schema {version}; this probrank reads "
                f"schema {SCHEMA_VERSION}: serve it with the version that made it",
                path=path,
            )
        return DatabaseKind.CURRENT
    if tables <= _V1_TABLES and "judgements" in tables and "token" in meta:
        return DatabaseKind.V1
    raise InputDataError(
        f"is the SQLite database of another application (tables: {', '.join(sorted(tables))}); "
        "probrank serve leaves it alone: name another --db",
        path=path,
    )


def _owner_only(path: Path) -> None:
    for companion in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            os.chmod(companion, 0o600)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputDataError(
                f"cannot make it private ({exc.strerror})", path=companion
            ) from None


def open_database(path: str | os.PathLike[str]) -> tuple[sqlite3.Connection, DatabaseKind]:
    """A connection to the judgement database at ``path`` (WAL, ``synchronous=FULL``), made
    or migrated as needed; the file and its WAL / SHM files 0600.

    Returns:
        The connection (autocommit: ``isolation_level=None``, usable from any thread) and
        what the file was before.

    Raises:
        InputDataError: see :func:`inspect_database`; a missing folder.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise InputDataError("the database's folder does not exist", path=path)
    kind = inspect_database(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise InputDataError(f"cannot open ({exc.strerror})", path=path) from None
    os.close(fd)
    _owner_only(path)
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            if kind is not DatabaseKind.CURRENT:
                script = _SCHEMA if kind is DatabaseKind.NEW else _MIGRATE_V1
                db.executescript(f"BEGIN IMMEDIATE;\n{script}\nCOMMIT;")
        except BaseException:
            db.close()
            raise
    except sqlite3.DatabaseError as exc:
        raise InputDataError(f"not a usable SQLite database ({exc})", path=path) from None
    _owner_only(path)
    return db, kind
