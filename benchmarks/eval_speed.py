"""Time ``probrank eval`` as a whole process against the trec_eval 10.0 binary.

The commands timed are the ones a user types::

    probrank eval QRELS RUN... -m map -m P.10 -m ndcg_cut.10
    trec_eval -m map -m P.10 -m ndcg_cut.10 QRELS RUN        # once per run

each a fresh process (interpreter start, imports, reading, evaluation, exit), one thread each
(``--threads``), on the same plain-text files (trec_eval 10 does not read gzip, so the runs are
gunzipped into a temporary folder first). Three workloads:

* ``DL 2021 x 63``: the 63 TREC DL 2021 passage runs of ``../shared/data/pooling`` (53 topics,
  top 100): one ``probrank eval`` call with the 63 files against 63 trec_eval calls;
* ``one run``: one generated run of 50 topics x 1,000 documents (TREC-COVID-sized);
* ``track 129 x 50 x 1000``: 129 generated runs of 50 topics x 1,000 documents (a TREC ad hoc
  track, about 250 MB), one ``probrank eval`` call against 129 trec_eval calls.

The tools run alternately, ``--repeats`` times each (the track half as often), and the table
gives median wall-clock seconds and the ratio ``probrank / trec_eval`` of the medians (goals:
<= 0.5, <= 3 and < 1), and the same ratio of CPU seconds (user + system of the processes),
which a machine shared with other jobs disturbs less, and the median minor page faults of each
tool's processes (``probrank`` / ``trec_eval``). The values printed by both are compared
(4 decimals) before anything is timed. The "import floor" is ``python -c "import numpy,
pyarrow, pyarrow.csv"``: what any Python reader of these files pays before it reads a byte.
Prints a table and a JSON line.

    .venv/bin/python benchmarks/eval_speed.py [--repeats 5] [--track-runs 129]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from probrank.data import shared_data_dir
from probrank.evaluation.trec_eval.reference import build_reference, parse_output

MEASURES = ("map", "P.10", "ndcg_cut.10")
ENV = {
    **{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""The environment of every timed process. Python may cache the bytecode of probrank's modules
(``PYTHONDONTWRITEBYTECODE`` is dropped: the untimed first call writes it, as installing a
package does), else every call would compile them again, which an installed probrank never
does."""
FLOOR = "import numpy, pyarrow, pyarrow.csv"
"""What any Python reader of these files pays before reading a byte (the "import floor")."""
GOALS = {"DL 2021 x 63": 0.5, "one run 50 x 1000": 3.0, "track": 1.0}


def generate_run(path: Path, rng: np.random.Generator, topics: int, depth: int) -> None:
    """A run of ``topics x depth`` documents (ids from 100,000) with normal scores."""
    lines: list[str] = []
    for topic in range(1, topics + 1):
        docs = rng.choice(100_000, size=depth, replace=False).tolist()
        scores = np.sort(rng.normal(size=depth))[::-1].tolist()
        lines.extend(
            f"{topic} Q0 D{doc} {rank} {score!r} generated"
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), 1)
        )
    path.write_text("\n".join(lines) + "\n")


def generate_qrels(path: Path, rng: np.random.Generator, topics: int, judged: int = 250) -> None:
    """Qrels of ``judged`` documents per topic, grades 0-2 (30% relevant)."""
    lines: list[str] = []
    for topic in range(1, topics + 1):
        docs = rng.choice(100_000, size=judged, replace=False).tolist()
        grades = rng.choice(3, size=judged, p=[0.7, 0.2, 0.1]).tolist()
        lines.extend(f"{topic} 0 D{d} {g}" for d, g in zip(docs, grades, strict=True))
    path.write_text("\n".join(lines) + "\n")


def probrank_command(qrels: Path, runs: list[Path], threads: int) -> list[str]:
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    return [sys.executable, "-m", "probrank.cli", "--threads", str(threads), "eval",
            str(qrels), *map(str, runs), *measures]  # fmt: skip


def trec_eval_commands(binary: Path, qrels: Path, runs: list[Path]) -> list[list[str]]:
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    return [[str(binary), *measures, str(qrels), str(run)] for run in runs]


