"""Wall time of probrank's unsupervised fusion against ``ranx.fuse``, and of QLFusion's CV.

On the six Robust03 runs with the highest MAP (the QLFusion experiments' input), top 100 per
list, min-max normalisation, in one process:

* probrank ``fuse(runs, method, depth=100)`` on the full runs (the cut is part of the work) and
  on runs already cut at 100 (the same input ranx gets);
* ``ranx.fuse`` on the runs cut at 100 (ranx has no depth option): its first call (numba JIT
  compilation or cache load) and its steady state, plus the time to build ranx ``Run`` objects;
* META has no ranx counterpart;
* QLFusion's full 10-fold cross-validation of the proposed model on Robust03 (one seed:
  reading the runs, features, training every fold's quantifiers, fusing, evaluating) with the
  settings of ``models/qlfusion/robust03.toml`` (``--cv proposed``, the default), timed apart
  from the extras of the experiment (Table 2 grid, LR, RF, plus: ``--cv full`` times
  ``probrank experiment config --seeds 1`` as a whole, with each training group's share read
  from its results JSON). The proposed model's CV is timed through the model's parts
  (:meth:`probrank.models.qlfusion.QLFusion.cross_fit`), as the protocol runs it.
  ``--compare`` adds, in the same process, the proposed model's CV with the previous
  configuration's settings (batch sizes 4, 8, 16; 200 steps) with one and two torch threads.

Steady-state times are medians over ``--repeats`` calls. Prints a table, then one JSON object.
Run: ``.venv/bin/python benchmarks/fusion_speed.py [--repeats 5] [--cv proposed|full|none]
[--compare]``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import tomllib

from probrank._threads import torch_threads
from probrank.data import Qrels, Run, shared_data_dir
from probrank.evaluation import evaluate, top_runs
from probrank.exceptions import ConvergenceWarning
from probrank.fusion import fuse
from probrank.models.qlfusion import QLFusion, QLFusionSettings

RUNS = ["pircRBa1", "aplrob03a", "uwmtCR0", "VTcdhgp1", "THUIRr0301", "fub03IeOLKe3"]
DEPTH = 100
METHODS = {"combsum": "sum", "combmnz": "mnz", "combmax": "max", "rrf": "rrf", "meta": None}
CONFIG = Path(__file__).resolve().parents[1] / "models" / "qlfusion" / "robust03.toml"


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _max_abs_difference(ours: Run, theirs: dict[str, dict[str, float]]) -> float:
    worst = 0.0
    for qid, docs in ours.as_dict().items():
        other = theirs.get(qid, {})
        if set(docs) != set(other):
            return float("inf")
        worst = max([worst, *(abs(s - other[d]) for d, s in docs.items())])
    return worst


def _time_ranx(cut: list[Run], repeats: int) -> tuple[dict, dict[str, dict]]:
    try:
        import ranx
    except ImportError:
        return {"available": False}, {}
    start = time.perf_counter()
    ranx_runs = [ranx.Run(r.to_dict(), name=r.name) for r in cut]
    build = time.perf_counter() - start
    results: dict[str, dict] = {}
    for method, ranx_method in METHODS.items():
        if ranx_method is None:
            continue
        norm = None if method == "rrf" else "min-max"

        def call(ranx_method: str = ranx_method, norm: str | None = norm) -> object:
            return ranx.fuse(ranx_runs, norm=norm, method=ranx_method)

        start = time.perf_counter()
        fused = call()
        first = time.perf_counter() - start
        results[method] = {
            "first_s": first,
            "steady_s": _median_time(call, repeats),
            "fused": fused.to_dict(),  # type: ignore[attr-defined]
        }
    return {
        "available": True,
        "version": importlib.metadata.version("ranx"),
        "build_runs_s": build,
    }, results


def time_proposed(
    config_path: Path,
    *,
    seed: int = 0,
    threads: int | None = None,
    overrides: dict | None = None,
    progress: bool = False,
) -> dict:
    """Wall time of the proposed model's full cross-validation (one seed), as the
    ``qlfusion_cv`` protocol runs it: read the runs, keep the ``top_runs`` by MAP, build the
    folds, train every fold's ``qlfusion`` quantifiers, fuse, evaluate (no extras).

    Returns:
        ``{"prepare_s", "train_s", "fuse_evaluate_s", "total_s", "P@5", "nDCG@5",
        "test_mae", "threads", "settings"}``.
    """
    config = tomllib.loads(config_path.read_text(encoding="utf-8"))
    protocol = config.get("protocol", {})
    settings = QLFusionSettings.from_table(
        {**config.get("quantifier", {}), **(overrides or {})},
        depth=int(protocol.get("depth", 100)),
        seed=seed,
        progress=progress,
    )
    model = QLFusion(settings)
    threads = threads or int(config.get("experiment", {}).get("threads", 1))
    base = shared_data_dir(*str(config["data"]["shared"]).split("/"))
    with torch_threads(threads):
        start = time.perf_counter()
        qrels = Qrels.read(base / config["data"].get("qrels", "qrels.txt"))
        paths = sorted(base.glob(config["data"].get("runs", "runs/*")))
        selected = top_runs(qrels, [Run.read(p) for p in paths], int(protocol.get("top_runs", 6)))
        data = model.prepare_cross_fit(
            selected,
            qrels,
            folds=int(protocol.get("folds", 10)),
            fold_seed=int(protocol.get("fold_seed", 0)),
        )
        prepared = time.perf_counter()
        cross_fit = model.cross_fit_data(data)
        trained = time.perf_counter()
        fused = cross_fit.fuse(selected)
        scores = evaluate(qrels, fused, ["P@5", "nDCG@5"])
        end = time.perf_counter()
    return {
        "prepare_s": prepared - start,
        "train_s": trained - prepared,
        "fuse_evaluate_s": end - trained,
        "total_s": end - start,
        **scores,
        "test_mae": cross_fit.test_mae["qlfusion"],
        "threads": threads,
        "settings": repr(settings),
    }


def _time_cv(mode: str, compare: bool) -> dict:
    if not CONFIG.is_file():
        return {"available": False, "reason": f"{CONFIG} does not exist"}
    out: dict = {"available": True, "config": str(CONFIG), "mode": mode, "seeds": 1}
    if mode == "full":
        with tempfile.TemporaryDirectory() as folder:
            command = [sys.executable, "-m", "probrank.cli", "-q", "experiment", str(CONFIG)]
            start = time.perf_counter()
            subprocess.run([*command, "--seeds", "1", "--out", folder], check=True)
            out["wall_s"] = time.perf_counter() - start
            saved = json.loads((Path(folder) / f"{CONFIG.stem}.json").read_text())
        out["means"] = saved["means"]
        out["groups_s"] = {
            group: values["seed 0"]
            for group, values in saved["extra"]["Training wall time per seed (s)"].items()
        }
        return out
    out["proposed"] = time_proposed(CONFIG)
    out["wall_s"] = out["proposed"]["total_s"]
    if compare:
        previous = {"batch_sizes": [4, 8, 16], "max_steps": 200}
        out["previous_settings"] = time_proposed(CONFIG, overrides=previous)
        out["previous_settings_2_threads"] = time_proposed(CONFIG, threads=2, overrides=previous)
    return out


def _cell(row: dict, key: str, spec: str) -> str:
    return format(row[key], spec) if key in row else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cv",
        choices=["proposed", "full", "none"],
        default="proposed",
        help="time the proposed model's 10-fold CV (default), the whole experiment, or neither",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also time the proposed CV with 2 threads and with the previous settings",
    )
    args = parser.parse_args()

    load_before = os.getloadavg()
    folder = shared_data_dir("fusion", "robust03", "runs")
    start = time.perf_counter()
    runs = [Run.read(folder / f"input.{name}.gz") for name in RUNS]
    read_s = time.perf_counter() - start
    cut = [run.truncate(DEPTH) for run in runs]

    ranx_info, ranx_results = _time_ranx(cut, args.repeats)
    rows = []
    for method in METHODS:

        def full(method: str = method) -> Run:
            return fuse(runs, method, norm="minmax", depth=DEPTH)

        def precut(method: str = method) -> Run:
            return fuse(cut, method, norm="minmax", depth=None)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fused = full()
            row = {
                "method": method,
                "probrank_full_s": _median_time(full, args.repeats),
                "probrank_cut_s": _median_time(precut, args.repeats),
            }
        other = ranx_results.get(method)
        if other is not None:
            row["ranx_first_s"] = other["first_s"]
            row["ranx_steady_s"] = other["steady_s"]
            row["ratio_cut_vs_ranx_steady"] = row["probrank_cut_s"] / other["steady_s"]
            row["ratio_full_vs_ranx_steady"] = row["probrank_full_s"] / other["steady_s"]
            row["max_abs_score_difference"] = _max_abs_difference(fused, other["fused"])
        rows.append(row)

    cv = (
        {"available": False, "reason": "--cv none"}
        if args.cv == "none"
        else _time_cv(args.cv, args.compare)
    )

    print(f"Robust03, {len(runs)} runs, depth {DEPTH}, min-max; median of {args.repeats} calls")
    load_after = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; reading runs {read_s:.2f} s; "
        f"1-min load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    header = (
        f"{'method':<8} {'probrank full':>13} {'probrank cut':>12} {'ranx first':>10} "
        f"{'ranx steady':>11} {'cut/ranx':>8} {'max|diff|':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['method']:<8} {row['probrank_full_s']:>13.4f} {row['probrank_cut_s']:>12.4f} "
            f"{_cell(row, 'ranx_first_s', '.4f'):>10} {_cell(row, 'ranx_steady_s', '.4f'):>11} "
            f"{_cell(row, 'ratio_cut_vs_ranx_steady', '.1f'):>8} "
            f"{_cell(row, 'max_abs_score_difference', '.1e'):>9}"
        )
    if ranx_info.get("available"):
        print(f"ranx {ranx_info['version']}: building ranx Runs {ranx_info['build_runs_s']:.3f} s")
    else:
        print("ranx not importable (install the bench extra): no comparison")
    if cv.get("available") and cv["mode"] == "full":
        groups = ", ".join(f"{k} {v:.1f} s" for k, v in cv["groups_s"].items())
        print(f"QLFusion experiment on Robust03 (seeds=1): {cv['wall_s']:.1f} s wall ({groups})")
    elif cv.get("available"):
        for key, label in (
            ("proposed", "QLFusion (proposed) 10-fold CV on Robust03, config settings"),
            ("previous_settings", "  previous settings (batch sizes 4, 8, 16; 200 steps)"),
            ("previous_settings_2_threads", "  previous settings, 2 torch threads"),
        ):
            if key in cv:
                r = cv[key]
                print(
                    f"{label}: {r['total_s']:.1f} s wall (train {r['train_s']:.1f} s, "
                    f"{r['threads']} thread(s)); P@5 {r['P@5']:.4f}, nDCG@5 {r['nDCG@5']:.4f}"
                )
    else:
        print(f"QLFusion 10-fold CV: not available ({cv['reason']})")
    summary = {
        "runs": RUNS,
        "depth": DEPTH,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load_average_1min": [load_before[0], load_after[0]],
        "read_runs_s": read_s,
        "ranx": ranx_info,
        "methods": rows,
        "qlfusion_cv": cv,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
