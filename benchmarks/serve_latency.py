"""Time a judgement round of ``probrank serve``: store (SQLite commit, fsynced) + posterior
update + next pair, with the last-layer Laplace posterior and EI pair selection.

Four measurements in one process, on a temporary database (WAL, ``synchronous=FULL``, as
served), the start-up's objects frozen out of the garbage collector as ``probrank serve``
freezes them once prepared (:mod:`probrank.serve.heap`), each round timed on its own:

* ``session``: the bare ``InteractiveSession`` round (``record`` + ``next_pair``), nothing
  stored: the baseline of the ratio column;
* ``service``: ``JudgingService.submit`` (checks, commit, update, next pair, the confidence in
  the top answer): the round the issue's target is about (p95 < 100 ms at 45 candidates);
* ``http``: the same through uvicorn on loopback (a server thread), one annotator posting the
  form and reading the JSON acknowledgement with the next pair;
* ``http xN``: N annotators (``--annotators 20 50``) posting at once over HTTP, each with
  their own link, each round's wall time (p50 / p95 / p99) and the throughput; afterwards
  every acknowledged judgement must be in the database exactly once, and no request may fail.
  The annotators' clients run in another process (``--clients process``, the default: like
  browsers, their Python does not share the server's GIL; the server's and the clients' CPU
  milliseconds per judgement are printed too: both share this machine's cores) or as threads
  of this one (``--clients threads``, as before).
  The goal at 20 annotators: p95 < 150 ms and at most 3x the p50, no error, each
  acknowledged judgement stored once. The load average is printed with the table: the
  clients share this machine's cores with the server, and so does anything else running.

``--scale`` measures the rest of issue 25 instead (:func:`_scale`): the seconds from
``probrank serve --data liveqa-med`` to its printed address in a folder without any cache; the
peak RSS while 50 annotators open all 78 questions of 45 candidates (sessions capped at the
default 256); a restart over 10,000 stored judgements (seconds to the first answered request,
with the replay check); ``/export.jsonl``, ``/export.csv`` and ``/admin`` over HTTP on those
10,000 rows.

``--data synthetic`` (default): questions of ``--candidates`` (45) random 1,536-wide features
and a random network of the card's shape (timing does not depend on trained weights).
``--data liveqa-med``: the LiveQA-Med question with the most candidates (42) with MiniLM
features and the cached MEDIQA warm start, as ``probrank serve --data liveqa-med`` builds them
(``http x20``: 20 annotators on that question).

    .venv/bin/python benchmarks/serve_latency.py [--rounds 200] [--annotators 20 50]
        [--clients process|threads] [--json serve_latency.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import torch

from probrank._files import write_text_atomically
from probrank.data.candidates import CandidateList
from probrank.models.interactive import InteractiveRanker, InteractiveRankerSettings, WarmStart
from probrank.models.interactive.warmstart import new_net
from probrank.serve.app import create_app
from probrank.serve.heap import freeze_startup_objects, heap_thawed_on_exit
from probrank.serve.http import http_protocol
from probrank.serve.judging import JudgingService, Submission
from probrank.serve.project import Project
from probrank.serve.store import Choice, JudgementStore

WIDTH = 1536
TARGET_MS = 100.0
HTTP_TARGET_MS = 150.0
FAIR_RATIO = 3.0


def _synthetic(n: int, count: int) -> tuple[list[CandidateList], dict[str, torch.Tensor], Any]:
    settings = InteractiveRankerSettings()
    net = new_net(WIDTH, settings.warm_start)
    ranker = InteractiveRanker.from_warm_start(WarmStart(net=net, members=[net]), settings)
    generator = torch.Generator().manual_seed(0)
    lists, features = [], {}
    for k in range(count):
        qid = f"s{k}"
        ids = [f"c{i}" for i in range(n)]
        lists.append(CandidateList(qid, f"question {k}", ids, [f"answer {i}" for i in ids]))
        h = WIDTH // 4
        u = torch.randn(h, generator=generator).expand(n, h)
        v = u + torch.randn(n, h, generator=generator)
        features[qid] = torch.cat([u, v, u * v, (u - v).abs()], dim=-1)
    return lists, features, ranker


def _liveqa() -> tuple[list[CandidateList], dict[str, torch.Tensor], Any]:
    from probrank.serve.sources import build_ranker, cached_encoder, load_questions

    questions, _ = load_questions("liveqa-med")
    biggest = max(questions, key=len)
    encoder = cached_encoder(progress=False)
    ranker = build_ranker(posterior="laplace", encoder=encoder)
    with torch.no_grad():
        x = encoder.encode_pairs([biggest.query] * len(biggest), biggest.candidates)
    return [biggest], {biggest.qid: x.float().cpu()}, ranker


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(name: str, seconds: list[float]) -> dict[str, Any]:
    ordered = sorted(seconds)
    return {
        "mode": name,
        "rounds": len(ordered),
        "median_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * _quantile(ordered, 0.95),
        "p99_ms": 1000 * _quantile(ordered, 0.99),
        "max_ms": 1000 * ordered[-1],
    }


def _choice(number: int) -> Choice:
    return (Choice.LEFT, Choice.RIGHT, Choice.LEFT, Choice.TIE)[number % 4]


def _session_rounds(project: Project, qid: str, rounds: int) -> list[float]:
    item = project.question(qid)
    session = project.ranker.session(
        item.query, item.candidates, seed=0, features=project.features(qid)
    )
    session.next_pair()
    seconds = []
    for number in range(rounds):
        left, right = session.next_pair()
        start = time.perf_counter()
        choice = _choice(number)
        if choice is Choice.TIE:
            session.skip()
        else:
            session.record(*((left, right) if choice is Choice.LEFT else (right, left)))
        session.next_pair()
        seconds.append(time.perf_counter() - start)
    return seconds


def _service_rounds(service: JudgingService, qid: str, rounds: int) -> list[float]:
    state = service.state("bench", qid)
    seconds = []
    for number in range(rounds):
        assert state.pair is not None
        submission = Submission(
            uuid.uuid4().hex, "bench", qid, state.round, *state.pair, _choice(number)
        )
        start = time.perf_counter()
        state = service.submit(submission).state
        seconds.append(time.perf_counter() - start)
    return seconds


def _http_rounds(
    base: str, token: str, qid: str, rounds: int, acknowledged: list[str] | None = None
) -> list[float]:
    headers = {"Accept": "application/json"}
    seconds = []
    with httpx.Client(timeout=60.0) as client:
        url = f"{base}/judge/{qid}?token={token}"
        state = client.get(url, headers=headers).json()["state"]
        for number in range(rounds):
            if state["pair"] is None:
                break
            form = {
                "round": str(state["round"]),
                "left": str(state["pair"][0]),
                "right": str(state["pair"][1]),
                "jid": uuid.uuid4().hex,
                "choice": _choice(number).value,
            }
            start = time.perf_counter()
            response = client.post(url, data=form, headers=headers)
            seconds.append(time.perf_counter() - start)
            response.raise_for_status()
            if acknowledged is not None:
                acknowledged.append(form["jid"])
            state = response.json()["state"]
    return seconds


def _annotators(base: str, links: list[tuple[str, str]], rounds: int) -> dict[str, Any]:
    """Each ``(qid, token)`` link judging ``rounds`` times back to back on a thread of its
    own, all at once: each one's round times and acknowledged ids, the errors, the wall
    time."""
    results: list[list[float]] = [[] for _ in links]
    acknowledged: list[list[str]] = [[] for _ in links]
    errors: list[str] = []

    def work(k: int) -> None:
        try:
            qid, token = links[k]
            results[k] = _http_rounds(base, token, qid, rounds, acknowledged[k])
        except Exception as exc:  # counted and reported: the run must have none
            errors.append(f"{type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=work, args=(k,)) for k in range(len(links))]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - start
    return {"seconds": results, "acknowledged": acknowledged, "errors": errors, "wall": wall}


def _client_process(base: str, links: list[tuple[str, str]], rounds: int) -> dict[str, Any]:
    """:func:`_annotators` in a process of its own (``--client``), as browsers are: the
    clients' Python does not share the server's GIL."""
    spec = json.dumps({"base": base, "links": links, "rounds": rounds})
    command = [sys.executable, str(Path(__file__).resolve()), "--client"]
    done = subprocess.run(command, input=spec, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the client process failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _concurrent(
    base: str,
    store: JudgementStore,
    qids: list[str],
    annotators: int,
    rounds: int,
    *,
    process: bool = True,
) -> dict[str, Any]:
    """``annotators`` annotators with their own links posting ``rounds`` judgements each at
    once (from another process unless ``process`` is False); every acknowledged judgement is
    then looked up in the database. With another process, the server's CPU seconds per
    judgement are measured too (this process's CPU time: the server's alone)."""
    tokens = [store.add_annotator(f"x{annotators}-{k}") for k in range(annotators)]
    links = [(qids[(k + 2) % len(qids)], tokens[k]) for k in range(annotators)]
    cpu = time.process_time()
    run = _client_process(base, links, rounds) if process else _annotators(base, links, rounds)
    cpu = time.process_time() - cpu
    together = [s for r in run["seconds"] for s in r]
    row = _summary(f"http x{annotators}", together)
    row["clients"] = "process" if process else "threads"
    row["judgements_per_s"] = len(together) / run["wall"]
    row["server_cpu_ms"] = 1000 * cpu / len(together) if process and together else None
    row["client_cpu_ms"] = 1000 * run["cpu"] / len(together) if process and together else None
    row["errors"] = len(run["errors"])
    ids = [jid for k in run["acknowledged"] for jid in k]
    stored = [j.id for j in store.judgements() if j.annotator.startswith(f"x{annotators}-")]
    row["acknowledged"] = len(ids)
    row["stored_once"] = sorted(stored) == sorted(ids) and len(set(stored)) == len(stored)
    if run["errors"]:
        print(f"http x{annotators}: {len(run['errors'])} errors, first: {run['errors'][0]}")
    return row


def _serve_in_thread(service: JudgingService) -> tuple[Any, threading.Thread, str]:
    """uvicorn in a thread as ``probrank serve`` runs it (:func:`uvicorn_server`: its HTTP
    protocol, header-read timeout and keep-alive)."""
    from probrank.serve.server import bind, uvicorn_server

    sock = bind("127.0.0.1", 0)
    server = uvicorn_server(create_app(service))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    host, port = sock.getsockname()[:2]
    return server, thread, f"http://{host}:{port}"


def _rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def _startup_seconds() -> dict[str, float]:
    """``probrank serve --data liveqa-med`` in an empty folder (no cache): seconds to the
    printed address and to the first answered request; then SIGTERM."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        command = [sys.executable, "-m", "probrank.cli", "serve", "--data", "liveqa-med",
                   "--port", "0", "--db", str(Path(folder) / "j.sqlite")]  # fmt: skip
        start = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        url = ""
        assert process.stdout is not None
        for line in process.stdout:
            if "probrank serve: open " in line:
                url = line.split("open ", 1)[1].strip()
                break
        printed = time.perf_counter() - start
        answered = float("nan")
        if url:
            page = httpx.get(url, timeout=60)
            answered = time.perf_counter() - start
            print(f"start-up: first page status {page.status_code} ({len(page.text)} bytes)")
        process.terminate()
        process.wait(timeout=60)
    return {"address_s": printed, "first_page_s": answered}


