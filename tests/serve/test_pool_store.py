"""The pool judgements' store: one transaction per event, idempotent ids, one standing answer
per document, undo events, and a qrels export that probrank's own Qrels reader reads back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.serve.pool_store import AlreadyJudged, PoolJudgement, PoolStore, qrels_lines


def _answer(jid: str, docno: str, grade: int, *, who: str = "alice", qid: str = "1"):
    return PoolJudgement(id=jid, annotator=who, qid=qid, docno=docno, grade=grade)


def test_answers_undo_and_qrels_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "pool.sqlite"
    with PoolStore(db) as store:
        stored, created = store.record(_answer("j-0000001", "d7", 2))
        assert created and stored.seq == 1 and stored.live and stored.created > 0
        again, created = store.record(_answer("j-0000001", "d7", 2))  # a retried request
        assert not created and again == stored
        store.record(_answer("j-0000002", "d3", 0, who="bob"))
        store.record(_answer("j-0000003", "d5", 1, qid="2"))
        with pytest.raises(AlreadyJudged, match="judged already \\(by alice\\)"):
            store.record(_answer("j-0000004", "d7", 0, who="bob"))
        undo = PoolJudgement(
            id="u-0000001", annotator="alice", qid="1", docno="d7", grade=None,
            retracts="j-0000001",
        )  # fmt: skip
        store.record(undo)
        with pytest.raises(AlreadyJudged):  # taken back once only
            store.record(PoolJudgement("u-0000002", "alice", "1", "d7", None, "j-0000001"))
        with pytest.raises(AlreadyJudged):  # only one's own answers
            store.record(PoolJudgement("u-0000003", "alice", "1", "d3", None, "j-0000002"))
        store.record(_answer("j-0000005", "d7", 1, who="bob"))  # judged again after the undo
        events = store.judgements()
        assert [e.id for e in events] == [
            "j-0000001", "j-0000002", "j-0000003", "u-0000001", "j-0000005"
        ]  # fmt: skip
        assert events[0].retracted_by == "u-0000001" and not events[0].live
        assert store.counts() == {"alice": {"2": 1}, "bob": {"1": 2}}
        text = "".join(qrels_lines(events))
    assert text == "1 0 d3 0\n2 0 d5 1\n1 0 d7 1\n"
    path = tmp_path / "judged.qrels"
    path.write_text(text, encoding="utf-8")
    assert Qrels.read(path).as_dict() == {"1": {"d3": 0, "d7": 1}, "2": {"d5": 1}}
    with PoolStore(db) as store:  # durable: the events are there after reopening
        assert [e.id for e in store.judgements(live=True)] == [
            "j-0000002", "j-0000003", "j-0000005"
        ]  # fmt: skip
        assert [e.id for e in store.judgements(qid="1", annotator="bob")] == [
            "j-0000002", "j-0000005"
        ]  # fmt: skip


def test_one_server_per_database_and_raw_checks(tmp_path: Path) -> None:
    db = tmp_path / "pool.sqlite"
    with PoolStore(db) as store:
        with pytest.raises(InputDataError, match="in use by another probrank serve"):
            PoolStore(db)
        with pytest.raises(InputDataError, match="grade must be >= 0"):
            store.record(_answer("j-0000001", "d1", -1))
        assert store.count() == 0
    raw = sqlite3.connect(db)  # the database itself refuses an undo without its target
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute(
            "INSERT INTO pool_judgements (id, annotator, qid, docno, grade, retracts, created)"
            " VALUES ('x', 'alice', '1', 'd', NULL, NULL, 0)"
        )
    raw.close()


def test_qrels_lines_refuse_a_document_twice() -> None:
    rows = [_answer("j-0000001", "d1", 1), _answer("j-0000002", "d1", 0)]
    with pytest.raises(InputDataError, match="judged twice"):
        list(qrels_lines(rows))


def test_predictions_of_explored_documents(tmp_path: Path) -> None:
    db = tmp_path / "pool.sqlite"
    with PoolStore(db) as store:
        store.record_prediction("1", "d7", 0.25)
        store.record_prediction("1", "d7", 0.125)  # drawn again before its judgement: newest
        store.record_prediction("2", "d7", 0.5)
        with pytest.raises(InputDataError, match="in \\[0, 1\\]"):
            store.record_prediction("1", "d8", 1.5)
        store.record(_answer("j-0000001", "d7", 1))
        store.record(_answer("j-0000002", "d3", 0))
        store.record(PoolJudgement("u-0000001", "alice", "1", "d7", None, "j-0000001"))
    with PoolStore(db) as store:  # durable, and joined onto the answers
        assert store.predictions() == {("1", "d7"): 0.125, ("2", "d7"): 0.5}
        assert store.predictions(qid="2") == {("2", "d7"): 0.5}
        events = {e.id: e for e in store.judgements()}
        assert events["j-0000001"].explored == 0.125  # taken back, still explored
        assert events["j-0000002"].explored is None  # not drawn uniformly
        assert events["u-0000001"].explored is None  # an undo event predicts nothing
        assert events["j-0000001"].to_json()["explored"] == 0.125
    raw = sqlite3.connect(db)  # the database itself refuses a probability outside [0, 1]
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute("INSERT INTO pool_predictions VALUES ('1', 'd9', -0.5, 0)")
    raw.close()
