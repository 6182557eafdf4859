"""The real server: ``probrank serve`` in a subprocess under load (20 annotators, 2,000
judgements on loopback), killed with SIGKILL mid-load and restarted, and its command-line
errors."""

from __future__ import annotations

import logging
import os
import random
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from probrank.cli import main
from tests.serve.conftest import ServerProcess, write_questions

ANNOTATORS = 20
JSON = {"Accept": "application/json"}


def _questions(tmp_path: Path) -> Path:
    # 25 candidates (300 pairs) per question: each annotator answers 50 on each of two;
    # the latency at 45 candidates is benchmarks/serve_latency.py's
    return write_questions(tmp_path / "load.jsonl", [25, 25, 25, 25], seed=1)


class Annotator:
    """A simulated annotator posting judgements through the JSON interface.

    Every acknowledged judgement id goes to :attr:`acknowledged`; one judgement in ten is
    posted twice (a retry), and the second answer must be the same acknowledgement.
    """

    def __init__(self, server: ServerProcess, name: str, qids: list[str], seed: int) -> None:
        self.server = server
        self.name = name
        self.token = server.add(name)
        self.qids = qids
        self.rng = random.Random(seed)
        self.acknowledged: list[str] = []
        self.last: dict[str, dict] = {}  # qid -> state after the last acknowledgement
        self.pending: tuple[str, dict] | None = None  # a form sent without an answer
        self.errors: list[str] = []

    def _url(self, path: str) -> str:
        return f"{self.server.base}{path}?token={self.token}"

    def work(self, count: int, stop: threading.Event, deadline: float) -> None:
        with httpx.Client(timeout=30.0) as client:
            for number in range(count):
                if stop.is_set() or time.monotonic() > deadline:
                    return
                qid = self.qids[number * len(self.qids) // count]
                try:
                    self._one(client, qid, retry=number % 10 == 9)
                except httpx.TransportError:
                    return  # the server is gone (the crash test)
                except AssertionError as error:
                    self.errors.append(str(error))
                    return

    def _one(self, client: httpx.Client, qid: str, *, retry: bool) -> None:
        state = self.last.get(qid)
        if state is None:
            state = client.get(self._url(f"/judge/{qid}"), headers=JSON).json()["state"]
        choice = self.rng.choices(["left", "right", "tie"], weights=[45, 45, 10])[0]
        form = {
            "round": str(state["round"]),
            "left": str(state["pair"][0]),
            "right": str(state["pair"][1]),
            "jid": uuid.uuid4().hex,
            "choice": choice,
        }
        self.pending = (qid, form)
        answer = self.post(client, qid, form)
        assert answer["ok"] and not answer["duplicate"], answer
        self.pending = None
        self.acknowledged.append(form["jid"])
        self.last[qid] = answer["state"]
        if retry:
            again = self.post(client, qid, form)
            assert again["duplicate"] and again["judgement"] == answer["judgement"], again

    def post(self, client: httpx.Client, qid: str, form: dict) -> dict:
        url = self._url(f"/judge/{qid}")
        response = client.post(url, data=form, headers=JSON)
        assert response.status_code == 200, response.text
        return response.json()


def _run(annotators: list[Annotator], count: int, stop: threading.Event) -> list[threading.Thread]:
    deadline = time.monotonic() + 240
    threads = [
        threading.Thread(target=a.work, args=(count, stop, deadline), daemon=True)
        for a in annotators
    ]
    for thread in threads:
        thread.start()
    return threads


def _stored(db: Path) -> list[tuple[str, str, str, int]]:
    with sqlite3.connect(db) as raw:
        return raw.execute(
            "SELECT id, annotator, qid, round FROM judgements ORDER BY seq"
        ).fetchall()


def _check_rounds(rows: list[tuple[str, str, str, int]]) -> None:
    """Each session's rounds are 0, 1, 2, ... in commit order: none lost, none twice."""
    rounds: dict[tuple[str, str], list[int]] = {}
    for _, annotator, qid, round_ in rows:
        rounds.setdefault((annotator, qid), []).append(round_)
    for key, values in rounds.items():
        assert values == list(range(len(values))), key


def _annotators(server: ServerProcess) -> list[Annotator]:
    qids = ["q1", "q2", "q3", "q4"]
    return [
        Annotator(server, f"a{k}", [qids[k % 4], qids[(k + 1) % 4]], seed=k)
        for k in range(ANNOTATORS)
    ]


@pytest.mark.slow
def test_twenty_annotators_post_2000_judgements(tmp_path: Path, serve_model: Path) -> None:
    db = tmp_path / "load.sqlite"
    args = ["--data", str(_questions(tmp_path)), "--model", str(serve_model), "--db", str(db)]
    server = ServerProcess(args, tmp_path)
    try:
        assert server.base.startswith("http://127.0.0.1:")  # loopback unless --host says
        annotators = _annotators(server)
        threads = _run(annotators, 2000 // ANNOTATORS, threading.Event())
        for thread in threads:
            thread.join(timeout=300)
        assert not any(thread.is_alive() for thread in threads)
        assert [e for a in annotators for e in a.errors] == []
    finally:
        code = server.stop()
    assert code in (0, 143), "".join(server.lines)
    acknowledged = [jid for a in annotators for jid in a.acknowledged]
    assert len(acknowledged) == 2000 == len(set(acknowledged))
    rows = _stored(db)
    assert len(rows) == 2000
    assert sorted(row[0] for row in rows) == sorted(acknowledged)  # all there, none twice
    _check_rounds(rows)


@pytest.mark.slow
def test_kill_9_during_load_loses_no_acknowledged_judgement(
    tmp_path: Path, serve_model: Path
) -> None:
    db = tmp_path / "crash.sqlite"
    # 20 annotators and at most 10 sessions kept: sessions are evicted and rebuilt
    args = ["--data", str(_questions(tmp_path)), "--model", str(serve_model), "--db", str(db),
            "--max-sessions", "10"]  # fmt: skip
    server = ServerProcess(args, tmp_path)
    annotators = _annotators(server)
    stop = threading.Event()
    threads = _run(annotators, 60, stop)
    deadline = time.monotonic() + 120
    while sum(len(a.acknowledged) for a in annotators) < 300 and time.monotonic() < deadline:
        time.sleep(0.02)
    server.kill()  # SIGKILL while the annotators are posting
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert [e for a in annotators for e in a.errors] == []
    acknowledged = {jid for a in annotators for jid in a.acknowledged}
    assert len(acknowledged) >= 300

    rows = _stored(db)
    stored = {row[0] for row in rows}
    assert acknowledged <= stored  # every acknowledged judgement survived
    assert len(rows) == len(stored)
    _check_rounds(rows)

    evicted = None
    again = ServerProcess(args, tmp_path)
    try:
        assert f"({len(rows)} answers stored;" in "".join(again.lines)
        assert again.printed < 30  # nothing replayed before the address (loaded machine)
        with httpx.Client(timeout=30.0) as client:
            for annotator in annotators:
                annotator.server = again
                for qid, last in annotator.last.items():
                    state = client.get(annotator._url(f"/judge/{qid}"), headers=JSON).json()
                    count = sum(1 for row in rows if row[1:3] == (annotator.name, qid))
                    assert state["state"]["round"] == count
                    if count == last["round"]:  # nothing committed after the last answer
                        assert state["state"] == last  # the same next pair, after replay
                if annotator.pending is not None:  # the answer in flight at the kill: resent
                    qid, form = annotator.pending
                    answer = annotator.post(client, qid, form)
                    assert answer["duplicate"] == (form["jid"] in stored)
                annotator.last.clear()
                annotator._one(client, annotator.qids[0], retry=False)  # judging goes on
            admin = client.get(f"{again.base}/admin?token={again.token}").text
            evicted = re.search(r"Sessions in memory: (\d+) \(at most 10\); (\d+) dropped", admin)
    finally:
        again.stop()
    final = _stored(db)
    assert len(final) == len({row[0] for row in final})
    _check_rounds(final)
    assert evicted is not None and int(evicted[1]) <= 10 and int(evicted[2]) > 0


def test_command_line_errors_are_one_line(
    tmp_path: Path, serve_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", [3])
    other = tmp_path / "other.sqlite"
    raw = sqlite3.connect(other)
    raw.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()
    other_bytes = other.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "q1", "query": "x", "candidates": [}\n')
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cases = [
            (["--data", str(tmp_path / "q.txt")], "must be a data set"),
            (["--data", str(bad)], f"{bad}:1: invalid JSON"),
            (["--data", str(questions), "--port", str(port)], f"port {port} on 127.0.0.1 is in"),
            (["--data", str(questions), "--port", "70000"], "--port must be 0 to 65535"),
            (["--data", str(questions), "--db", str(tmp_path / "no" / "x.sqlite"),
              "--model", str(serve_model), "--port", "0"], "folder does not exist"),
            (["--data", str(questions), "--model", str(serve_model), "--posterior", "gppl",
              "--port", "0", "--db", str(tmp_path / "x.sqlite")], "posterior is 'laplace'"),
            (["--topics", str(questions)], "TREC input needs --topics, --run and --docs"),
            (["--rounds", "0"], "--rounds: must be a positive integer"),
            (["--max-sessions", "0"], "--max-sessions: must be a positive integer"),
            (["--host", "no such host.invalid"], "is not an address here"),
            (["--data", str(questions), "--db", str(other), "--model", str(serve_model)],
             "another application (tables: invoices)"),
            (["--data", str(questions), "--db", str(tmp_path / "fresh.sqlite"),
              "--model", str(tmp_path)], "not a saved probrank model: no manifest.json"),
            (["--data", str(questions), "--db", str(tmp_path / "fresh.sqlite"),
              "--instructions", str(tmp_path / "none.md")], "none.md: no such file"),
            (["--posterior", "nope"], "--posterior must be one of"),
        ]  # fmt: skip
        for args, message in cases:
            assert main(["serve", *args]) == 2, args
            err = capsys.readouterr().err
            lines = err.splitlines()  # nothing else: no bar or log line of transformers
            assert len(lines) == 1 and err == lines[0] + "\n", err
            assert lines[0].startswith("probrank: error: ") and message in lines[0], err
    assert other.read_bytes() == other_bytes and not Path(f"{other}-wal").exists()
    assert not (tmp_path / "fresh.sqlite").exists()  # refused inputs leave no database
    assert not (tmp_path / "x.sqlite").exists()  # made by the failed start, removed


def test_annotators_add_without_url_uses_the_address_the_server_announced(
    tmp_path: Path, serve_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: ``probrank annotators add NAME --db F`` printed a link on port 8765 whatever
    port the server of ``F`` listened on; the server records its address in the database."""
    db = tmp_path / "announced.sqlite"
    args = ["--data", str(write_questions(tmp_path / "q.jsonl", [3])), "--model",
            str(serve_model), "--db", str(db)]  # fmt: skip
    server = ServerProcess(args, tmp_path, ready=False)
    try:
        assert main(["annotators", "add", "bob", "--db", str(db)]) == 0
        link = capsys.readouterr().out.splitlines()[0]
        assert link.startswith(f"bob: {server.base}/?token="), (link, server.base)
        assert not server.base.endswith(":8765")  # --port 0: any free port
        token = link.split("token=", 1)[1]
        server.wait_ready()
        page = httpx.get(f"{server.base}/?token={token}", timeout=30)
        assert page.status_code == 200
        # an explicit --url still wins
        assert main(["annotators", "add", "carol", "--db", str(db), "--url", "http://h:9"]) == 0
        assert capsys.readouterr().out.startswith("carol: http://h:9/?token=")
    finally:
        server.stop()


class _ClosingHandler(logging.Handler):
    """A handler that records being closed (absl's closes the stream it holds)."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True
        super().close()

    def emit(self, record: logging.LogRecord) -> None:
        pass


def test_serve_leaves_logging_as_it_found_it(
    tmp_path: Path, serve_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve()`` builds an in-process uvicorn: no ``dictConfig`` (which closes every handler
    of the process), and uvicorn's loggers are put back when it stops (issue 31)."""
    watched = logging.getLogger("tests.serve.watched")
    handler = _ClosingHandler()
    watched.addHandler(handler)
    names = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
    before = {
        name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers),
               logging.getLogger(name).propagate)
        for name in names
    }  # fmt: skip
    root_handlers = list(logging.getLogger().handlers)
    try:
        questions = write_questions(tmp_path / "q.jsonl", [3])
        # the server starts (uvicorn.Config is built), then the preparation fails and stops it
        args = ["--data", str(questions), "--model", str(serve_model), "--posterior", "gppl",
                "--port", "0", "--db", str(tmp_path / "x.sqlite")]  # fmt: skip
        assert main(["serve", *args]) == 2
        assert "posterior is 'laplace'" in capsys.readouterr().err
        assert not handler.closed
        assert handler in watched.handlers
        assert list(logging.getLogger().handlers) == root_handlers
        after = {
            name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers),
                   logging.getLogger(name).propagate)
            for name in names
        }  # fmt: skip
        assert after == before
    finally:
        watched.removeHandler(handler)


CLOSED_CAPTURE_SEQUENCE = [
    "tests/interactive/test_neural_sessions.py::test_fast_rouge_l_equals_rouge_score",
    "tests/serve/test_server.py::test_command_line_errors_are_one_line",
    "tests/serve/test_server.py::test_connections_without_headers_are_closed[h11]",
]
"""Issue 31's reproduction: rouge-score imports absl, whose handler holds the ``sys.stderr`` of
import time (pytest's capture file on a worker); a ``dictConfig`` from the serve tests closed
it, and every later test of the worker failed with "I/O operation on closed file"."""


@pytest.mark.slow
def test_the_closed_capture_sequence_passes() -> None:
    """The sequence that closed pytest's capture file, on one xdist worker, in a fresh pytest
    (no plugin or conftest workaround restarts the capture any more)."""
    root = Path(__file__).resolve().parents[2]
    quiet = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    env = {**os.environ, **quiet, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
               "-n", "1", "-q", *CLOSED_CAPTURE_SEQUENCE]  # fmt: skip
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert "3 passed" in done.stdout and "closed file" not in done.stdout, tail


@pytest.mark.parametrize("parser", ["h11", "httptools"])
def test_connections_without_headers_are_closed(service, parser: str) -> None:
    import uvicorn

    from probrank.serve.app import create_app, header_timeout_protocol
    from probrank.serve.server import bind

    if parser == "httptools":
        pytest.importorskip("httptools")
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(service), log_config=None, log_level="warning", lifespan="off",
        http=header_timeout_protocol(0.5, parser), timeout_keep_alive=5,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow = socket.create_connection(("127.0.0.1", port), timeout=10)
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        started = time.monotonic()
        for half_open in (silent, slow):
            assert half_open.recv(1024) == b""  # closed by the server
            half_open.close()
        assert time.monotonic() - started < 5
        # a whole request is answered, and the connection is kept for the next one
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/health").text == "ok"
            time.sleep(1.0)  # longer than the header timeout, shorter than keep-alive
            assert client.get("/health").text == "ok"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def test_the_http_parser_is_httptools_when_installed() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from probrank.serve.http import header_timeout_protocol, http_protocol

    assert http_protocol("h11") is H11Protocol
    try:
        import httptools  # noqa: F401
    except ImportError:
        assert http_protocol() is H11Protocol
        with pytest.raises(ImportError):
            http_protocol("httptools")
    else:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        assert http_protocol() is HttpToolsProtocol
    assert issubclass(header_timeout_protocol(1.0), http_protocol())
    with pytest.raises(ValueError, match="unknown HTTP protocol"):
        http_protocol("h2")


def test_the_preparation_reads_the_serve_settings() -> None:
    """Issue 31: ``PrepareOptions`` (a second, untyped copy of the serve options) is gone; the
    preparation reads :class:`ServeSettings`, the one settings object of ``probrank serve``."""
    import inspect

    from probrank.serve import startup
    from probrank.serve.server import ServeSettings

    assert not hasattr(startup, "PrepareOptions")
    annotation = inspect.signature(startup.prepare).parameters["options"].annotation
    assert annotation in ("ServeSettings", ServeSettings)
