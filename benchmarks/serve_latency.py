"""Time a judgement round of ``probrank serve``: store (SQLite commit, fsynced) + posterior
update + next pair, with the last-layer Laplace posterior and EI pair selection.

Four measurements in one process, on a temporary database (WAL, ``synchronous=FULL``, as
served), each round timed on its own:

* ``session``: the bare ``InteractiveSession`` round (``record`` + ``next_pair``), nothing
  stored: the baseline of the ratio column;
* ``service``: ``JudgingService.submit`` (checks, commit, update, next pair, the confidence in
  the top answer): the round the issue's target is about (p95 < 100 ms at 45 candidates);
* ``http``: the same through uvicorn on loopback (a server thread), one annotator posting the
  form and reading the JSON acknowledgement with the next pair;
* ``http x20``: 20 annotators posting at once (one question each), each round's wall time.

``--data synthetic`` (default): questions of ``--candidates`` (45) random 1,536-wide features
and a random network of the card's shape (timing does not depend on trained weights).
``--data liveqa-med``: the LiveQA-Med question with the most candidates (42) with MiniLM
features and the cached MEDIQA warm start, as ``probrank serve --data liveqa-med`` builds them
(``http x20``: 20 annotators on that question).

    .venv/bin/python benchmarks/serve_latency.py [--rounds 200] [--json serve_latency.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
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
from probrank.serve.judging import JudgingService, Submission
from probrank.serve.project import Project
from probrank.serve.store import Choice, JudgementStore

WIDTH = 1536
TARGET_MS = 100.0


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


def _summary(name: str, seconds: list[float]) -> dict[str, Any]:
    ordered = sorted(seconds)
    return {
        "mode": name,
        "rounds": len(ordered),
        "median_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
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


def _http_rounds(base: str, token: str, annotator: str, qid: str, rounds: int) -> list[float]:
    headers = {"Accept": "application/json"}
    seconds = []
    with httpx.Client(timeout=60.0) as client:
        url = f"{base}/judge/{qid}?token={token}&annotator={annotator}"
        state = client.get(url, headers=headers).json()["state"]
        for number in range(rounds):
            form = {
                "annotator": annotator,
                "round": str(state["round"]),
                "left": str(state["pair"][0]),
                "right": str(state["pair"][1]),
                "jid": uuid.uuid4().hex,
                "choice": _choice(number).value,
            }
            start = time.perf_counter()
            response = client.post(f"{base}/judge/{qid}?token={token}", data=form, headers=headers)
            seconds.append(time.perf_counter() - start)
            response.raise_for_status()
            state = response.json()["state"]
    return seconds


def _serve_in_thread(service: JudgingService) -> tuple[Any, threading.Thread, str]:
    import uvicorn

    from probrank.serve.server import bind

    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        create_app(service), log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    host, port = sock.getsockname()[:2]
    return server, thread, f"http://{host}:{port}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["synthetic", "liveqa-med"], default="synthetic")
    parser.add_argument("--candidates", type=int, default=45, help="synthetic questions' size")
    parser.add_argument("--rounds", type=int, default=200, help="rounds per measurement")
    parser.add_argument("--annotators", type=int, default=20, help="concurrent annotators")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (serve: 1)")
    parser.add_argument("--json", default=None, help="also write the JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.data == "synthetic":
        lists, features, ranker = _synthetic(args.candidates, args.annotators + 2)
    else:
        lists, features, ranker = _liveqa()
    with tempfile.TemporaryDirectory() as folder:
        store = JudgementStore(Path(folder) / "bench.sqlite")
        project = Project(lists, ranker, source=args.data, features=features)
        service = JudgingService(project, store)
        qids = [item.qid for item in lists]
        n = len(lists[0])
        rounds = min(args.rounds, n * (n - 1) // 2)
        _session_rounds(project, qids[0], 3)  # warm-up: first calls allocate
        rows = [_summary("session", _session_rounds(project, qids[0], rounds))]
        rows.append(_summary("service", _service_rounds(service, qids[0], rounds)))
        server, thread, base = _serve_in_thread(service)
        try:
            token = store.token
            second = qids[1] if len(qids) > 1 else qids[0]
            rows.append(_summary("http", _http_rounds(base, token, "one", second, rounds)))
            per_annotator = max(1, rounds // 4)
            results: list[list[float]] = [[] for _ in range(args.annotators)]

            def work(k: int) -> None:
                qid = qids[(k + 2) % len(qids)]
                results[k] = _http_rounds(base, token, f"a{k}", qid, per_annotator)

            workers = [threading.Thread(target=work, args=(k,)) for k in range(args.annotators)]
            start = time.perf_counter()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            wall = time.perf_counter() - start
            together = [s for r in results for s in r]
            rows.append(_summary(f"http x{args.annotators}", together))
            rows[-1]["judgements_per_s"] = len(together) / wall
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            store.close()
    base_ms = rows[0]["median_ms"]
    for row in rows:
        row["ratio"] = row["median_ms"] / base_ms
    title = f"judgement round, laplace + ei, {n} candidates ({args.data}), {args.threads} thread"
    print(title)
    print(f"{'mode':<10} {'rounds':>6} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'ratio':>6}")
    for row in rows:
        print(
            f"{row['mode']:<10} {row['rounds']:>6} {row['median_ms']:>10.1f} "
            f"{row['p95_ms']:>8.1f} {row['max_ms']:>8.1f} {row['ratio']:>6.2f}"
        )
    service_p95 = next(r["p95_ms"] for r in rows if r["mode"] == "service")
    met = service_p95 < TARGET_MS
    print(
        f"p95 of a judgement round (service): {service_p95:.1f} ms, target < {TARGET_MS:.0f} ms: "
        f"{'met' if met else 'NOT met'}; {rows[-1]['judgements_per_s']:.0f} judgements/s with "
        f"{args.annotators} annotators over HTTP"
    )
    payload = {
        "data": args.data,
        "candidates": n,
        "posterior": "laplace",
        "strategy": "ei",
        "threads": args.threads,
        "rows": rows,
        "target_ms": TARGET_MS,
        "target_met": met,
    }
    text = json.dumps(payload, indent=2)
    print(text)
    if args.json:
        write_text_atomically(args.json, text + "\n")


if __name__ == "__main__":
    main()