def run_all(commands: list[list[str]]) -> tuple[float, float, list[str], int]:
    """Wall-clock and CPU (user + system) seconds to run ``commands`` one after the other,
    their outputs, and their minor page faults (pages the kernel mapped in, zeroed, on first
    touch)."""
    outputs = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, env=ENV, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[:6])} ... failed: {done.stderr.strip()}")
        outputs.append(done.stdout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, outputs, after.ru_minflt - before.ru_minflt


def check_agreement(ours: str, theirs: list[str]) -> None:
    """The ``all`` values of both tools agree to the 4 printed decimals."""
    blocks = [b for b in ours.split("runid") if b.strip()]
    if len(blocks) != len(theirs):
        raise SystemExit(f"probrank printed {len(blocks)} runs, trec_eval {len(theirs)}")
    for block, text in zip(blocks, theirs, strict=True):
        mine, reference = parse_output("runid" + block)["all"], parse_output(text)["all"]
        for name in ("map", "P_10", "ndcg_cut_10"):
            if mine[name] != reference[name]:
                raise SystemExit(f"{name}: probrank {mine[name]} != trec_eval {reference[name]}")


def measure(
    label: str, binary: Path, qrels: Path, runs: list[Path], repeats: int, threads: int
) -> dict[str, Any]:
    """Median whole-process seconds of both tools on ``runs`` (alternating, ``repeats`` each)."""
    ours = [probrank_command(qrels, runs, threads)]
    theirs = trec_eval_commands(binary, qrels, runs)
    _, _, (printed,), _ = run_all(ours)
    _, _, reference, _ = run_all(theirs)
    check_agreement(printed, reference)
    wall: dict[str, list[float]] = {"probrank eval": [], "trec_eval 10.0": []}
    cpu: dict[str, list[float]] = {"probrank eval": [], "trec_eval 10.0": []}
    faults: dict[str, list[int]] = {"probrank eval": [], "trec_eval 10.0": []}
    for _ in range(repeats):
        for tool, commands in (("probrank eval", ours), ("trec_eval 10.0", theirs)):
            seconds, used, _, faulted = run_all(commands)
            wall[tool].append(seconds)
            cpu[tool].append(used)
            faults[tool].append(faulted)
    row: dict[str, Any] = {"workload": label, "runs": len(runs)}
    row.update({tool: statistics.median(values) for tool, values in wall.items()})
    row.update({f"{tool} CPU": statistics.median(values) for tool, values in cpu.items()})
    row.update({f"{tool} faults": statistics.median(v) for tool, v in faults.items()})
    row["ratio"] = row["probrank eval"] / row["trec_eval 10.0"]
    row["CPU ratio"] = row["probrank eval CPU"] / row["trec_eval 10.0 CPU"]
    row["goal"] = GOALS["track" if label.startswith("track") else label]
    strict = row["goal"] == 1.0
    row["met"] = row["ratio"] < row["goal"] if strict else row["ratio"] <= row["goal"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--track-runs", type=int, default=129, help="runs of the generated track")
    parser.add_argument("--threads", type=int, default=1, help="probrank eval --threads")
    args = parser.parse_args()
    binary = build_reference(Path.home() / ".cache" / "probrank-trec_eval")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dl = shared_data_dir("pooling", "trec-dl-2021-passage")
        (folder / "dl").mkdir()
        dl_runs = []
        for source in sorted((dl / "runs").glob("input.*.gz")):
            plain = folder / "dl" / source.name.removesuffix(".gz")
            plain.write_bytes(gzip.decompress(source.read_bytes()))
            dl_runs.append(plain)
        rows.append(measure("DL 2021 x 63", binary, dl / "qrels.txt", dl_runs, args.repeats,
                            args.threads))  # fmt: skip
        rng = np.random.default_rng(0)
        qrels = folder / "qrels_50.txt"
        generate_qrels(qrels, rng, 50)
        (folder / "track").mkdir()
        track = [folder / "track" / f"run{i:03d}" for i in range(args.track_runs)]
        for path in track:
            generate_run(path, rng, 50, 1000)
        rows.append(measure("one run 50 x 1000", binary, qrels, track[:1], args.repeats,
                            args.threads))  # fmt: skip
        floor = [run_all([[sys.executable, "-c", FLOOR]]) for _ in range(args.repeats)]
        rows[-1]["import floor"] = statistics.median(wall for wall, _, _, _ in floor)
        rows[-1]["import floor CPU"] = statistics.median(cpu for _, cpu, _, _ in floor)
        rows[-1]["import floor faults"] = statistics.median(f for *_, f in floor)
        size = sum(p.stat().st_size for p in track) / 2**20
        label = f"track {len(track)} x 50 x 1000 ({size:.0f} MB)"
        rows.append(measure(label, binary, qrels, track, max(1, args.repeats // 2), args.threads))

    print(f"Whole-process time, median of {args.repeats} (track: {max(1, args.repeats // 2)}), "
          f"seconds; probrank eval --threads {args.threads}")  # fmt: skip
    print(
        f"{'workload':<34}{'probrank eval':>15}{'trec_eval 10.0':>16}{'ratio':>8}"
        f"{'CPU ratio':>11}{'page faults':>20}{'goal':>8}"
    )
    for row in rows:
        goal = f"<{row['goal']:g}" if row["goal"] == 1.0 else f"<={row['goal']:g}"
        print(
            f"{row['workload']:<34}{row['probrank eval']:>15.3f}{row['trec_eval 10.0']:>16.3f}"
            f"{row['ratio']:>7.2f}x{row['CPU ratio']:>10.2f}x"
            f"{row['probrank eval faults']:>11.0f}/{row['trec_eval 10.0 faults']:<8.0f}{goal:>8}"
            + ("" if row["met"] else "  (not met)")
        )
    one = rows[1]
    print(
        f"import floor (python -c '{FLOOR}'): {one['import floor']:.3f} s, "
        f"{one['import floor'] / one['trec_eval 10.0']:.2f}x one trec_eval run "
        f"(CPU {one['import floor CPU'] / one['trec_eval 10.0 CPU']:.2f}x; "
        f"{one['import floor faults']:.0f} page faults)"
    )
    print(json.dumps({"repeats": args.repeats, "threads": args.threads, "rows": rows}))


if __name__ == "__main__":
    main()
