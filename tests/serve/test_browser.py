"""A real browser (headless Chromium from Debian's packages, driven by Selenium) against a real
server: an annotator's invite link judges a whole question with the keyboard, reloads mid-way,
and nothing is lost and the ranking page changed; undo with the keyboard; a question id with
``#?%``; the annotator's link refused on ``/admin`` and, once revoked, everywhere; the
"preparing" page refreshing itself into the judging page. A screenshot of each page goes to the
test's temporary folder."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from probrank.serve.annotators import AnnotatorRegistry
from tests.serve.conftest import HOSTILE, ServerProcess, write_questions

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
)


@pytest.fixture
def browser(chromium: tuple[str, str], tmp_path: Path) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _ranking_rows(driver) -> list[tuple[str, str]]:
    """(candidate, mean) of each row of the ranking table, best first."""
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "#ranking-table tbody tr")
    return [
        (row.get_attribute("data-candidate"), row.find_elements(By.TAG_NAME, "td")[2].text)
        for row in rows
    ]


def _shown(driver) -> tuple[int, tuple[str, str] | None]:
    """The round shown by the judging page and its pair (None once the question is done)."""
    from selenium.webdriver.common.by import By

    answers = driver.find_element(By.ID, "answers")
    if driver.find_elements(By.ID, "done"):
        return int(answers.get_attribute("data-round")), None
    left = driver.find_element(By.ID, "left-answer").get_attribute("data-candidate")
    right = driver.find_element(By.ID, "right-answer").get_attribute("data-candidate")
    return int(answers.get_attribute("data-round")), (left, right)


@pytest.mark.slow
def test_judge_a_whole_question_with_the_keyboard(
    browser, tmp_path: Path, serve_model: Path
) -> None:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    questions = write_questions(tmp_path / "browser.jsonl", [5, 3], hostile=True, seed=4)
    db = tmp_path / "browser.sqlite"
    server = ServerProcess(
        ["--data", str(questions), "--model", str(serve_model), "--db", str(db)], tmp_path
    )
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        alice = server.add("alice")
        browser.get(f"{server.base}/?token={alice}")  # the invite link
        assert "Which answer is better?" in browser.page_source
        browser.save_screenshot(str(shots / "start.png"))
        browser.find_element(By.ID, "start-judging").click()
        WebDriverWait(browser, 30).until(lambda d: "/judge/q1" in d.current_url)
        judge_url = browser.current_url
        assert "judging as alice" in browser.find_element(By.CLASS_NAME, "who").text

        ranking_url = f"{server.base}/ranking/q1?token={alice}"
        browser.get(ranking_url)
        before = _ranking_rows(browser)
        assert len(before) == 5
        browser.save_screenshot(str(shots / "ranking-before.png"))
        browser.get(judge_url)

        keys = [Keys.ARROW_LEFT, "2", Keys.ARROW_DOWN, "1", Keys.ARROW_RIGHT, "0"]
        meaning = {Keys.ARROW_LEFT: "left", "1": "left", Keys.ARROW_RIGHT: "right", "2": "right",
                   Keys.ARROW_DOWN: "tie", "0": "tie"}  # fmt: skip
        pressed, pairs = [], []
        for number in range(10):  # 5 answers: 10 pairs
            shown_round, pair = _shown(browser)
            assert shown_round == number and pair is not None
            if number == 0:
                assert HOSTILE not in browser.page_source  # escaped, if shown at all
            key = keys[number % len(keys)]
            ActionChains(browser).send_keys(key).perform()
            pressed.append(meaning[key])
            pairs.append(pair)

            def advanced(driver, expected=number + 1) -> bool:
                try:
                    return _shown(driver)[0] == expected
                except (StaleElementReferenceException, WebDriverException):
                    return False  # the page is being replaced

            WebDriverWait(browser, 30, poll_frequency=0.05).until(advanced)
            if number == 4:  # reload mid-way: the same round and pair come back
                state = _shown(browser)
                browser.save_screenshot(str(shots / "judge.png"))
                browser.refresh()
                assert _shown(browser) == state
        assert _shown(browser)[1] is None  # every pair judged: done
        assert "every pair of this question has been answered" in browser.page_source
        browser.save_screenshot(str(shots / "done.png"))

        browser.get(ranking_url)
        after = _ranking_rows(browser)
        assert after != before
        assert re.search(r"after \d+ preferences by", browser.page_source)
        browser.save_screenshot(str(shots / "ranking.png"))

        export = httpx.get(f"{server.base}/export.jsonl?token={server.token}", timeout=30)
        records = [json.loads(line) for line in export.text.splitlines()]
    finally:
        server.stop()
    mine = [r for r in records if r["annotator"] == "alice"]
    assert [r["round"] for r in mine] == list(range(10))  # nothing lost, nothing twice
    assert [r["choice"] for r in mine] == pressed
    assert [(r["left"], r["right"]) for r in mine] == [(f"c{a}", f"c{b}") for a, b in pairs]
    assert len({frozenset((r["left"], r["right"])) for r in mine}) == 10
    for name in ("start", "ranking-before", "judge", "done", "ranking"):
        assert (shots / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name


def _press(browser, key: str, expected_round: int) -> None:
    """Press ``key`` and wait for the page of round ``expected_round``."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    ActionChains(browser).send_keys(key).perform()

    def advanced(driver) -> bool:
        try:
            return _shown(driver)[0] == expected_round
        except (StaleElementReferenceException, WebDriverException):
            return False  # the page is being replaced

    WebDriverWait(browser, 30, poll_frequency=0.05).until(advanced)


