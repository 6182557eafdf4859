"""The demo runner: generated collection, sections in order, ``report.md`` and ``results.json``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from probrank._files import write_text_atomically
from probrank._progress import progress_bar
from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.demo.context import DemoContext
from probrank.demo.sections import SECTIONS
from probrank.exceptions import InputDataError

__all__ = ["MAX_SEED", "run_demo"]

MAX_SEED = 2**32 - 1
"""Largest seed (numpy's legacy generator, used by some libraries, stops here)."""


def run_demo(
    output_dir: Path = Path("probrank-demo"),
    seed: int = 0,
    quick: bool = False,
    sections: Sequence[str] | None = None,
) -> Path:
    """Generate the default collection, run the sections, write ``report.md``.

    Args:
        output_dir: Report folder (created; generated runs go to ``data/`` inside).
        seed: Seed of the data generator and the models, ``0 .. 2**32 - 1``.
        quick: Smallest sizes (used by the tests).
        sections: Names of the sections to run, in the demo's order (None: all of
            :data:`~probrank.demo.sections.SECTIONS`).

    Returns:
        The path of ``report.md``.

    Raises:
        InputDataError: a bad seed, an unknown section, or an ``output_dir`` that exists and is
            not a folder.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputDataError(f"seed must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise InputDataError("the report folder exists and is not a folder", path=output_dir)
    known = [section.value for section in SECTIONS]
    unknown = [name for name in sections or () if name not in known]
    if unknown or (sections is not None and not sections):
        raise InputDataError(
            f"demo sections must be among {', '.join(known)}, got {list(sections or [])!r}"
        )
    chosen = [(s.value, f) for s, f in SECTIONS.items() if sections is None or s.value in sections]
    start = time.perf_counter()
    output_dir.mkdir(parents=True, exist_ok=True)
    data_dir = output_dir / "data"
    data_dir.mkdir(exist_ok=True)
    collection = score_distribution_runs(
        num_queries=20 if quick else 60, num_docs=400 if quick else 1000, seed=seed
    )
    collection.qrels.write(data_dir / "qrels.txt")
    for run in collection.runs:
        run.write(data_dir / f"{run.name}.run")
    ctx = DemoContext(collection=collection, output_dir=output_dir, seed=seed, quick=quick)
    print(
        f"probrank demo: {len(chosen)} sections on generated data "
        f"({'quick' if quick else 'under a minute on 2 CPU cores'}); report in {output_dir}/"
    )
    parts = [
        "# probrank demo report\n",
        f"Generated collection: {len(collection.qrels)} queries, {len(collection.runs)} runs "
        f"(files in `data/`), seed {seed}. Every number below was computed by this run of "
        "`probrank demo`.\n",
    ]
    timings: dict[str, float] = {}
    bar = progress_bar(chosen, desc="demo", unit="section")
    for name, section in bar:
        bar.set_postfix_str(name)
        began = time.perf_counter()
        parts.append(section(ctx))
        timings[name] = round(time.perf_counter() - began, 2)
    bar.close()
    elapsed = time.perf_counter() - start
    ctx.results["seconds"] = {**timings, "total": round(elapsed, 2)}
    parts.append(
        "\nSeconds per section: "
        + ", ".join(f"{k} {v:.1f}" for k, v in timings.items())
        + f"; total {elapsed:.1f} s.\n"
    )
    report = output_dir / "report.md"
    write_text_atomically(report, "\n".join(parts))
    write_text_atomically(output_dir / "results.json", json.dumps(ctx.results, indent=2))
    print(f"Report written to {report} ({elapsed:.1f} s; figures: {', '.join(ctx.figures)})")
    return report
