"""Group commit: judgements recorded at once by many threads are committed together, each
caller acknowledged only after the commit that holds it, a refused one leaving the rest."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from probrank.serve.store import Choice, Judgement, JudgementStore, StaleRoundError


def _judgement(jid: str, annotator: str, round_: int, choice: Choice = Choice.LEFT) -> Judgement:
    return Judgement(
        id=jid, annotator=annotator, qid="q1", round=round_, left=0, right=1,
        left_id="a", right_id="b", choice=choice,
    )  # fmt: skip


def _record_all(store: JudgementStore, judgements: list[Judgement]) -> list[object]:
    """Record every judgement on its own thread, all released at once; each one's result or
    exception."""
    results: list[object] = [None] * len(judgements)
    start = threading.Barrier(len(judgements))

    def work(i: int) -> None:
        start.wait()
        try:
            results[i] = store.record(judgements[i])
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(judgements))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_judgements_are_each_stored_once_and_returned(tmp_path: Path) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        judgements = [_judgement(f"j{a}-{r}", f"ann{a}", r) for a in range(12) for r in range(3)]
        results = _record_all(store, judgements)
        assert all(isinstance(r, tuple) and r[1] for r in results)
        stored = {r[0].id: r[0] for r in results}  # type: ignore[index]
        assert set(stored) == {j.id for j in judgements}
        assert sorted(s.seq for s in stored.values()) == list(range(1, len(judgements) + 1))
        assert store.count() == len(judgements)
        on_disk = {j.id: j for j in store.judgements()}
        assert on_disk == stored  # what each caller was told is what was committed


def test_a_refused_judgement_in_a_batch_leaves_the_others(tmp_path: Path) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        judgements = [_judgement(f"a{i}", "ann", 0, Choice.LEFT) for i in range(6)]
        judgements += [_judgement(f"b{i}", f"other{i}", 0) for i in range(6)]
        judgements += [_judgement("b0", "other0", 0)] * 3  # the same id again: stored once
        results = _record_all(store, judgements)
        first_round = [r for r in results[:6] if isinstance(r, tuple)]
        refused = [r for r in results[:6] if isinstance(r, StaleRoundError)]
        assert len(first_round) == 1 and len(refused) == 5  # one answer to round 0
        assert all(isinstance(r, tuple) for r in results[6:])
        created = [r[1] for r in results[6:] if isinstance(r, tuple)]
        assert created.count(True) == 6  # b0..b5 once each; the repeats return the stored row
        assert store.count() == 7


def test_a_failed_commit_acknowledges_nothing(tmp_path: Path, monkeypatch) -> None:
    with JudgementStore(tmp_path / "j.sqlite") as store:
        real = store._stage

        def failing(entry):  # type: ignore[no-untyped-def]
            if entry.judgement.id == "boom":
                raise sqlite3.OperationalError("disk I/O error")
            return real(entry)

        monkeypatch.setattr(store, "_stage", failing)
        with pytest.raises(sqlite3.OperationalError):
            store.record(_judgement("boom", "ann", 0))
        assert store.count() == 0
        monkeypatch.setattr(store, "_stage", real)
        stored, created = store.record(_judgement("fine", "ann", 0))
        assert created and stored.seq >= 1 and store.count() == 1


def test_an_annotator_first_seen_in_a_failed_commit_is_written_again(
    tmp_path: Path, monkeypatch
) -> None:
    """The annotator's row, inserted in a batch that was rolled back, is inserted again by
    the next commit (the store remembers only committed annotators)."""
    with JudgementStore(tmp_path / "j.sqlite") as store:
        real = store._stage

        def failing_after(entry):  # type: ignore[no-untyped-def]
            real(entry)  # the annotator's row and the judgement inserted ...
            raise sqlite3.OperationalError("disk I/O error")  # ... and the commit fails

        monkeypatch.setattr(store, "_stage", failing_after)
        with pytest.raises(sqlite3.OperationalError):
            store.record(_judgement("boom", "newcomer", 0))
        monkeypatch.setattr(store, "_stage", real)
        assert store.count() == 0 and store.annotators() == []
        stored, created = store.record(_judgement("fine", "newcomer", 0))
        assert created and store.annotators() == ["newcomer"]
        assert store.judgements() == [stored]  # what the caller was told is what is stored
        again, created = store.record(_judgement("fine", "newcomer", 0))
        assert not created and again == stored


def test_a_refused_judgement_of_a_new_annotator_leaves_no_annotator(tmp_path: Path) -> None:
    """A judgement refused in a batch takes back the annotator's row it brought (nothing of
    it is stored); the same annotator's next judgement stores both."""
    with JudgementStore(tmp_path / "j.sqlite") as store:
        store.record(_judgement("used-id", "ann", 0))
        stored, created = store.record(_judgement("used-id", "eve", 0))  # ann's id
        assert not created and stored.annotator == "ann"
        retract = Judgement(
            id="undo-1", annotator="eve", qid="q1", round=1, left=0, right=1, left_id="a",
            right_id="b", choice=Choice.UNDO, retracts="no-such-judgement",
        )  # fmt: skip
        with pytest.raises(StaleRoundError):
            store.record(retract)  # the judgement it names does not exist
        assert store.annotators() == ["ann"] and store.count() == 1
        store.record(_judgement("eve-0", "eve", 0))
        assert store.annotators() == ["ann", "eve"] and store.count() == 2


