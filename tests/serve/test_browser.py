"""A real browser (headless Chromium from Debian's packages, driven by Selenium) judges a whole
question with the keyboard, reloads mid-way, and checks that nothing was lost and that the
ranking page changed; a screenshot of each page goes to the test's temporary folder."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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
        browser.get(server.url)
        assert "Which answer is better?" in browser.page_source
        browser.save_screenshot(str(shots / "start.png"))
        name = browser.find_element(By.ID, "annotator")
        name.send_keys("alice")
        name.submit()
        WebDriverWait(browser, 30).until(lambda d: "/judge/q1" in d.current_url)
        judge_url = browser.current_url

        ranking_url = f"{server.base}/ranking/q1?token={server.token}&annotator=alice"
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
