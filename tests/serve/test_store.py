"""The judgement database: WAL, one commit per judgement, idempotent ids, one server per file."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from probrank.exceptions import InputDataError
from probrank.serve.annotators import AnnotatorRegistry
from probrank.serve.identity import Identity, Role
from probrank.serve.store import Choice, Judgement, JudgementStore, StaleRoundError

V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE annotators (name TEXT PRIMARY KEY, created REAL NOT NULL);
CREATE TABLE priors (qid TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE judgements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    annotator TEXT NOT NULL REFERENCES annotators (name), qid TEXT NOT NULL,
    round INTEGER NOT NULL CHECK (round >= 0), left_index INTEGER NOT NULL,
    right_index INTEGER NOT NULL, left_id TEXT NOT NULL, right_id TEXT NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('left', 'right', 'tie')), created REAL NOT NULL,
    UNIQUE (annotator, qid, round)
);
CREATE INDEX judgements_by_question ON judgements (qid, seq);
"""
"""The schema of the first version (probrank 0.1 serve), for the migration test."""


def _judgement(jid: str, round_: int = 0, choice: Choice = Choice.LEFT, **changes) -> Judgement:
    values = dict(
        id=jid, annotator="ann", qid="q1", round=round_, left=0, right=1,
        left_id="a", right_id="b", choice=choice,
    )  # fmt: skip
    values.update(changes)
    return Judgement(**values)