@pytest.mark.slow
def test_undo_odd_question_ids_and_links_refused(
    browser, tmp_path: Path, serve_model: Path
) -> None:
    from selenium.webdriver.common.by import By

    questions = write_questions(tmp_path / "odd.jsonl", [4], seed=5)
    odd = "a#b?c%d"
    questions.write_text(questions.read_text().replace('"qid": "q1"', f'"qid": "{odd}"'))
    db = tmp_path / "odd.sqlite"
    server = ServerProcess(
        ["--data", str(questions), "--model", str(serve_model), "--db", str(db)], tmp_path
    )
    try:
        bob = server.add("bob")
        browser.get(f"{server.base}/?token={bob}")
        browser.find_element(By.ID, "start-judging").click()  # the link of "a#b?c%d"
        assert f"Question {odd}" in browser.find_element(By.CLASS_NAME, "qid").text
        first = _shown(browser)
        _press(browser, "1", 1)
        second = _shown(browser)
        _press(browser, "2", 2)
        assert browser.find_element(By.ID, "answers").get_attribute("data-answers") == "2"
        _press(browser, "u", 3)  # undo: an event of its own, round 3
        assert _shown(browser)[1] == second[1]  # the pair before the retracted answer
        assert browser.find_element(By.ID, "answers").get_attribute("data-answers") == "1"
        browser.save_screenshot(str(tmp_path / "undo.png"))
        browser.get(f"{server.base}/admin?token={bob}")
        assert (
            "Forbidden" in browser.page_source and "this page is the admin" in browser.page_source
        )
        with AnnotatorRegistry(db) as registry:
            registry.revoke("bob")
        browser.get(f"{server.base}/?token={bob}")
        assert "not valid here (revoked" in browser.page_source
        export = httpx.get(f"{server.base}/export.jsonl?token={server.token}", timeout=30)
        records = [json.loads(line) for line in export.text.splitlines()]
    finally:
        server.stop()
    assert [(r["qid"], r["round"], r["choice"], r["retracted"]) for r in records] == [
        (odd, 0, "left", False), (odd, 1, "right", True), (odd, 2, "undo", False)
    ]  # fmt: skip
    assert (records[0]["left"], records[0]["right"]) == tuple(f"c{i}" for i in first[1])


@pytest.mark.slow
def test_the_preparing_page_refreshes_itself(
    browser, tmp_path: Path, questions_file: Path, serve_model: Path
) -> None:
    import uvicorn
    from selenium.webdriver.support.ui import WebDriverWait

    from probrank.serve.app import create_app
    from probrank.serve.server import bind
    from probrank.serve.startup import Preparation
    from tests.serve.conftest import make_service

    service = make_service(questions_file, serve_model, tmp_path / "p.sqlite")
    token = service.store.add_annotator("carol")
    preparation = Preparation(service.project.questions)
    preparation.stage("warm-starting the ranker on MEDIQA")
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(preparation, store=service.store),
        log_config=None,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        browser.get(f"http://127.0.0.1:{port}/judge/q1?token={token}")
        assert "Preparing the judging server" in browser.page_source
        assert "warm-starting the ranker on MEDIQA" in browser.page_source
        browser.save_screenshot(str(tmp_path / "preparing.png"))
        preparation.ready(service)  # no click, no reload: the page refreshes itself
        WebDriverWait(browser, 20, poll_frequency=0.1).until(
            lambda d: "judge-form" in d.page_source
        )
        assert _shown(browser)[0] == 0
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        service.store.close()
