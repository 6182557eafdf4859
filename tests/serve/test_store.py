"""The judgement database: WAL, one commit per judgement, idempotent ids, one server per file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from probrank.exceptions import InputDataError
from probrank.serve.store import Choice, Judgement, JudgementStore, StaleRoundError


def _judgement(jid: str, round_: int = 0, choice: Choice = Choice.LEFT, **changes) -> Judgement:
    values = dict(
        id=jid, annotator="ann", qid="q1", round=round_, left=0, right=1,
        left_id="a", right_id="b", choice=choice,
    )  # fmt: skip
    values.update(changes)
    return Judgement(**values)


def test_database_is_wal_with_full_sync_and_keeps_its_token(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with JudgementStore(path) as store:
        assert store.journal_mode == "wal"
        token = store.token
        assert len(token) >= 32
        store.record(_judgement("first-judgement"))
    with JudgementStore(path) as again:
        assert again.token == token  # the address printed before a restart still works
        assert [j.id for j in again.judgements()] == ["first-judgement"]
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


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
        (lambda p: p.write_bytes(b"this is no database, " * 100), "not a usable SQLite"),
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
