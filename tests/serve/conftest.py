"""Fixtures of the judging-server tests: a tiny saved ranker, question files, services, a real
server process, and headless Chromium (installed from Debian's packages when missing and the
machine allows it; required under ``CI=true``)."""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from probrank.data.candidates import CandidateList
from probrank.models.interactive import InteractiveRanker, InteractiveRankerSettings, WarmStart
from probrank.models.interactive.warmstart import new_net
from probrank.serve.annotators import AnnotatorRegistry
from probrank.serve.judging import JudgingService
from probrank.serve.project import Project
from probrank.serve.store import JudgementStore
from tests.encoders.conftest import WORDS
from tests.models.conftest import tiny_bert_path, tiny_encoder  # noqa: F401 -- fixtures

HOSTILE = '<script>alert("x")</script><b>bold</b> & "quotes"'
"""A candidate text that must reach the page escaped."""

SERVER_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def write_questions(path: Path, sizes: list[int], *, seed: int = 0, hostile: bool = False) -> Path:
    """A JSON-lines file with one question per size (``q1`` ...), candidates ``c0`` ...
    made of the tiny tokenizer's words; with ``hostile``, ``q1``'s ``c1`` is :data:`HOSTILE`."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for number, size in enumerate(sizes, start=1):
            candidates = []
            for j in range(size):
                text = " ".join(rng.choice(WORDS) for _ in range(8))
                if hostile and number == 1 and j == 1:
                    text = HOSTILE
                candidates.append({"id": f"c{j}", "text": text})
            query = " ".join(rng.choice(WORDS) for _ in range(6))
            out.write(json.dumps({"qid": f"q{number}", "query": query, "candidates": candidates}))
            out.write("\n")
    return path


@pytest.fixture(scope="session")
def serve_model(tmp_path_factory: pytest.TempPathFactory, tiny_encoder) -> Path:  # noqa: F811
    """A saved Laplace :class:`InteractiveRanker` over the tiny random BERT (random warm-start
    network of the card's shape: timing and replay do not depend on trained weights)."""
    settings = InteractiveRankerSettings()
    width = 4 * 32  # (u, v, u*v, |u-v|) of 32-wide embeddings
    net = new_net(width, settings.warm_start)
    warm = WarmStart(net=net, members=[net])
    ranker = InteractiveRanker.from_warm_start(warm, settings, encoder=tiny_encoder)
    folder = tmp_path_factory.mktemp("serve-model") / "ranker"
    ranker.save(folder)
    return folder


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    """Two questions: ``q1`` with 5 candidates (one hostile text), ``q2`` with 4."""
    return write_questions(tmp_path / "questions.jsonl", [5, 4], hostile=True)


def make_service(
    questions: Path, model: Path, db: Path, *, rounds: int | None = None, max_sessions: int = 256
) -> JudgingService:
    """A :class:`JudgingService` over a questions file, a saved ranker and a database."""
    ranker = InteractiveRanker.load(model)
    project = Project(
        CandidateList.from_jsonl(questions), ranker, source=questions.name, rounds=rounds
    )
    return JudgingService(project, JudgementStore(db), max_sessions=max_sessions)


@pytest.fixture
def service(questions_file: Path, serve_model: Path, tmp_path: Path) -> Iterator[JudgingService]:
    """A service over :func:`questions_file` with a fresh database."""
    made = make_service(questions_file, serve_model, tmp_path / "judgements.sqlite")
    yield made
    made.store.close()


# -- a real server process -------------------------------------------------------------------


class ServerProcess:
    """``probrank serve ... --port 0`` in a subprocess; :attr:`url` is the printed admin link,
    :attr:`token` its token; :meth:`add` makes an annotator's link.

    Args:
        args: Arguments after ``serve`` (with ``--db``).
        cwd: Working directory.
        timeout: Seconds to wait for the address (and, with ``ready``, for the model).
        ready: Wait until ``/health`` says the model is ready.
    """

    def __init__(
        self, args: list[str], cwd: Path, *, timeout: float = 180.0, ready: bool = True
    ) -> None:
        self.started = time.monotonic()
        self.db = Path(args[args.index("--db") + 1])
        env = {**os.environ, **SERVER_ENV}
        command = [sys.executable, "-m", "probrank.cli", "serve", "--port", "0", *args]
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        found: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.append(line)
                if "probrank serve: open http" in line:
                    found.put(line.split("open ", 1)[1].strip())
            found.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            url = found.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError("no address printed:\n" + "".join(self.lines)) from None
        if url is None:
            raise AssertionError("the server ended:\n" + "".join(self.lines))
        self.printed = time.monotonic() - self.started  # seconds to the printed address
        self.url = url
        parts = urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = parse_qs(parts.query)["token"][0]
        if ready:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 180.0) -> float:
        """Wait until the model is ready; returns the seconds since the start."""
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError("the server ended:\n" + "".join(self.lines))
            try:
                if httpx.get(f"{self.base}/health", timeout=10).text == "ok":
                    return time.monotonic() - self.started
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError("the model was never ready:\n" + "".join(self.lines))

    def add(self, name: str) -> str:
        """A new annotator's token (``probrank annotators add``'s library call)."""
        with AnnotatorRegistry(self.db) as registry:
            return registry.add(name)[1]

    def stop(self) -> int:
        """SIGTERM, then wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL (``kill -9``) and reap."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


# -- headless Chromium -----------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _missing(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _install_chromium() -> None:
    """``apt-get install chromium chromium-driver`` as root, one process at a time."""
    import fcntl

    with open("/tmp/probrank-apt-chromium.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists():
            return
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"],
        ):
            subprocess.run(command, env=env, check=False, timeout=900, capture_output=True)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """Paths of Debian's ``chromium`` and ``chromedriver`` (installed when missing, as root
    with apt-get; otherwise the test is skipped, or fails under ``CI=true``)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        _missing("selenium is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
            _install_chromium()
        if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
            _missing(
                f"headless Chromium needs {CHROMIUM} and {CHROMEDRIVER}: "
                "apt-get install -y chromium chromium-driver (as root)"
            )
    return CHROMIUM, CHROMEDRIVER