def test_database_is_wal_private_and_keeps_only_token_hashes(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with JudgementStore(path) as store:
        assert store.journal_mode == "wal" and store.created
        admin = store.issue_admin_token()
        alice = store.add_annotator("alice")
        assert len(admin) >= 43 and len(alice) >= 43  # 256 random bits
        assert store.identify(admin) == Identity(Role.ADMIN)
        assert store.identify(alice) == Identity(Role.ANNOTATOR, "alice")
        assert store.identify(alice[:-1]) is None
        store.record(_judgement("first-judgement"))
        for companion in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert stat.S_IMODE(companion.stat().st_mode) == 0o600, companion
    with JudgementStore(path) as again:
        assert not again.created
        assert again.identify(alice) == Identity(Role.ANNOTATOR, "alice")  # survives restarts
        newer = again.issue_admin_token()
        assert again.identify(admin) is None and again.identify(newer).role is Role.ADMIN
        assert [j.id for j in again.judgements()] == ["first-judgement"]
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    hashes = [h for (h,) in raw.execute("SELECT hash FROM tokens")]
    assert hashlib.sha256(alice.encode()).hexdigest() in hashes
    dump = "\n".join(raw.iterdump())
    assert alice not in dump and admin not in dump  # only hashes are stored
    raw.close()


def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    raw.execute("INSERT INTO invoices (total) VALUES (12.5)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(InputDataError, match=r"another application.*invoices"):
        JudgementStore(path)
    with pytest.raises(InputDataError, match="another application"):
        AnnotatorRegistry(path)
    assert path.read_bytes() == before  # no WAL conversion, no table, no token
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()


def test_a_first_version_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    raw = sqlite3.connect(path)
    raw.executescript(V1_SCHEMA)
    raw.execute("INSERT INTO meta VALUES ('token', 'old-shared-token')")
    raw.execute("INSERT INTO annotators VALUES ('bob', 1.0)")
    raw.execute(
        "INSERT INTO judgements (id, annotator, qid, round, left_index, right_index, left_id,"
        " right_id, choice, created) VALUES ('old-judgement', 'bob', 'q1', 0, 0, 1, 'a', 'b',"
        " 'left', 2.0)"
    )
    raw.commit()
    raw.close()
    with JudgementStore(path) as store:
        assert store.migrated
        assert store.identify("old-shared-token") is None  # the shared token is gone
        [old] = store.judgements()
        assert (old.id, old.annotator, old.choice, old.live) == (
            "old-judgement",
            "bob",
            Choice.LEFT,
            True,
        )
        bob = store.add_annotator("bob")  # the same annotator, now with a link of his own
        assert store.identify(bob) == Identity(Role.ANNOTATOR, "bob")
        store.record(_judgement("new-judgement", annotator="bob", round_=1))
    with JudgementStore(path) as again:
        assert not again.migrated and again.count() == 2


def test_an_undo_is_an_event_and_marks_the_judgement(tmp_path: Path) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        store.record(_judgement("judgement-1"))
        undo = _judgement("undo-event-1", round_=1, choice=Choice.UNDO, retracts="judgement-1")
        stored, _ = store.record(undo)
        assert stored.retracts == "judgement-1" and not stored.live
        first, event = store.judgements()
        assert first.retracted_by == "undo-event-1" and not first.live
        assert first.to_json()["retracted"] and event.to_json()["retracts"] == "judgement-1"
        assert store.judgements(live=True) == []
        made_by_sqlite = [json.loads(line) for line in store.export_jsonl().splitlines()]
        assert made_by_sqlite == [j.to_json() for j in store.judgements()]  # keys, order, values
        assert store.export_jsonl(annotator="bob") == ""
        assert store.counts() == {"ann": {}}
        with pytest.raises(StaleRoundError):  # a judgement is taken back once
            store.record(
                _judgement("undo-event-2", round_=2, choice=Choice.UNDO, retracts="judgement-1")
            )
        assert store.count() == 2


def test_record_commits_once_per_id_and_returns_the_stored_row(tmp_path: Path) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        stored, created = store.record(_judgement("judgement-1"))
        assert created and stored.seq == 1 and stored.created > 0
        again, created_again = store.record(_judgement("judgement-1"))
        assert not created_again
        assert again == stored  # the earlier row, nothing written
        store.record(_judgement("judgement-2", round_=1, choice=Choice.TIE))
        assert store.count() == 2
        rows = store.judgements(qid="q1", annotator="ann")
        assert [(j.id, j.winner, j.loser) for j in rows] == [
            ("judgement-1", 0, 1),
            ("judgement-2", None, None),
        ]
        assert store.judgements(after=1)[0].id == "judgement-2"
        assert store.annotators() == ["ann"]


def test_a_second_answer_to_one_round_is_refused_by_the_database(tmp_path: Path) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        store.record(_judgement("judgement-1"))
        with pytest.raises(StaleRoundError, match="round 0"):
            store.record(_judgement("judgement-x", choice=Choice.RIGHT))
        assert store.count() == 1
        # another annotator's round 0 is another session
        store.record(_judgement("judgement-3", annotator="bob"))
        assert store.count() == 2


def test_project_identity_is_checked_at_every_start(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with JudgementStore(path) as store:
        store.check_project({"questions": "abc", "posterior": "laplace", "seed": 0})
        store.check_project({"questions": "abc", "posterior": "laplace", "seed": 0})
    with JudgementStore(path) as store:
        with pytest.raises(InputDataError, match=r"posterior = 'laplace'.*'gppl'"):
            store.check_project({"questions": "abc", "posterior": "gppl", "seed": 0})
        assert store.check_prior("q1", "f1")
        assert store.check_prior("q1", "f1")
        assert not store.check_prior("q1", "f2")


def test_one_server_per_database(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with JudgementStore(path):
        with pytest.raises(InputDataError, match="in use by another probrank serve"):
            JudgementStore(path)
    JudgementStore(path).close()  # released on close


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b"this is no database, " * 100), "is not a SQLite database"),
        (lambda p: p.mkdir(), "is a folder"),
    ],
)
def test_bad_database_paths_are_input_errors(tmp_path: Path, make, message: str) -> None:
    path = tmp_path / "j.sqlite"
    make(path)
    with pytest.raises(InputDataError, match=message) as error:
        JudgementStore(path)
    assert str(path) in str(error.value)


def test_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="folder does not exist"):
        JudgementStore(tmp_path / "nope" / "j.sqlite")
