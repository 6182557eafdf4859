"""Time the evaluation of all 17 Robust03 runs for AP, P@10, nDCG@10 and R@100.

Compares, in one process: probrank's ``Evaluator`` (qrels prepared once, as ir-measures'
``evaluator``) and ``evaluate`` called per run, ir-measures directly (pytrec_eval backend,
the baseline), and ranx's ``evaluate`` (first call, which includes numba's JIT compilation,
and warm). Runs and qrels are loaded once beforehand (each library from its own structures);
only evaluation is timed. Prints a table and a JSON line; ratios are against ir-measures.

    .venv/bin/python benchmarks/eval_speed.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import ir_measures

from probrank.data import Qrels, Run, shared_data_dir
from probrank.evaluation import Evaluator, evaluate

MEASURES = ["AP", "P@10", "nDCG@10", "R@100"]
RANX_MEASURES = ["map", "precision@10", "ndcg_burges@10", "recall@100"]


def _time(fn: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    folder = shared_data_dir("fusion", "robust03")
    qrels = Qrels.read(folder / "qrels.txt")
    runs = [Run.read(p) for p in sorted((folder / "runs").glob("input.*.gz"))]
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    qrels_dict = qrels.as_dict()
    run_dicts = [r.as_dict() for r in runs]

    def with_probrank() -> list[dict[str, float]]:
        evaluator = Evaluator(qrels, MEASURES)
        return [evaluator(r) for r in runs]

    def with_probrank_per_call() -> list[dict[str, float]]:
        return [evaluate(qrels, r, MEASURES) for r in runs]

    def with_ir_measures() -> list[dict]:
        evaluator = ir_measures.evaluator(parsed, qrels_dict)
        return [evaluator.calc_aggregate(r) for r in run_dicts]

    # check that the two agree before timing them
    for ours, theirs in zip(with_probrank(), with_ir_measures(), strict=True):
        for m, measure in zip(MEASURES, parsed, strict=True):
            assert abs(ours[m] - theirs[measure]) < 1e-12, (m, ours[m], theirs[measure])

    rows: dict[str, float] = {}
    baseline = _time(with_ir_measures, args.repeats)
    rows["ir-measures (pytrec_eval)"] = statistics.median(baseline)
    rows["probrank.Evaluator"] = statistics.median(_time(with_probrank, args.repeats))
    rows["probrank.evaluate (per run)"] = statistics.median(
        _time(with_probrank_per_call, args.repeats)
    )
    try:
        import ranx
    except ImportError:
        ranx = None
    if ranx is not None:
        ranx_qrels = ranx.Qrels(qrels_dict)
        ranx_runs = [ranx.Run(r, name=str(i)) for i, r in enumerate(run_dicts)]

        def with_ranx() -> list[dict]:
            return [ranx.evaluate(ranx_qrels, r, RANX_MEASURES) for r in ranx_runs]

        rows["ranx.evaluate (first call, JIT)"] = _time(with_ranx, 1)[0]
        rows["ranx.evaluate (warm)"] = statistics.median(_time(with_ranx, args.repeats))

    base = rows["ir-measures (pytrec_eval)"]
    print(
        f"Evaluating {len(runs)} Robust03 runs for {', '.join(MEASURES)} (median of {args.repeats})"
    )
    print(f"{'method':<34}{'seconds':>10}{'ratio':>8}")
    for name, seconds in rows.items():
        print(f"{name:<34}{seconds:>10.3f}{seconds / base:>8.2f}")
    overhead = rows["probrank.Evaluator"] / base - 1
    print(f"probrank overhead over ir-measures: {overhead:+.1%} (goal: under 10%)")
    print(
        json.dumps(
            {
                "seconds": rows,
                "ratio_to_ir_measures": {k: v / base for k, v in rows.items()},
                "probrank_overhead": overhead,
            }
        )
    )


if __name__ == "__main__":
    main()