def _scale(json_path: str | None) -> None:
    """The measurements of ``--scale`` (see the module docstring)."""
    torch.set_num_threads(1)
    results: dict[str, Any] = {"startup": _startup_seconds()}
    print(f"start-up: address after {results['startup']['address_s']:.2f} s, first page "
          f"after {results['startup']['first_page_s']:.2f} s")  # fmt: skip
    lists, features, ranker = _synthetic(45, 78)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "scale.sqlite"
        store = JudgementStore(db)
        project = Project(lists, ranker, source="synthetic", features=features)
        service = JudgingService(project, store)
        before = peak = _rss_mb()
        start = time.perf_counter()
        for a in range(50):
            for item in lists:
                service.state(f"a{a}", item.qid)
            peak = max(peak, _rss_mb())
        opened = time.perf_counter() - start
        results["memory"] = {
            "sessions_opened": 50 * len(lists), "kept": service.sessions(),
            "cap": service.max_sessions, "rss_before_mb": before, "peak_rss_mb": peak,
            "seconds": opened,
        }  # fmt: skip
        print(f"memory: 50 annotators x {len(lists)} questions opened in {opened:.0f} s, "
              f"{service.sessions()} sessions kept (cap {service.max_sessions}); RSS "
              f"{before:.0f} MB before, peak {peak:.0f} MB")  # fmt: skip
        store._db.execute("PRAGMA synchronous=OFF")  # making the 10,000 rows only
        start = time.perf_counter()
        made = 0
        for a in range(50):
            for item in lists[:40]:
                state = service.state(f"a{a}", item.qid)
                for number in range(5):
                    assert state.pair is not None
                    submission = Submission(
                        uuid.uuid4().hex, f"a{a}", item.qid, state.round, *state.pair,
                        _choice(number),
                    )  # fmt: skip
                    state = service.submit(submission).state
                    made += 1
        expected = service.state("a49", lists[39].qid)
        print(f"restart: {made} judgements stored in {time.perf_counter() - start:.0f} s")
        store.close()
        start = time.perf_counter()
        store = JudgementStore(db)
        service = JudgingService(project, store)
        first = service.state("a49", lists[39].qid)  # rebuilt from the database, checked
        restart = time.perf_counter() - start
        results["restart"] = {"judgements": store.count(), "first_answer_s": restart,
                              "same_state": first == expected}  # fmt: skip
        print(f"restart over {store.count()} judgements: first state after {restart:.3f} s "
              f"(same as before the restart: {first == expected})")  # fmt: skip
        server, thread, base = _serve_in_thread(service)
        try:
            admin = store.issue_admin_token()
            timings = {}
            for path in ("/export.jsonl", "/export.csv", "/admin"):
                best = float("inf")
                for _ in range(3):
                    start = time.perf_counter()
                    response = httpx.get(f"{base}{path}?token={admin}", timeout=120)
                    response.raise_for_status()
                    best = min(best, time.perf_counter() - start)
                timings[path] = best
                print(f"{path}: {best:.3f} s ({len(response.content)} bytes), best of 3")
            results["reads_s"] = timings
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            store.close()
    text = json.dumps(results, indent=2)
    print(text)
    if json_path:
        write_text_atomically(json_path, text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["synthetic", "liveqa-med"], default="synthetic")
    parser.add_argument("--candidates", type=int, default=45, help="synthetic questions' size")
    parser.add_argument("--rounds", type=int, default=200, help="rounds per measurement")
    parser.add_argument(
        "--annotators", type=int, nargs="+", default=[20, 50], help="concurrent annotators"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (serve: 1)")
    parser.add_argument("--json", default=None, help="also write the JSON here")
    parser.add_argument("--scale", action="store_true", help="start-up, restart, RSS, exports")
    parser.add_argument("--startup", action="store_true", help="only the start-up of --scale")
    parser.add_argument(
        "--clients",
        choices=["process", "threads"],
        default="process",
        help="the concurrent annotators' clients: another process (as browsers are), or "
        "threads of this one (sharing the server's GIL)",
    )
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:  # the client process of _client_process: a JSON spec on stdin
        spec = json.load(sys.stdin)
        links = [(str(qid), str(token)) for qid, token in spec["links"]]
        cpu = time.process_time()
        result = _annotators(spec["base"], links, int(spec["rounds"]))
        result["cpu"] = time.process_time() - cpu  # the clients' CPU seconds (not imports)
        print(json.dumps(result))
        return
    if args.startup:
        seconds = _startup_seconds()
        print(f"start-up: address after {seconds['address_s']:.2f} s, first page after "
              f"{seconds['first_page_s']:.2f} s")  # fmt: skip
        return
    if args.scale:
        _scale(args.json)
        return
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    if args.data == "synthetic":
        lists, features, ranker = _synthetic(args.candidates, max(args.annotators) + 2)
    else:
        lists, features, ranker = _liveqa()
    with tempfile.TemporaryDirectory() as folder, heap_thawed_on_exit():
        store = JudgementStore(Path(folder) / "bench.sqlite")
        project = Project(lists, ranker, source=args.data, features=features)
        service = JudgingService(project, store)
        freeze_startup_objects()  # as `probrank serve` does once prepared (serve.heap)
        qids = [item.qid for item in lists]
        n = len(lists[0])
        rounds = min(args.rounds, n * (n - 1) // 2)
        _session_rounds(project, qids[0], 3)  # warm-up: first calls allocate
        rows = [_summary("session", _session_rounds(project, qids[0], rounds))]
        rows.append(_summary("service", _service_rounds(service, qids[0], rounds)))
        server, thread, base = _serve_in_thread(service)
        try:
            token = store.add_annotator("one")
            second = qids[1] if len(qids) > 1 else qids[0]
            rows.append(_summary("http", _http_rounds(base, token, second, rounds)))
            per_annotator = max(1, rounds // 4)
            for count in args.annotators:
                rows.append(
                    _concurrent(
                        base, store, qids, count, per_annotator,
                        process=args.clients == "process",
                    )
                )  # fmt: skip
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            store.close()
    protocol = "httptools" if "httptools" in http_protocol().__module__ else "h11"
    base_ms = rows[0]["median_ms"]
    for row in rows:
        row["ratio"] = row["median_ms"] / base_ms
    load = os.getloadavg()
    title = (
        f"judgement round, laplace + ei, {n} candidates ({args.data}), {args.threads} thread; "
        f"annotators' clients in {'another process' if args.clients == 'process' else 'threads'}"
        f"; HTTP parser {protocol}; load average (1 min) {load_before[0]:.2f} before, "
        f"{load[0]:.2f} after, on {os.cpu_count()} CPUs"
    )
    print(title)
    print(
        f"{'mode':<10} {'rounds':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'ratio':>6} {'judg/s':>7} {'errors':>6} {'stored once':>11} {'server CPU ms':>13} "
        f"{'client CPU ms':>13}"
    )
    for row in rows:
        cpu, client = row.get("server_cpu_ms"), row.get("client_cpu_ms")
        extra = (
            f" {row['judgements_per_s']:>7.1f} {row['errors']:>6} {row['stored_once']!s:>11}"
            f" {'-' if cpu is None else f'{cpu:.1f}':>13}"
            f" {'-' if client is None else f'{client:.1f}':>13}"
            if "errors" in row
            else ""
        )
        print(
            f"{row['mode']:<10} {row['rounds']:>6} {row['median_ms']:>8.1f} "
            f"{row['p95_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['max_ms']:>8.1f} "
            f"{row['ratio']:>6.2f}{extra}"
        )
    service_p95 = next(r["p95_ms"] for r in rows if r["mode"] == "service")
    met = service_p95 < TARGET_MS
    print(
        f"p95 of a judgement round (service): {service_p95:.1f} ms, target < {TARGET_MS:.0f} ms: "
        f"{'met' if met else 'NOT met'}"
    )
    for row in rows:
        if "errors" in row:
            goal = ""
            if row["mode"] == "http x20":
                met_http = (
                    row["p95_ms"] < HTTP_TARGET_MS
                    and row["p95_ms"] <= FAIR_RATIO * row["median_ms"]
                    and row["errors"] == 0
                    and row["stored_once"]
                )
                goal = (
                    f" (goal < {HTTP_TARGET_MS:.0f} ms and <= {FAIR_RATIO:.0f}x p50 "
                    f"{row['median_ms']:.0f} ms: {'met' if met_http else 'NOT met'})"
                )
            print(
                f"{row['mode']}: p95 {row['p95_ms']:.0f} ms{goal}, "
                f"{row['judgements_per_s']:.1f} judgements/s, {row['errors']} errors, "
                f"{row['acknowledged']} acknowledged, stored once: {row['stored_once']}"
            )
    payload = {
        "data": args.data,
        "candidates": n,
        "posterior": "laplace",
        "strategy": "ei",
        "threads": args.threads,
        "clients": args.clients,
        "http": protocol,
        "load_average_before": list(load_before),
        "load_average_after": list(load),
        "cpus": os.cpu_count(),
        "rows": rows,
        "target_ms": TARGET_MS,
        "http_target_ms": HTTP_TARGET_MS,
        "target_met": met,
    }
    text = json.dumps(payload, indent=2)
    print(text)
    if args.json:
        write_text_atomically(args.json, text + "\n")


if __name__ == "__main__":
    main()
