"""The pool judging service and pages on a small Vaswani pool (three BM25 runs of the project's
own first stage): the strategy's order against one computed here from the run files, shared
pools with reservations, conflicts, undo, budgets, restarts, and the pages over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from probrank.data.trec import Qrels
from probrank.serve.errors import BadRequest, Conflict, NotFound
from probrank.serve.pool_judging import PoolService, PoolSubmission
from probrank.serve.pool_source import PoolTopic, load_pool_topics
from probrank.serve.pool_store import PoolStore
from tests.serve.pool_helpers import DEPTH, TOPICS, PoolFiles, vaswani_pool  # noqa: F401

JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def topics(vaswani_pool: PoolFiles) -> list[PoolTopic]:  # noqa: F811
    return load_pool_topics(vaswani_pool.runs, vaswani_pool.topics, vaswani_pool.docs, depth=DEPTH)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PoolStore]:
    with PoolStore(tmp_path / "pool.sqlite") as made:
        yield made


def _depth_k_order(runs: Path, qid: str) -> list[str]:
    """Depth-k order of a topic read from the run files here: rank 1 of every run (runs in
    file-name order), then rank 2, ...; a run's ranking sorted by score, ties by docno
    descending (trec_eval's order)."""
    rankings = []
    for path in sorted(runs.iterdir()):
        rows = [line.split() for line in path.read_text().splitlines()]
        mine = [(r[2], float(r[4])) for r in rows if r[0] == qid]
        mine.sort(key=lambda pair: pair[0], reverse=True)
        mine.sort(key=lambda pair: pair[1], reverse=True)
        rankings.append([doc for doc, _ in mine[:DEPTH]])
    order: list[str] = []
    for rank in range(DEPTH):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in order:
                order.append(ranking[rank])
    return order


def _judge(service: PoolService, who: str, qid: str, grade: int, n: int) -> str:
    state = service.state(who, qid)
    assert state.docno is not None
    service.submit(PoolSubmission(f"{who}-{qid}-{n:04d}", who, qid, state.docno, grade))
    return state.docno


def test_pools_and_texts_come_from_the_files(
    topics: list[PoolTopic],
    vaswani_pool: PoolFiles,  # noqa: F811
) -> None:
    assert [t.qid for t in topics] == list(TOPICS)
    for topic in topics:
        order = _depth_k_order(vaswani_pool.runs, topic.qid)
        assert sorted(topic.docnos) == sorted(order)
        assert DEPTH <= len(topic) <= 3 * DEPTH
        assert all(topic.texts[d].strip() for d in topic.docnos)


def test_depth_k_serves_the_depth_k_order_and_each_document_once(
    topics: list[PoolTopic],
    store: PoolStore,
    vaswani_pool: PoolFiles,  # noqa: F811
) -> None:
    service = PoolService(topics, store, strategy="depth-k", seed=0)
    expected = _depth_k_order(vaswani_pool.runs, "1")
    seen = []
    for n in range(len(expected)):
        seen.append(_judge(service, "alice", "1", n % 3, n))
    assert seen == expected
    state = service.state("alice", "1")
    assert state.done and state.docno is None and "every document" in state.reason
    assert state.judged == len(expected) and state.pool == len(expected)
    lines = [f"1 0 {doc} {n % 3}\n" for n, doc in enumerate(expected)]
    from probrank.serve.pool_store import qrels_lines

    assert "".join(qrels_lines(store.judgements())) == "".join(lines)


@pytest.mark.parametrize("strategy", ["bayesian", "mtf", "mm-ns", "active-sampling"])
def test_every_strategy_judges_the_whole_pool_once_with_reservations(
    topics: list[PoolTopic],
    store: PoolStore,
    vaswani_pool: PoolFiles,  # noqa: F811
    strategy: str,
) -> None:
    qrels = Qrels.read(vaswani_pool.qrels).as_dict().get("2", {})
    service = PoolService(topics, store, strategy=strategy, seed=3)
    size = len(service.topic("2"))
    judged: list[str] = []
    while True:
        a, b = service.state("alice", "2"), service.state("bob", "2")
        if a.docno is None:
            break
        assert a.docno != b.docno or b.docno is None  # reserved: never shown to both
        assert service.state("alice", "2").docno == a.docno  # a reload shows it again
        for who, state in (("alice", a), ("bob", b)):
            if state.docno is not None:
                grade = qrels.get(state.docno, 0)
                n = len(judged)
                service.submit(PoolSubmission(f"{who}-{n:05d}", who, "2", state.docno, grade))
                judged.append(state.docno)
    assert sorted(judged) == sorted(service.topic("2").docnos) and len(judged) == size
    if strategy == "bayesian":  # its warm-up: the first five in depth-k order
        assert judged[:5] == _depth_k_order(vaswani_pool.runs, "2")[:5]
        # one document at a time: it explores by the topic's count (a batch's 20% of one
        # document would round to none; tests/pooling/strategies/test_bayesian.py)
        assert service.strategy.explore_by_count
    relevant = sum(qrels.get(doc, 0) >= 1 for doc in judged)
    row = service.progress()[1]
    explored = {key: row.pop(key) for key in ("explored", "explored_relevant", "explored_expected")}
    assert row == {
        "qid": "2", "pool": size, "judged": size, "relevant": relevant, "done": True,
        "annotators": {"alice": (size + 1) // 2, "bob": size // 2},
    }  # fmt: skip
    stored = store.predictions()
    if strategy == "bayesian":  # every fifth judgement after the warm-up drawn uniformly
        assert len(stored) >= (size - 5) // 5 - 1 and {q for q, _ in stored} == {"2"}
        assert explored == {
            "explored": len(stored),
            "explored_relevant": sum(qrels.get(doc, 0) >= 1 for _, doc in stored),
            "explored_expected": pytest.approx(sum(stored.values()), rel=1e-12),
        }
    else:  # nothing explored, no check
        assert not stored and explored == {
            "explored": 0, "explored_relevant": 0, "explored_expected": 0.0
        }  # fmt: skip
        assert service.explored_check() is None


def test_explored_documents_are_predicted_before_their_judgement(
    topics: list[PoolTopic],
    store: PoolStore,
    vaswani_pool: PoolFiles,  # noqa: F811
) -> None:
    # one annotator, one document at a time: after the depth-k warm-up of five, every fifth
    # judgement of the topic is drawn uniformly, and its prediction is stored when it is shown,
    # equal to the prediction of a strategy started afresh on the judgements before it
    from probrank.pooling.pool import Judgements
    from probrank.serve.pool_judging import LEVEL

    qrels = Qrels.read(vaswani_pool.qrels).as_dict().get("1", {})
    service = PoolService(topics, store, strategy="bayesian", seed=4)
    pool = service.topic("1").pool
    judged = Judgements(pool)
    explored = []
    for n in range(20):
        docno = service.state("alice", "1").docno
        assert docno is not None
        stored = store.predictions(qid="1")
        if ("1", docno) in stored:
            selector = service.strategy.start(pool, judged, level=LEVEL, seed=4)
            proposed = selector.propose(1)
            item = pool.item("1", docno)
            assert proposed.tolist() == [item]
            assert stored[("1", docno)] == selector.explored_predictions()[item].mean()
            explored.append(n)
        grade = qrels.get(docno, 0)
        service.submit(PoolSubmission(f"alice-{n:05d}", "alice", "1", docno, grade))
        judged.add([pool.item("1", docno)], [grade])
    assert explored == [9, 14, 19]
    stored = store.predictions()
    check = service.explored_check()
    assert check is not None and check.documents == 3
    assert check.found == sum(qrels.get(doc, 0) >= LEVEL for _, doc in stored)
    assert check.expected == pytest.approx(sum(stored.values()), rel=1e-12)
    assert check.lower <= check.expected <= check.upper and 0 < check.p_value <= 1
    exported = [e.explored for e in store.judgements()]  # the JSONL export carries them
    assert [n for n, value in enumerate(exported) if value is not None] == explored
    assert service.state("alice", "2").docno is not None  # another topic: nothing explored yet
    assert service.progress()[1]["explored"] == 0
    from starlette.testclient import TestClient

    from probrank.serve.pool_app import create_pool_app

    admin = store.base.issue_admin_token()
    page = TestClient(create_pool_app(service, depth=DEPTH)).get(f"/admin?token={admin}").text
    relevant = "is" if check.found == 1 else "are"
    assert "Of the 3 judged documents the strategy drew uniformly" in page
    assert (
        f"{check.found} {relevant} relevant; its relevance model expected {check.expected:.1f}"
        in page
    )
    assert f"<td>{check.found} / {check.expected:.1f} of 3</td>" in page


def test_conflicts_undo_budget_and_restart(topics: list[PoolTopic], tmp_path: Path) -> None:
    db = tmp_path / "pool.sqlite"
    with PoolStore(db) as store:
        service = PoolService(topics, store, strategy="bayesian", seed=1, rounds=7)
        first = [_judge(service, "alice", "3", 1, n) for n in range(6)]
        bob = service.state("bob", "3").docno
        assert bob is not None and bob not in first
        with pytest.raises(Conflict, match="judged already"):
            service.submit(PoolSubmission("bob-000001", "bob", "3", first[0], 0))
        with pytest.raises(BadRequest, match="not in the pool"):
            service.submit(PoolSubmission("bob-000002", "bob", "3", "99999", 0))
        with pytest.raises(NotFound):
            service.state("bob", "no-such-topic")
        last = service.state("alice", "3").last
        with pytest.raises(Conflict, match="out of date"):
            service.undo("alice", "3", jid="undo-000001", target="alice-3-0000")
        receipt = service.undo("alice", "3", jid="undo-000002", target=str(last))
        assert receipt.judgement.retracts == last and receipt.state.docno == first[-1]
        assert receipt.state.judged == 5 and receipt.state.mine == 5
        with pytest.raises(Conflict, match="no answer"):
            service.undo("carol", "3", jid="undo-000003", target=str(last))
        carol = service.state("carol", "3").docno
        assert carol not in {bob, first[-1]}  # both are reserved
        fresh = PoolService(topics, store, strategy="bayesian", seed=1, rounds=7)
        expected_next = fresh.state("carol", "3").docno  # no reservation in a new process
    with PoolStore(db) as store:  # restart: rebuilt from the database, same choices
        again = PoolService(topics, store, strategy="bayesian", seed=1, rounds=7)
        state = again.state("carol", "3")
        assert state.judged == 5 and state.docno == expected_next
        _judge(again, "carol", "3", 0, 1)
        _judge(again, "bob", "3", 0, 2)
        done = again.state("alice", "3")
        assert done.done and "budget of 7" in done.reason and done.docno is None
        with pytest.raises(Conflict, match="is done"):
            again.submit(PoolSubmission("late-000001", "alice", "3", first[-1], 0))


def test_a_database_of_other_topics_is_refused(topics: list[PoolTopic], tmp_path: Path) -> None:
    from probrank.exceptions import InputDataError

    db = tmp_path / "pool.sqlite"
    with PoolStore(db) as store:
        PoolService(topics, store)
    with PoolStore(db) as store, pytest.raises(InputDataError, match="made with topics"):
        PoolService(topics[:2], store)


def test_the_pages_over_http(topics: list[PoolTopic], store: PoolStore) -> None:
    from starlette.testclient import TestClient

    from probrank.serve.pool_app import create_pool_app

    service = PoolService(topics, store, strategy="mtf", seed=0, source="vaswani-bm25")
    alice = store.base.add_annotator("alice")
    admin = store.base.issue_admin_token()
    client = TestClient(create_pool_app(service, depth=DEPTH))
    page = client.get(f"/?token={alice}")
    assert page.status_code == 200 and 'id="start-judging"' in page.text
    state = client.get(f"/judge/1?token={alice}", headers=JSON).json()["state"]
    html = client.get(f"/judge/1?token={alice}").text
    assert f'data-docno="{state["docno"]}"' in html and 'id="grade-2"' in html
    form = {"jid": "a" * 16, "docno": state["docno"], "grade": "2"}
    posted = client.post(f"/judge/1?token={alice}", data=form, follow_redirects=False)
    assert posted.status_code == 303 and posted.headers["location"].startswith("/judge/1?")
    retried = client.post(f"/judge/1?token={alice}", data=form, headers=JSON).json()
    assert retried["duplicate"] is True and retried["judgement"]["grade"] == 2
    bad = client.post(f"/judge/1?token={alice}", data={**form, "grade": "7"}, headers=JSON)
    assert bad.status_code == 400 and "grade must be one of 0, 1, 2" in bad.json()["error"]
    assert client.get(f"/admin?token={alice}").status_code == 403
    assert client.post(f"/judge/1?token={admin}", data=form).status_code == 403
    assert client.get("/judge/1").status_code == 403
    admin_page = client.get(f"/admin?token={admin}").text
    assert 'id="export-qrels"' in admin_page and "alice" in admin_page
    assert "No explored document is judged yet (the mtf strategy does not explore)" in admin_page
    qrels = client.get(f"/export.qrels?token={admin}")
    assert qrels.text == f"1 0 {state['docno']} 2\n"
    assert "attachment" in qrels.headers["content-disposition"]
    assert client.get(f"/export.qrels?token={admin}&question=2").text == ""
    assert client.get("/static/pool_judge.js").status_code == 200
    assert client.get("/static/judge.js").status_code == 404
