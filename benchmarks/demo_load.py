"""Wall time of ``probrank demo --quick`` on an idle machine and beside CPU-bound jobs.

Issue 14 measured the demo at 143-244 s instead of 11 s (the calibration section 133 s
instead of 6.5 s) on a loaded machine: OpenMP workers of torch spin while they wait for each
other, and on a core shared with another job a spinning worker takes the time of the worker it
waits for. This script runs the demo (``--quick``, and its calibration section alone) as whole
processes, once on the idle machine and once with one busy-looping process per usable CPU
beside it, for each way of sizing the threads:

- ``old``: the behaviour before ``probrank._threads``: the demo called without any thread
  setting and with the thread variables unset (torch's own default: every core, OpenMP
  workers spinning while they wait; tokenizers parallel);
- ``new``: ``probrank demo`` as it is now, default threads (the usable CPUs, idle OpenMP
  workers sleep: ``OMP_WAIT_POLICY=PASSIVE``);
- ``new --threads 1``: one thread per pool.

Every configuration runs ``--repeats`` times, round-robin (so that drift in the machine's load
hits them alike), and the median is reported. Ratios: loaded / idle per configuration, and
each configuration / ``old`` under the same load. Other jobs on a shared machine add their
own load to both columns; compare ratios within one run of this script.

    .venv/bin/python benchmarks/demo_load.py [--repeats 3] [--busy N]

Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from probrank._threads import THREAD_ENV_VARS, WAIT_POLICY_ENV, usable_cpus

OLD = """
import sys
from pathlib import Path
from probrank.demo import run_demo
sections = sys.argv[2:] or None
run_demo(output_dir=Path(sys.argv[1]), seed=0, quick=True, sections=sections)
"""
"""The demo as the old CLI ran it: no thread setting at all."""

SECTIONS = {"demo": None, "calibration": ["calibration"]}
VARIANTS = ("old", "new", "new --threads 1")


def _clean_env() -> dict[str, str]:
    """The environment without any thread setting (as a user's shell would have it)."""
    drop = {*THREAD_ENV_VARS, *WAIT_POLICY_ENV, "PROBRANK_THREADS", "TOKENIZERS_PARALLELISM"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(MPLBACKEND="Agg", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _command(variant: str, output: Path, sections: list[str] | None) -> list[str]:
    if variant == "old":
        return [sys.executable, "-c", OLD, str(output), *(sections or [])]
    command = [sys.executable, "-m", "probrank.cli", "demo", "--quick", "-o", str(output)]
    if sections:
        command += ["--sections", *sections]
    if variant.endswith("--threads 1"):
        command += ["--threads", "1"]
    return command


def _run(variant: str, sections: list[str] | None) -> float:
    with tempfile.TemporaryDirectory(prefix="demo-load-") as folder:
        start = time.perf_counter()
        subprocess.run(
            _command(variant, Path(folder) / "demo", sections),
            env=_clean_env(),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - start


@contextmanager
def _busy(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes (one per usable CPU by default) for the block."""
    workers = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], env=_clean_env())
        for _ in range(count)
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.wait()


def _measure(repeats: int, variants: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {}
    for _ in range(repeats):
        for section, names in SECTIONS.items():
            for variant in variants:
                times.setdefault(section, {}).setdefault(variant, []).append(_run(variant, names))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration")
    parser.add_argument(
        "--busy", type=int, default=usable_cpus(), help="CPU-bound processes beside (default: CPUs)"
    )
    args = parser.parse_args()
    if args.repeats < 1 or args.busy < 1:
        parser.error("--repeats and --busy must be positive")

    _run("new", ["evaluation"])  # warm up the file cache and compiled bytecode
    idle = _measure(args.repeats, VARIANTS)
    with _busy(args.busy):
        loaded = _measure(args.repeats, VARIANTS)

    rows = []
    for section in SECTIONS:
        for variant in VARIANTS:
            quiet = statistics.median(idle[section][variant])
            busy = statistics.median(loaded[section][variant])
            old_busy = statistics.median(loaded[section]["old"])
            old_quiet = statistics.median(idle[section]["old"])
            rows.append(
                {
                    "section": "demo --quick" if section == "demo" else f"{section} only",
                    "threads": variant,
                    "idle_s": round(quiet, 2),
                    "loaded_s": round(busy, 2),
                    "loaded_over_idle": round(busy / quiet, 2),
                    "idle_over_old": round(quiet / old_quiet, 2),
                    "loaded_over_old": round(busy / old_busy, 2),
                    "idle_runs": [round(t, 2) for t in idle[section][variant]],
                    "loaded_runs": [round(t, 2) for t in loaded[section][variant]],
                }
            )

    header = (
        f"{'what':<18} {'threads':<16} {'idle s':>7} {'loaded s':>9} {'loaded/idle':>12} "
        f"{'idle/old':>9} {'loaded/old':>11}"
    )
    print(
        f"probrank demo --quick, whole processes; {usable_cpus()} usable CPUs, "
        f"{args.busy} busy-loop processes beside the loaded runs, median of {args.repeats}; "
        f"Python {platform.python_version()}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['section']:<18} {row['threads']:<16} {row['idle_s']:>7.2f} "
            f"{row['loaded_s']:>9.2f} {row['loaded_over_idle']:>12.2f} "
            f"{row['idle_over_old']:>9.2f} {row['loaded_over_old']:>11.2f}"
        )
    print(
        json.dumps(
            {
                "benchmark": "demo_load",
                "cpus": usable_cpus(),
                "busy": args.busy,
                "repeats": args.repeats,
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
