"""Time ``probrank eval`` as a whole process against python + ir-measures and trec_eval 10.0.

The command timed is the one a user types in a shell loop::

    probrank eval QRELS RUN -m AP -m nDCG@10 -m P@10

and, on the same plain-text files: ``python -c`` reading them with ir-measures and computing the
same three measures through its pytrec_eval backend (the baseline), and the trec_eval 10.0
binary (``-m map -m ndcg_cut.10 -m P.10``) when it can be built from ``../shared/reference``.
Each is a fresh process (interpreter start, imports, reading, evaluation), timed best of
``--repeats``, one thread each. The files are three Robust03 runs (100 topics x 1,000
documents, with many tied scores) and a generated run of 2,000 topics x 1,000 documents with
its qrels (250 judged documents per topic), written to a temporary folder. Prints a table and
a JSON line; ratios are against python + ir-measures.

    .venv/bin/python benchmarks/eval_speed.py [--repeats 5] [--topics 2000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from probrank.data import shared_data_dir
from probrank.evaluation.trec_eval.reference import build_reference
from probrank.exceptions import InputDataError

ROBUST_RUNS = ("input.pircRBa1", "input.oce03noXbmD", "input.MU03rob01")
IR_MEASURES = """
import json, sys, ir_measures
from ir_measures import AP, P, nDCG
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
values = ir_measures.calc_aggregate([AP, nDCG @ 10, P @ 10], qrels, run)
print(json.dumps({str(k): v for k, v in values.items()}))
"""
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def generate(folder: Path, topics: int, depth: int = 1000, judged: int = 250) -> tuple[Path, Path]:
    """A run of ``topics x depth`` documents with normal scores and its qrels (grades 0-2)."""
    rng = np.random.default_rng(0)
    run_path, qrels_path = folder / f"run_{topics}.txt", folder / f"qrels_{topics}.txt"
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for topic in range(1, topics + 1):
            docs = rng.choice(100_000, size=depth + judged, replace=False)
            scores = np.sort(rng.normal(size=depth))[::-1].tolist()
            run.writelines(
                f"{topic} Q0 D{doc} {rank} {score!r} generated\n"
                for rank, (doc, score) in enumerate(
                    zip(docs[:depth].tolist(), scores, strict=True), 1
                )
            )
            pool = np.concatenate([docs[: judged // 2], docs[depth : depth + judged // 2]])
            grades = rng.choice(3, size=pool.size, p=[0.7, 0.2, 0.1]).tolist()
            qrels.writelines(
                f"{topic} 0 D{doc} {grade}\n"
                for doc, grade in zip(pool.tolist(), grades, strict=True)
            )
    return qrels_path, run_path


def best_of(command: list[str], repeats: int) -> tuple[float, str]:
    """Best wall-clock time of ``command`` over ``repeats`` runs, and its output."""
    best, out = float("inf"), ""
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=ENV, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[:4])} ... failed: {done.stderr.strip()}")
        best, out = min(best, elapsed), done.stdout
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--topics", type=int, default=2000, help="topics of the generated run")
    args = parser.parse_args()
    try:
        import ir_measures  # noqa: F401
    except ImportError:
        raise SystemExit("ir-measures is the baseline: pip install -e '.[bench]'") from None
    try:
        binary: Path | None = build_reference(Path.home() / ".cache" / "probrank-trec_eval")
    except InputDataError as exc:
        print(f"(trec_eval not timed: {exc})")
        binary = None

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        robust = shared_data_dir("fusion", "robust03")
        files = []
        for name in ROBUST_RUNS:
            plain = folder / name
            plain.write_bytes(gzip.decompress((robust / "runs" / f"{name}.gz").read_bytes()))
            files.append((f"Robust03 {name.removeprefix('input.')}", robust / "qrels.txt", plain))
        qrels, run = generate(folder, args.topics)
        files.append((f"generated {args.topics} x 1000", qrels, run))
        for label, qrels, run in files:
            ours = [sys.executable, "-m", "probrank.cli", "eval", str(qrels), str(run)]
            ours += ["-m", "AP", "-m", "nDCG@10", "-m", "P@10", "--json"]
            row: dict[str, Any] = {"file": label}
            row["probrank eval"], out = best_of(ours, args.repeats)
            values = next(iter(json.loads(out).values()))
            baseline = [sys.executable, "-c", IR_MEASURES, str(qrels), str(run)]
            row["python + ir-measures"], theirs = best_of(baseline, args.repeats)
            row["AP"], row["AP (ir-measures)"] = values["AP"], json.loads(theirs)["AP"]
            if binary is not None:
                trec = [str(binary), "-m", "map", "-m", "ndcg_cut.10", "-m", "P.10"]
                row["trec_eval 10.0"], _ = best_of([*trec, str(qrels), str(run)], args.repeats)
            rows.append(row)

    tools = ["probrank eval", "python + ir-measures", "trec_eval 10.0"]
    print(f"Whole-process time, best of {args.repeats}: seconds (ratio to python + ir-measures)")
    print(f"{'file':<30}" + "".join(f"{tool:>26}" for tool in tools))
    for row in rows:
        base = row["python + ir-measures"]
        cells = [
            f"{row[tool]:.3f} ({row[tool] / base:.2f}x)" if tool in row else "-" for tool in tools
        ]
        print(f"{row['file']!s:<30}" + "".join(f"{cell:>26}" for cell in cells))
    ratios = [r["probrank eval"] / r["python + ir-measures"] for r in rows]
    print(f"probrank eval / python + ir-measures: at most {max(ratios):.2f}x (goal: <= 1.5x)")
    print(json.dumps({"repeats": args.repeats, "rows": rows, "max_ratio": max(ratios)}))


if __name__ == "__main__":
    main()
