"""The routes, through Starlette's TestClient: pages, the judgement round, the token, every
kind of bad request (a 4xx with a message, never a 500), escaping, exports."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from probrank.exceptions import InputDataError
from probrank.serve.app import MAX_BODY, create_app
from probrank.serve.judging import JudgingService
from probrank.serve.startup import Preparation
from tests.serve.conftest import HOSTILE

JSON = {"Accept": "application/json"}


@pytest.fixture
def client(service: JudgingService) -> Iterator[TestClient]:
    with TestClient(create_app(service), raise_server_exceptions=False) as made:
        yield made


@pytest.fixture
def tokens(service: JudgingService) -> dict[str, str]:
    """The admin's token and the annotators ann's and bob's."""
    made = {"admin": service.store.issue_admin_token()}
    for name in ("ann", "bob"):
        made[name] = service.store.add_annotator(name)
    return made


def _form(service: JudgingService, annotator: str, qid: str, choice: str = "left") -> dict:
    state = service.state(annotator, qid)
    return {
        "round": str(state.round),
        "left": str(state.pair[0]),
        "right": str(state.pair[1]),
        "jid": uuid.uuid4().hex,
        "choice": choice,
    }


def test_pages_need_a_valid_token(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    admin, ann = tokens["admin"], tokens["ann"]
    for path, token in [("/", ann), ("/judge/q1", ann), ("/ranking/q1", admin), ("/admin", admin),
                        ("/export.jsonl", admin), ("/export.csv", admin)]:  # fmt: skip
        missing = client.get(path)
        assert missing.status_code == 403 and "token" in missing.text
        last = "x" if token[-1] != "x" else "y"  # a token that differs in its last character
        wrong = client.get(f"{path}?token={token[:-1]}{last}")
        assert wrong.status_code == 403
        assert client.get(f"{path}?token={token}").status_code == 200, path
    header = client.get("/admin", headers={"X-Probrank-Token": admin})
    assert header.status_code == 200
    posted = client.post("/judge/q1", data=_form(service, "ann", "q1"))
    assert posted.status_code == 403 and service.store.count() == 0
    assert client.get("/health").text == "ok"  # no data: open
    assert client.get("/static/judge.js").status_code == 200


def test_an_annotators_link_opens_only_their_own_pages(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    ann, admin = tokens["ann"], tokens["admin"]
    for path in ["/admin", "/export.jsonl", "/export.csv", "/export.prefs",
                 "/judge/q1?annotator=bob", "/ranking/q1?annotator=bob"]:  # fmt: skip
        sep = "&" if "?" in path else "?"
        refused = client.get(f"{path}{sep}token={ann}")
        assert refused.status_code == 403, path
    # the name in the query or form is ignored when it is theirs and refused when not
    form = _form(service, "ann", "q1")
    forged = client.post(f"/judge/q1?token={ann}&annotator=bob", data=form, headers=JSON)
    assert forged.status_code == 403 and "judges as 'ann' only" in forged.json()["error"]
    forged = client.post(f"/judge/q1?token={ann}", data={**form, "annotator": "bob"}, headers=JSON)
    assert forged.status_code == 403 and service.store.count() == 0
    own = client.post(f"/judge/q1?token={ann}", data={**form, "annotator": "ann"}, headers=JSON)
    assert own.status_code == 200 and own.json()["judgement"]["annotator"] == "ann"
    # the admin link judges nothing
    admin_judging = client.get(f"/judge/q1?token={admin}")
    assert admin_judging.status_code == 403 and "does not judge" in admin_judging.text
    service.store.revoke_annotator("ann")
    gone = client.get(f"/judge/q1?token={ann}")
    assert gone.status_code == 403 and "not valid" in gone.text  # revoked: refused at once
    assert service.store.count() == 1


def test_judging_through_the_form(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    token = tokens["ann"]
    start = client.get(f"/?token={token}")
    assert "Start judging" in start.text and "0 answers on" in start.text
    assert f'href="/judge/q1?token={token}"' in start.text
    page = client.get(f"/judge/q1?token={token}")
    assert page.status_code == 200 and "0 answers" in page.text
    form = _form(service, "ann", "q1", "right")
    for field in ("round", "left", "right"):
        assert re.search(rf'name="{field}" value="{form[field]}"', page.text)
    posted = client.post(f"/judge/q1?token={token}", data=form, follow_redirects=False)
    assert posted.status_code == 303 and posted.headers["location"] == f"/judge/q1?token={token}"
    after = client.get(posted.headers["location"])
    assert "1 answer<" in after.text and "(1 preference," in after.text
    assert "In all: 1 answer on 1 of 2 questions" in after.text
    stored = service.store.judgements()
    assert len(stored) == 1 and stored[0].choice.value == "right"
    assert stored[0].annotator == "ann"


def test_undo_through_the_form(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    token = tokens["ann"]
    assert 'id="undo"' not in client.get(f"/judge/q1?token={token}").text
    first = _form(service, "ann", "q1")
    client.post(f"/judge/q1?token={token}", data=first)
    before = service.state("ann", "q1")
    client.post(f"/judge/q1?token={token}", data=_form(service, "ann", "q1", "right"))
    page = client.get(f"/judge/q1?token={token}").text
    assert 'id="undo"' in page and f'action="/undo/q1?token={token}"' in page
    undo = {"round": "2", "jid": uuid.uuid4().hex}
    taken = client.post(f"/undo/q1?token={token}", data=undo, follow_redirects=False)
    assert taken.status_code == 303
    state = service.state("ann", "q1")
    assert (state.answers, state.pair) == (1, before.pair)
    stale = client.post(f"/undo/q1?token={token}", data={**undo, "jid": uuid.uuid4().hex})
    assert stale.status_code == 409 and "out of date" in stale.text
    records = [
        json.loads(x)
        for x in client.get(f"/export.jsonl?token={tokens['admin']}").text.splitlines()
    ]
    assert [(r["choice"], r["retracted"]) for r in records] == [
        ("left", False),
        (records[1]["choice"], True),
        ("undo", False),
    ]
    assert records[2]["retracts"] == records[1]["id"]
    prefs = client.get(f"/export.prefs?token={tokens['admin']}").text.splitlines()
    assert len(prefs) == 2 and all(first["jid"] in line for line in prefs)  # only what stands


def test_question_ids_are_percent_encoded(serve_model, tmp_path) -> None:
    from tests.serve.conftest import make_service, write_questions

    path = write_questions(tmp_path / "odd.jsonl", [3])
    path.write_text(path.read_text().replace('"qid": "q1"', '"qid": "a#b?c%d&e"'))
    service = make_service(path, serve_model, tmp_path / "odd.sqlite")
    token = service.store.add_annotator("ann")
    with TestClient(create_app(service), raise_server_exceptions=False) as client:
        start = client.get(f"/?token={token}").text
        assert f'href="/judge/a%23b%3Fc%25d%26e?token={token}"' in start
        page = client.get(f"/judge/a%23b%3Fc%25d%26e?token={token}")
        assert page.status_code == 200
        assert f'action="/judge/a%23b%3Fc%25d%26e?token={token}"' in page.text
        form = _form(service, "ann", "a#b?c%d&e")
        posted = client.post(f"/judge/a%23b%3Fc%25d%26e?token={token}", data=form, headers=JSON)
        assert posted.status_code == 200 and posted.json()["judgement"]["qid"] == "a#b?c%d&e"
    service.store.close()


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
        ({"choice": "undo"}, 400, "not an answer"),
        ({"jid": None}, 400, "lacks jid"),
    ],
)
def test_bad_judgements_get_a_message_and_a_4xx(
    client: TestClient,
    service: JudgingService,
    tokens: dict[str, str],
    change: dict,
    status: int,
    message: str,
) -> None:
    token = tokens["ann"]
    form = _form(service, "ann", "q1")
    if {"left", "right"} <= set(change) and change["left"] != change["right"]:
        offered = {form["left"], form["right"]}
        pairs = [(str(i), str(j)) for i in range(5) for j in range(5) if i != j]
        other = next(p for p in pairs if set(p) != offered)
        change = dict(zip(("left", "right"), other, strict=True))
    form.update(change)
    form = {k: v for k, v in form.items() if v is not None}
    page = client.post(f"/judge/q1?token={token}", data=form)
    assert page.status_code == status
    assert message in page.text and "Traceback" not in page.text
    assert "Back to the page" in page.text
    as_json = client.post(f"/judge/q1?token={token}", data=form, headers=JSON)
    assert as_json.status_code == status and message in as_json.json()["error"]
    assert service.store.count() == 0


def test_bad_requests_never_500(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    token = tokens["ann"]
    form = _form(service, "ann", "q1")
    url = f"/judge/q1?token={token}"
    cases = [
        (client.get(f"/judge/nope?token={token}"), 404, "no question &#39;nope&#39;"),
        (client.get(f"/ranking/nope?token={token}"), 404, "no question"),
        (client.post(f"/judge/nope?token={token}", data=form), 404, "no question"),
        (client.post(f"/undo/q1?token={token}", data={"jid": "x"}), 400, "lacks round"),
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
        (client.get(f"/export.jsonl?token={tokens['admin']}&annotator=a%20b"), 400,
         "annotator name"),
        (client.get("/static/../app.py"), 404, ""),
    ]  # fmt: skip
    for response, status, message in cases:
        assert response.status_code == status, response.text
        assert message in response.text and "Traceback" not in response.text
    assert service.store.count() == 0


def test_answer_texts_are_escaped(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    token = tokens["ann"]
    # offer the hostile candidate (c1): judge until a pair shows it
    seen = ""
    for _ in range(10):
        state = service.state("ann", "q1")
        page = client.get(f"/judge/q1?token={token}").text
        if 1 in state.pair:
            seen = page
            break
        client.post(f"/judge/q1?token={token}", data=_form(service, "ann", "q1"))
    assert seen, "the hostile candidate was never offered"
    ranking = client.get(f"/ranking/q1?token={tokens['admin']}").text
    for text in (seen, ranking):
        assert '<script>alert("x")</script>' not in text
        assert (
            "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp;" in text
        )
    assert HOSTILE.startswith("<script>")


def test_ranking_page_and_plot(
    client: TestClient, service: JudgingService, tokens: dict[str, str]
) -> None:
    token = tokens["ann"]
    before = client.get(f"/ranking/q2?token={token}").text
    assert "<svg" in before and before.count('class="row"') == 4
    for _ in range(3):
        client.post(f"/judge/q2?token={token}", data=_form(service, "ann", "q2"))
    after = client.get(f"/ranking/q2?token={token}").text
    assert "after 3 preferences by <strong>ann</strong>" in after
    assert after != before
    ranking = service.ranking("q2", "ann")
    rows = re.findall(r'<tr data-candidate="(\d+)">', after)
    assert [int(r) for r in rows] == ranking.order
    everyone = client.get(f"/ranking/q2?token={tokens['admin']}").text
    assert "after 3 preferences by all annotators" in everyone


def test_admin_lists_annotators_progress_and_agreement(
    client: TestClient, service: JudgingService
) -> None:
    token = service.store.issue_admin_token()
    empty = client.get(f"/admin?token={token}").text
    assert "No annotator yet" in empty and "No pair has been judged by two" in empty
    for name in ("ann", "bob"):  # same seed: both are offered the same first pairs
        mine = service.store.add_annotator(name)
        for _ in range(2):
            client.post(f"/judge/q1?token={mine}", data=_form(service, name, "q1"))
    page = client.get(f"/admin?token={token}").text
    assert re.search(r'<tr data-qid="q1"><td class="qid">q1</td><td>2</td><td>4</td>', page)
    assert re.search(r'<tr data-qid="q2"><td class="qid">q2</td><td>0</td><td>0</td>', page)
    assert re.search(r"<td>ann</td><td>2</td><td>1</td>", page)
    assert re.search(r"<td>bob</td><td>2</td><td>1</td>", page)
    assert "2 pairs were judged by two annotators or more" in page
    assert "Identical answers: 100.0%" in page
    assert "ann and bob" in page and "WAL journal" in page


def test_exports(client: TestClient, service: JudgingService, tokens: dict[str, str]) -> None:
    ann, bob, token = tokens["ann"], tokens["bob"], tokens["admin"]
    client.post(f"/judge/q1?token={ann}", data=_form(service, "ann", "q1", "right"))
    client.post(f"/judge/q1?token={ann}", data=_form(service, "ann", "q1", "tie"))
    client.post(f"/judge/q2?token={bob}", data=_form(service, "bob", "q2", "left"))
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
    # CSV: the same rows and columns; the filters select by annotator and question
    table = list(csv.DictReader(io.StringIO(client.get(f"/export.csv?token={token}").text)))
    assert [row["id"] for row in table] == [r["id"] for r in records]
    assert [row["winner"] for row in table] == [r["winner"] or "" for r in records]
    only = client.get(f"/export.jsonl?token={token}&annotator=bob").text.splitlines()
    assert [json.loads(x)["annotator"] for x in only] == ["bob"]
    q1 = list(
        csv.DictReader(io.StringIO(client.get(f"/export.csv?token={token}&question=q1").text))
    )
    assert [row["qid"] for row in q1] == ["q1", "q1"]


def test_pages_say_preparing_until_the_model_is_ready(service: JudgingService) -> None:
    preparation = Preparation(service.project.questions)
    preparation.stage("warm-starting the ranker", done=3, total=7)
    admin = service.store.issue_admin_token()
    ann = service.store.add_annotator("ann")
    app = create_app(preparation, store=service.store, instructions="# Rules\n\n<b>be</b> fair")
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/health").text == "preparing"
        waiting = client.get(f"/judge/q1?token={ann}")
        assert waiting.status_code == 503 and waiting.headers["retry-after"] == "2"
        assert '<meta http-equiv="refresh" content="2">' in waiting.text
        assert "warm-starting the ranker (3 of 7)" in waiting.text
        as_json = client.get(f"/judge/q1?token={ann}", headers=JSON)
        assert as_json.status_code == 503 and "preparing" in as_json.json()["error"]
        assert client.get("/judge/q1?token=wrong").status_code == 403  # still checked
        assert client.get(f"/admin?token={admin}").status_code == 200  # from the database
        assert client.get(f"/export.jsonl?token={admin}").status_code == 200
        preparation.ready(service)
        ready = client.get(f"/?token={ann}")
        assert ready.status_code == 200 and "refresh" not in ready.text
        assert "<h1>Rules</h1>" in ready.text  # Markdown rendered, raw HTML escaped
        assert "&lt;b&gt;be&lt;/b&gt; fair" in ready.text and "<b>be</b>" not in ready.text
    failed = Preparation(service.project.questions)
    failed.fail(InputDataError("the database was made with another model"))
    with TestClient(create_app(failed, store=service.store)) as client:
        page = client.get(f"/judge/q1?token={ann}")
        assert page.status_code == 503 and "failed: the database was made with another" in page.text
