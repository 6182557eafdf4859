"""Make the README's screenshots of ``probrank serve --data liveqa-med``.

Starts the server on a temporary database, gives the annotator "demo" a link (``probrank
annotators add``'s library call), waits until the model is ready, lets that annotator judge a
few pairs of one question through the JSON interface (the higher LiveQA-Med grade is better;
equal grades below 3 are "both bad"), and saves what headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) shows of the judging page and of the ranking page:

    .venv/bin/python docs/serve_screenshots.py [--question TQ12] [--rounds 12]

writes ``docs/images/serve-judge.png`` and ``docs/images/serve-ranking.png``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from probrank._files import write_bytes_atomically
from probrank.serve.annotators import AnnotatorRegistry
from probrank.serve.sources import load_questions

IMAGES = Path(__file__).resolve().parent / "images"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def _start(db: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "probrank.cli", "serve", "--data", "liveqa-med"]
    command += ["--db", str(db), "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if "probrank serve: open " in line:
            return process, line.split("open ", 1)[1].strip()
    raise SystemExit(f"probrank serve ended with code {process.wait()}")


def _judge(base: str, token: str, qid: str, grades: tuple[int, ...], rounds: int) -> None:
    headers = {"Accept": "application/json"}
    with httpx.Client(timeout=60.0) as client:
        url = f"{base}/judge/{qid}?token={token}"
        while client.get(f"{base}/health").text != "ok":  # the model is being prepared
            time.sleep(1.0)
        state = client.get(url, headers=headers).json()["state"]
        for _ in range(rounds):
            left, right = state["pair"]
            if grades[left] == grades[right] and grades[left] < 3:
                choice = "tie"
            else:
                choice = "left" if grades[left] >= grades[right] else "right"
            form = {"round": str(state["round"]), "left": str(left), "right": str(right),
                    "jid": uuid.uuid4().hex, "choice": choice}  # fmt: skip
            answer = client.post(url, data=form, headers=headers)
            answer.raise_for_status()
            state = answer.json()["state"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", default="TQ12")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    questions, _ = load_questions("liveqa-med")
    item = next(q for q in questions if q.qid == args.question)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "screens.sqlite"
        process, url = _start(db)
        try:
            parts = urlsplit(url)
            base = f"{parts.scheme}://{parts.netloc}"
            assert parse_qs(parts.query)["token"]  # the admin link; the annotator has their own
            with AnnotatorRegistry(db) as registry:
                token = registry.add("demo")[1]
            _judge(base, token, item.qid, item.grades, args.rounds)
            options = webdriver.ChromeOptions()
            options.binary_location = "/usr/bin/chromium"
            for flag in (*FLAGS, f"--user-data-dir={Path(folder) / 'profile'}"):
                options.add_argument(flag)
            driver = webdriver.Chrome(
                service=Service(executable_path="/usr/bin/chromedriver"), options=options
            )
            try:
                pages = {
                    "serve-judge.png": f"/judge/{item.qid}?token={token}",
                    "serve-ranking.png": f"/ranking/{item.qid}?token={token}",
                }
                for name, path in pages.items():
                    driver.get(base + path)
                    write_bytes_atomically(IMAGES / name, driver.get_screenshot_as_png())
                    print(IMAGES / name)
            finally:
                driver.quit()
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
