"""``probrank serve --pool`` in a real browser (headless Chromium from Debian's packages, driven
by Selenium) against a real server process, on a Vaswani pool made by the project's own BM25:
an annotator's link grades documents with the keyboard, reloads mid-way (the same document
comes back), takes the last judgement back with ``u`` and grades it again; a second annotator
meanwhile gets other documents; the admin page's qrels link downloads TREC qrels that
probrank's own reader reads back as exactly what was pressed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from probrank.data.trec import Qrels
from tests.serve.conftest import ServerProcess
from tests.serve.pool_helpers import DEPTH, PoolFiles, vaswani_pool  # noqa: F401
from tests.serve.test_browser import FLAGS


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


def _shown(driver) -> tuple[int, str | None]:
    """The topic's judged count the page shows and its document (None: nothing to judge)."""
    from selenium.webdriver.common.by import By

    judged = int(driver.find_element(By.ID, "judged").get_attribute("data-judged"))
    found = driver.find_elements(By.ID, "document")
    return judged, (found[0].get_attribute("data-docno") if found else None)


def _press(driver, key: str, judged: int) -> None:
    """Press ``key`` and wait for the page that shows ``judged`` judgements."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    ActionChains(driver).send_keys(key).perform()

    def advanced(d) -> bool:
        try:
            return _shown(d)[0] == judged
        except (StaleElementReferenceException, WebDriverException):
            return False  # the page is being replaced

    WebDriverWait(driver, 30, poll_frequency=0.05).until(advanced)


@pytest.mark.slow
def test_grade_documents_with_the_keyboard_and_download_the_qrels(
    browser,
    tmp_path: Path,
    vaswani_pool: PoolFiles,  # noqa: F811
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    db = tmp_path / "pool.sqlite"
    server = ServerProcess(
        [
            "--pool", str(vaswani_pool.runs), "--topics", str(vaswani_pool.topics),
            "--docs", str(vaswani_pool.docs), "--depth", str(DEPTH), "--seed", "0",
            "--db", str(db),
        ],
        tmp_path,
        timeout=120,
    )  # fmt: skip
    shots = tmp_path / "screenshots"
    shots.mkdir()
    try:
        assert any("strategy bayesian" in line for line in server.lines)
        alice, bob = server.add("alice"), server.add("bob")
        browser.get(f"{server.base}/?token={alice}")  # the invite link
        assert "Is this document relevant to the topic?" in browser.page_source
        browser.save_screenshot(str(shots / "start.png"))
        browser.find_element(By.ID, "start-judging").click()
        WebDriverWait(browser, 30).until(lambda d: "/judge/1" in d.current_url)
        assert "judging as alice" in browser.find_element(By.CLASS_NAME, "who").text
        assert "DIELECTRIC CONSTANT" in browser.find_element(By.ID, "topic-text").text

        pressed: dict[str, int] = {}
        for number in range(7):
            judged, docno = _shown(browser)
            assert judged == number and docno is not None and docno not in pressed
            if number == 3:  # reload mid-way: the same document comes back
                browser.save_screenshot(str(shots / "judge.png"))
                browser.refresh()
                assert _shown(browser) == (judged, docno)
                other = httpx.get(  # bob meanwhile: another document of the same pool
                    f"{server.base}/judge/1?token={bob}",
                    headers={"Accept": "application/json"},
                    timeout=30,
                ).json()["state"]["docno"]
                assert other not in {docno, *pressed}
            grade = number % 3
            _press(browser, str(grade), number + 1)
            pressed[docno] = grade
        last = docno
        _press(browser, "u", 6)  # undo: the last document is shown again
        assert _shown(browser) == (6, last)
        browser.save_screenshot(str(shots / "undo.png"))
        _press(browser, "2", 7)
        pressed[last] = 2

        browser.get(f"{server.base}/admin?token={alice}")
        assert "this page is the admin" in browser.page_source
        browser.get(server.url)  # the admin link
        assert "alice" in browser.find_element(By.ID, "annotators").text
        link = browser.find_element(By.ID, "export-qrels").get_attribute("href")
        browser.save_screenshot(str(shots / "admin.png"))
        download = httpx.get(link, timeout=30)
        assert download.status_code == 200
    finally:
        server.stop()
    qrels_file = tmp_path / "judged.qrels"
    qrels_file.write_text(download.text, encoding="utf-8")
    assert Qrels.read(qrels_file).as_dict() == {"1": pressed}
    assert [line.split()[2] for line in download.text.splitlines()][:6] == list(pressed)[:6]
    for name in ("start", "judge", "undo", "admin"):
        assert (shots / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