class _Batches:
    """``store._commit`` spied on: the first commit is held (before it writes) until
    :meth:`release`; every batch's ids are recorded, with the time its commit returned."""

    def __init__(self, store: JudgementStore) -> None:
        self.real = store._commit
        self.ids: list[list[str]] = []
        self.ended: list[float] = []
        self.started = threading.Event()
        self.go = threading.Event()
        store._commit = self  # type: ignore[method-assign]

    def __call__(self, batch) -> None:  # type: ignore[no-untyped-def]
        self.ids.append([entry.judgement.id for entry in batch])
        if len(self.ids) == 1:
            self.started.set()
            assert self.go.wait(30)
        try:
            self.real(batch)
        finally:
            self.ended.append(time.perf_counter())

    def release(self) -> None:
        self.go.set()


def _recording(store: JudgementStore, judgement: Judgement, out: dict[str, object]) -> None:
    try:
        out[judgement.id] = (store.record(judgement), time.perf_counter())
    except Exception as exc:
        out[judgement.id] = (exc, time.perf_counter())


def _behind_a_commit(store: JudgementStore, later: list[Judgement]) -> tuple[_Batches, dict]:
    """A first judgement committing (held), then ``later`` recorded by threads of their own while it
    is held: each of them waits, queued; then the first commit is let go."""
    batches = _Batches(store)
    out: dict[str, object] = {}
    first = threading.Thread(target=_recording, args=(store, _judgement("first", "a0", 0), out))
    first.start()
    assert batches.started.wait(30)
    threads = [threading.Thread(target=_recording, args=(store, j, out)) for j in later]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(store._queue) < len(later) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(store._queue) == len(later)  # all queued behind the commit in flight
    time.sleep(0.05)
    assert out == {}  # nobody acknowledged while the first commit is in flight
    batches.release()
    for thread in [first, *threads]:
        thread.join(30)
    return batches, out


def test_judgements_arriving_during_a_commit_are_committed_together(tmp_path: Path) -> None:
    """Group commit: the judgements that arrive while a commit is in flight are written by
    the next one, in one transaction (one fsync), and each is acknowledged only after it."""
    with JudgementStore(tmp_path / "j.sqlite") as store:
        later = [_judgement(f"later-{k}", f"a{k + 1}", 0) for k in range(5)]
        batches, out = _behind_a_commit(store, later)
        assert batches.ids == [["first"], [j.id for j in later]]  # arrival order, one batch
        for judgement in later:
            (stored, created), returned = out[judgement.id]  # type: ignore[misc]
            assert created and stored.id == judgement.id
            assert returned >= batches.ended[1]  # acknowledged after its commit returned
        assert out["first"][1] >= batches.ended[0]  # type: ignore[index]
        assert store.count() == 6
        assert [j.id for j in store.judgements()] == ["first", *[j.id for j in later]]


def test_a_failed_group_commit_acknowledges_and_stores_none_of_its_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One failure in a group's commit: the whole transaction is rolled back, every
    judgement of the group gets the error (none acknowledged, none stored); the commit before
    stands, and the next one works."""
    with JudgementStore(tmp_path / "j.sqlite") as store:
        real = store._stage

        def failing(entry):  # type: ignore[no-untyped-def]
            stored = real(entry)
            if entry.judgement.id == "later-3":
                raise sqlite3.OperationalError("disk I/O error")
            return stored

        monkeypatch.setattr(store, "_stage", failing)
        later = [_judgement(f"later-{k}", f"a{k + 1}", 0) for k in range(5)]
        batches, out = _behind_a_commit(store, later)
        assert batches.ids[1] == [j.id for j in later]
        for judgement in later:
            error, _ = out[judgement.id]  # type: ignore[misc]
            assert isinstance(error, sqlite3.OperationalError)
        assert [j.id for j in store.judgements()] == ["first"]
        assert store.annotators() == ["a0"]  # the group's new annotators rolled back too
        monkeypatch.setattr(store, "_stage", real)
        stored, created = store.record(later[0])
        assert created and store.judgements() == [store.get("first"), stored]
