"""The routes, through Starlette's TestClient: pages, the judgement round, the token, every
kind of bad request (a 4xx with a message, never a 500), escaping, exports."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from probrank.serve.app import MAX_BODY, create_app
from probrank.serve.judging import JudgingService
from tests.serve.conftest import HOSTILE

JSON = {"Accept": "application/json"}


@pytest.fixture
def client(service: JudgingService) -> Iterator[TestClient]:
    with TestClient(create_app(service), raise_server_exceptions=False) as made:
        yield made


def _token(service: JudgingService) -> str:
    return service.store.token


def _form(service: JudgingService, annotator: str, qid: str, choice: str = "left") -> dict:
    state = service.state(annotator, qid)
    return {
        "annotator": annotator,
        "round": str(state.round),
        "left": str(state.pair[0]),
        "right": str(state.pair[1]),
        "jid": uuid.uuid4().hex,
        "choice": choice,
    }


def test_pages_need_the_token(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    for path in ["/", "/judge/q1?annotator=ann", "/ranking/q1", "/admin", "/export.jsonl"]:
        missing = client.get(path)
        assert missing.status_code == 403 and "token" in missing.text
        sep = "&" if "?" in path else "?"
        last = "x" if token[-1] != "x" else "y"  # a token that differs in its last character
        wrong = client.get(f"{path}{sep}token={token[:-1]}{last}")
        assert wrong.status_code == 403
        assert client.get(f"{path}{sep}token={token}").status_code == 200
    header = client.get("/admin", headers={"X-Probrank-Token": token})
    assert header.status_code == 200
    posted = client.post("/judge/q1", data=_form(service, "ann", "q1"))
    assert posted.status_code == 403 and service.store.count() == 0
    assert client.get("/health").text == "ok"  # no data: open
    assert client.get("/static/judge.js").status_code == 200


def test_judging_through_the_form(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    start = client.post(f"/start?token={token}", data={"annotator": "ann"}, follow_redirects=False)
    assert start.status_code == 303
    assert start.headers["location"] == f"/judge/q1?token={token}&annotator=ann"
    page = client.get(start.headers["location"])
    assert page.status_code == 200 and "0 answers" in page.text
    form = _form(service, "ann", "q1", "right")
    for field in ("round", "left", "right"):
        assert re.search(rf'name="{field}" value="{form[field]}"', page.text)
    posted = client.post(f"/judge/q1?token={token}", data=form, follow_redirects=False)
    assert posted.status_code == 303 and posted.headers["location"].endswith("annotator=ann")
    after = client.get(posted.headers["location"])
    assert "1 answer<" in after.text and "(1 preference," in after.text
    stored = service.store.judgements()
    assert len(stored) == 1 and stored[0].choice.value == "right"
    assert service.store.annotators() == ["ann"]


def test_json_round_and_idempotent_retries(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    state = client.get(f"/judge/q2?token={token}&annotator=bob", headers=JSON).json()["state"]
    assert state["round"] == 0 and state["num_pairs"] == 6
    form = _form(service, "bob", "q2", "tie")
    first = client.post(f"/judge/q2?token={token}", data=form, headers=JSON).json()
    assert first["ok"] and not first["duplicate"] and first["state"]["ties"] == 1
    second = client.post(f"/judge/q2?token={token}", data=form, headers=JSON).json()
    assert second["duplicate"] and second["judgement"] == first["judgement"]
    assert service.store.count() == 1
    reused = client.post(f"/judge/q2?token={token}", data={**form, "choice": "left"}, headers=JSON)
    assert reused.status_code == 409 and "another answer" in reused.json()["error"]


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"round": "5"}, 409, "out of date"),
        ({"left": "3", "right": "4"}, 400, "not offered"),
        ({"left": "0", "right": "0"}, 400, "not a pair"),
        ({"left": "9"}, 400, "not a pair"),
        ({"left": "-1"}, 400, "non-negative integer"),
        ({"round": "１"}, 400, "non-negative integer"),
        ({"choice": "maybe"}, 400, "choice must be one of"),
        ({"jid": "x"}, 400, "judgement id"),
        ({"annotator": "<b>x</b>"}, 400, "annotator name"),
        ({"jid": None}, 400, "lacks jid"),
    ],
)
def test_bad_judgements_get_a_message_and_a_4xx(
    client: TestClient, service: JudgingService, change: dict, status: int, message: str
) -> None:
    token = _token(service)
    form = _form(service, "ann", "q1")
    if {"left", "right"} <= set(change) and change["left"] != change["right"]:
        offered = {form["left"], form["right"]}
        pairs = [(str(i), str(j)) for i in range(5) for j in range(5) if i != j]
        other = next(p for p in pairs if set(p) != offered)
        change = dict(zip(("left", "right"), other, strict=True))
    form.update(change)
    form = {k: v for k, v in form.items() if v is not None}
    page = client.post(f"/judge/q1?token={token}&annotator=ann", data=form)
    assert page.status_code == status
    assert message in page.text and "Traceback" not in page.text
    assert "Back to the page" in page.text
    as_json = client.post(f"/judge/q1?token={token}", data=form, headers=JSON)
    assert as_json.status_code == status and message in as_json.json()["error"]
    assert service.store.count() == 0


def test_bad_requests_never_500(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    form = _form(service, "ann", "q1")
    url = f"/judge/q1?token={token}"
    cases = [
        (client.get(f"/judge/nope?token={token}&annotator=ann"), 404, "no question &#39;nope&#39;"),
        (client.get(f"/ranking/nope?token={token}"), 404, "no question"),
        (client.post(f"/judge/nope?token={token}", data=form), 404, "no question"),
        (client.get(f"/judge/q1?token={token}"), 400, "say who is judging"),
        (client.get(f"/no-such-page?token={token}"), 404, "no such page"),
        (client.put(url, data=form), 405, "does not take that method"),
        (client.post(url, content=json.dumps(form), headers={"Content-Type": "application/json"}),
         415, "HTML form"),
        (client.post(url, content=b"a=1"), 415, "HTML form"),
        (client.post(url, content=b"x=" + b"a" * MAX_BODY, headers={
            "Content-Type": "application/x-www-form-urlencoded"}), 413, "over"),
        (client.post(url, content=b"jid=\xff\xfe", headers={
            "Content-Type": "application/x-www-form-urlencoded"}), 400, "UTF-8"),
        (client.post(url, content="&".join(f"{k}={v}" for k, v in form.items()) + "&round=0",
                     headers={"Content-Type": "application/x-www-form-urlencoded"}), 400, "twice"),
        (client.get(f"/judge/q1?token={token}&annotator=a%20b"), 400, "annotator name"),
        (client.get("/static/../app.py"), 404, ""),
    ]  # fmt: skip
    for response, status, message in cases:
        assert response.status_code == status, response.text
        assert message in response.text and "Traceback" not in response.text
    assert service.store.count() == 0


def test_answer_texts_are_escaped(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    # offer the hostile candidate (c1): judge until a pair shows it
    seen = ""
    for _ in range(10):
        state = service.state("ann", "q1")
        page = client.get(f"/judge/q1?token={token}&annotator=ann").text
        if 1 in state.pair:
            seen = page
            break
        client.post(f"/judge/q1?token={token}", data=_form(service, "ann", "q1"))
    assert seen, "the hostile candidate was never offered"
    ranking = client.get(f"/ranking/q1?token={token}").text
    for text in (seen, ranking):
        assert '<script>alert("x")</script>' not in text
        assert (
            "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp;" in text
        )
    assert HOSTILE.startswith("<script>")


def test_ranking_page_and_plot(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    before = client.get(f"/ranking/q2?token={token}&annotator=ann").text
    assert "<svg" in before and before.count('class="row"') == 4
    for _ in range(3):
        client.post(f"/judge/q2?token={token}", data=_form(service, "ann", "q2"))
    after = client.get(f"/ranking/q2?token={token}&annotator=ann").text
    assert "after 3 preferences by <strong>ann</strong>" in after
    assert after != before
    ranking = service.ranking("q2", "ann")
    rows = re.findall(r'<tr data-candidate="(\d+)">', after)
    assert [int(r) for r in rows] == ranking.order
    everyone = client.get(f"/ranking/q2?token={token}").text
    assert "after 3 preferences by all annotators" in everyone


def test_admin_lists_annotators_and_agreement(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    empty = client.get(f"/admin?token={token}").text
    assert "No annotator yet" in empty and "No pair has been judged by two" in empty
    for name in ("ann", "bob"):  # same seed: both are offered the same first pairs
        for _ in range(2):
            client.post(f"/judge/q1?token={token}", data=_form(service, name, "q1"))
    page = client.get(f"/admin?token={token}").text
    assert re.search(r"<td>ann</td><td>2</td><td>1</td>", page)
    assert re.search(r"<td>bob</td><td>2</td><td>1</td>", page)
    assert "2 pairs were judged by two annotators or more" in page
    assert "Identical answers: 100.0%" in page
    assert "ann and bob" in page and "WAL journal" in page


def test_exports(client: TestClient, service: JudgingService) -> None:
    token = _token(service)
    client.post(f"/judge/q1?token={token}", data=_form(service, "ann", "q1", "right"))
    client.post(f"/judge/q1?token={token}", data=_form(service, "ann", "q1", "tie"))
    client.post(f"/judge/q2?token={token}", data=_form(service, "bob", "q2", "left"))
    stored = service.store.judgements()
    lines = client.get(f"/export.jsonl?token={token}").text.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == [j.id for j in stored]
    assert [r["choice"] for r in records] == ["right", "tie", "left"]
    assert records[0]["winner"] == records[0]["right"] and records[0]["loser"] == records[0]["left"]
    assert records[1]["winner"] is None
    prefs = client.get(f"/export.prefs?token={token}").text.splitlines()
    assert len(prefs) == 6
    groups: dict[str, dict[str, float]] = {}
    for line in prefs:
        qid, annotator, group, docno, level = line.split()
        assert (qid, annotator) in {("q1", "ann"), ("q2", "bob")}
        groups.setdefault(group, {})[docno] = float(level)
    for judgement in stored:
        levels = groups[judgement.id]
        if judgement.winner is None:
            assert set(levels.values()) == {0.0}
        else:
            ids = {judgement.left: judgement.left_id, judgement.right: judgement.right_id}
            assert levels[ids[judgement.winner]] > levels[ids[judgement.loser]]
