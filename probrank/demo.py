"""``probrank demo``: every model on generated data, a report folder, and a summary on stdout.

Sections run in order; each returns markdown for ``report.md``. Later models add sections.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from probrank.data.datasets.synthetic import SyntheticCollection, score_distribution_runs
from probrank.evaluation import compare, evaluate
from probrank.experiments.results import format_table

__all__ = ["DemoContext", "run_demo"]

DEMO_MEASURES = ["AP", "nDCG@10", "P@5", "P@10", "R@100", "RR"]


@dataclass
class DemoContext:
    """What the sections share: the generated collection, the output folder, the seed."""

    collection: SyntheticCollection
    output_dir: Path
    seed: int
    quick: bool
    results: dict[str, object] = field(default_factory=dict)


def _evaluation_section(ctx: DemoContext) -> str:
    qrels, runs = ctx.collection.qrels, ctx.collection.runs
    rows = {
        r.name: {m: f"{v:.4f}" for m, v in evaluate(qrels, r, DEMO_MEASURES).items()} for r in runs
    }
    table = format_table("Generated runs (trec_eval semantics through ir-measures)", rows)
    tests = compare(qrels, runs, ["AP", "nDCG@10"], test="randomization", seed=ctx.seed)
    ctx.results["evaluation"] = {
        name: {m: float(v) for m, v in row.items()} for name, row in rows.items()
    }
    print(table)
    print()
    significance = tests.to_string(index=False, float_format=lambda v: f"{v:.4f}")
    print(f"Randomisation tests against {runs[0].name} (Holm-corrected):\n{significance}\n")
    quality = ", ".join(f"{k} {v:.2f}" for k, v in ctx.collection.run_quality.items())
    return (
        "## Evaluation\n\n"
        f"Runs generated with relevant-score means (in exponential scales): {quality}.\n\n"
        f"```\n{table}\n```\n\n"
        f"Randomisation tests against `{runs[0].name}` (Holm-corrected):\n\n"
        f"```\n{significance}\n```\n"
    )


SECTIONS: list[tuple[str, Callable[[DemoContext], str]]] = [
    ("evaluation", _evaluation_section),
]


def run_demo(output_dir: Path = Path("probrank-demo"), seed: int = 0, quick: bool = False) -> Path:
    """Generate the default collection, run every section, write ``report.md``.

    Args:
        output_dir: Report folder (created; generated runs go to ``data/`` inside).
        seed: Seed of the data generator and the models.
        quick: Smallest sizes (used by the tests).

    Returns:
        The path of ``report.md``.
    """
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
    parts = [
        "# probrank demo report\n",
        f"Generated collection: {len(collection.qrels)} queries, {len(collection.runs)} runs "
        f"(files in `data/`), seed {seed}.\n",
    ]
    for _name, section in tqdm(SECTIONS, desc="demo", unit="section", leave=False):
        parts.append(section(ctx))
    elapsed = time.perf_counter() - start
    parts.append(f"\nFinished in {elapsed:.1f} s.\n")
    report = output_dir / "report.md"
    report.write_text("\n".join(parts), encoding="utf-8")
    (output_dir / "results.json").write_text(json.dumps(ctx.results, indent=2), encoding="utf-8")
    print(f"Report written to {report} ({elapsed:.1f} s)")
    return report
