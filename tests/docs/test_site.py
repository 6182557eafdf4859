"""The built site: every public name has an API entry, every tutorial page shows its executed
outputs, and headless Chromium renders the front page, an API page and a tutorial page without
console errors, and its search finds ``QLFusion``.

``make docs`` executed every notebook top to bottom (myst-nb, ``SMOKE_TEST=1``, an error fails
the build), so ``make test``'s first leg does not run them a second time through
``tests/test_tutorials.py``; the checks that test makes of the outputs are made here on the
rendered pages."""

from __future__ import annotations

import functools
import http.server
import importlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "probrank.models",
    "probrank.data",
    "probrank.evaluation",
    "probrank.diagnostics",
    "probrank.inference",
    "probrank.posteriors",
    "probrank.fusion",
    "probrank.pooling",
]
NOTEBOOKS = sorted(ROOT.glob("tutorials/[0-9][0-9]_*/*.ipynb"))


def _inventory(site: Path) -> dict[str, str]:
    """``{object name: page}`` of the Python objects the site documents (its objects.inv)."""
    from sphinx.util.inventory import InventoryFile

    with (site / "objects.inv").open("rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, path: path)
    return {
        name: item[2] if isinstance(item, tuple) else item.uri
        for domain, items in inventory.items()
        if domain.startswith("py:")
        for name, item in items.items()
    }


def _resolve(path: str) -> object | None:
    """The object an entry names: an attribute of its parent first (``probrank.diagnostics.loo``
    is the function the package exports, not the module of that name), else a module."""
    parent, _, leaf = path.rpartition(".")
    if not parent:
        return importlib.import_module(path)
    try:
        owner: object | None = importlib.import_module(parent)
    except ImportError:
        owner = _resolve(parent)
    if owner is not None and hasattr(owner, leaf):
        return getattr(owner, leaf)  # a dataclass field is an entry, not a class attribute
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_an_api_entry(site: Path, package: str) -> None:
    documented = _inventory(site)
    module = importlib.import_module(package)
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        entries = [e for e in documented if e == f"{package}.{name}" or e.endswith("." + name)]
        if not any(_resolve(entry) is obj for entry in entries):
            missing.append(name)
    assert missing == [], f"{package}: no API entry for {missing}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_every_tutorial_page_shows_its_executed_outputs(site: Path, notebook: Path) -> None:
    page = site / "tutorials" / notebook.parent.name / f"{notebook.stem}.html"
    assert page.is_file(), f"{page} was not built"
    html = page.read_text(encoding="utf-8")
    outputs = re.findall(r'class="cell_output', html)
    assert outputs, f"{page.name} shows no outputs: the notebook was not executed at build time"
    assert "Traceback (most recent call last)" not in html
    # as tests/test_tutorials.py: no warning about an API's future reaches the reader
    warned = re.findall(r"\b(?:Future|Deprecation|PendingDeprecation|Migration)Warning\b", html)
    assert warned == [], f"{page.name}: {warned}"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site on a real HTTP server on a free local port."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def browser(chromium: tuple[str, str], tmp_path: Path) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.parametrize(
    "page, expected",
    [
        ("index.html", "probrank"),
        ("api/probrank.models.html", "QLFusion"),
        ("tutorials/05_rank_fusion/05_rank_fusion.html", "fusion"),
    ],
)
def test_pages_render_without_console_errors(
    browser, served: str, page: str, expected: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{served}/{page}")
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    main = browser.find_element(By.CSS_SELECTOR, "main")
    assert expected.lower() in main.text.lower()
    assert browser.find_elements(By.CSS_SELECTOR, "nav"), "the theme's navigation is missing"
    assert _console_errors(browser) == []


def test_search_finds_qlfusion(browser, served: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{served}/search.html?q=QLFusion")
    WebDriverWait(browser, 60).until(
        lambda d: "Search finished" in d.find_element(By.ID, "search-results").text
    )
    links = [
        a.get_attribute("href")
        for a in browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li > a")
    ]
    assert any(link.endswith("api/probrank.models.html#probrank.models.QLFusion") for link in links)
    assert any("models/qlfusion.html" in link for link in links), "the card is not found"
    assert _console_errors(browser) == []
