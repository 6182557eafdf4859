"""Pooling strategies against full qrels: how well each ranks the runs with part of the pool.

Every strategy of :mod:`probrank.pooling` simulates judging the depth-100 pool of

* ``dl2021``: TREC 2021 Deep Learning passage runs (63 runs, top 100, 53 topics; relevant at
  grade >= 2), ``../shared/data/pooling/trec-dl-2021-passage``;
* ``robust03``: TREC 2003 Robust runs (17 runs cut at 100, 100 topics; relevant at grade >= 1),
  ``../shared/data/fusion/robust03``;

up to each budget (shares of the pool), over several seeds. At each budget: Kendall's tau of
the runs' MAP and nDCG@10 estimates against the full qrels' values (cut at depth 100,
trec_eval ``-M 100``), the RMSE of MAP, the relevant documents found, the share of runs whose
90% interval covers their true MAP (strategies with intervals: ``bayesian``), and the seconds
from the start of the simulation (strategy and estimates; the truth's evaluation excluded),
and the strategy's held-out check of its relevance model on the documents it explored
uniformly (:mod:`probrank.pooling.checks`; ``bayesian``): relevant documents found / expected
among them, then the share of seeds whose count falls outside its 90% predictive interval
(``explored_found``, ``explored_expected``, ``explored_flagged`` and the explored documents
judged, ``explored_documents``, in the JSON). Means over
seeds. Prints a table, then one JSON object.

Run: ``.venv/bin/python benchmarks/pooling.py [--collections dl2021 robust03] [--strategies
...] [--budgets 1 2 5 10 20 30] [--seeds 5] [--quick] [--posterior laplace] [--cell-effects
[--cell-scale 1] [--cell-smooth-scale S] [--cell-rank-only]] [--run-scale 50]
[--topic-slope-scale 0.5] [--json-out FILE] [--figure PNG]``; ``--figure PNG --figure-from
JSON...`` draws the figure from earlier runs' JSON (the card's:
``models/pooling/results/``), and ``--coverage-from JSON...`` prints each row's coverage over
its seeds (mean, standard error, seeds covering under half the runs). The JSON rows hold each
seed's tau, RMSE and coverage under ``per_seed``.
"""

from __future__ import annotations

import argparse
import glob
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from probrank.data import Qrels, shared_data_dir
from probrank.models.pooling import PoolingModelSettings, PoolingPosterior
from probrank.pooling.simulate import read_runs, simulate
from probrank.pooling.strategies import Bayesian, StrategyName

COLLECTIONS = {
    "dl2021": ("pooling/trec-dl-2021-passage", "qrels.txt", 2),
    "robust03": ("fusion/robust03", "qrels.txt", 1),
}


def _load(name: str) -> tuple[Qrels, list[Any], int]:
    folder, qrels_name, level = COLLECTIONS[name]
    root = shared_data_dir() / folder
    runs = read_runs(sorted(glob.glob(str(root / "runs" / "*.gz"))))
    runs = [run.truncate(100) for run in runs]
    return Qrels.read(root / qrels_name), runs, level


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``bayesian`` strategy's relevance-model options (:class:`PoolingModelSettings`)."""
    defaults = PoolingModelSettings()
    parser.add_argument(
        "--posterior",
        default=PoolingPosterior.LAPLACE.value,
        choices=[p.value for p in PoolingPosterior],
        help="the bayesian strategy's relevance posterior (PoolingModelSettings.posterior)",
    )
    parser.add_argument(
        "--cell-effects",
        action="store_true",
        help="add the (best rank x runs ranking) cell effects (PoolingModelSettings.cell_effects)",
    )
    parser.add_argument(
        "--cell-scale", type=float, default=defaults.cell_scale, help="prior sd of a cell"
    )
    parser.add_argument(
        "--cell-rank-only",
        action="store_true",
        help="cells by the best rank alone, not by the runs ranking too (cell_counts=False)",
    )
    parser.add_argument(
        "--cell-smooth-scale",
        type=float,
        default=None,
        help="prior sd of adjacent cells' difference (default: independent cells)",
    )
    strategy = Bayesian()
    numeric: list[tuple[str, type, float, str]] = [
        (
            "--run-scale",
            float,
            defaults.run_scale,
            "prior sd of the runs' slopes and retrieved effects (run_scale, retrieved_scale)",
        ),
        (
            "--topic-slope-scale",
            float,
            defaults.topic_slope_scale,
            "prior sd of a topic's deviation of the fused evidence's coefficient",
        ),
        (
            "--unpooled-doublings",
            float,
            strategy.unpooled_doublings,
            "prior median of K, the depth doublings the pool misses (Bayesian.unpooled_doublings)",
        ),
        ("--unpooled-sd", float, strategy.unpooled_sd, "prior sd of log K (Bayesian.unpooled_sd)"),
        (
            "--unpooled-window",
            int,
            strategy.unpooled_window,
            "last doublings of the depth whose relevant per doubling K extrapolates",
        ),
    ]
    for flag, kind, default, text in numeric:
        parser.add_argument(flag, type=kind, default=default, help=text)


def check_model_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse model options that only make sense with ``--cell-effects`` without it (one line,
    exit 2, as ``probrank pool simulate`` does)."""
    for option in ("cell_rank_only", "cell_smooth_scale"):
        if getattr(args, option) not in (None, False) and not args.cell_effects:
            parser.error(f"--{option.replace('_', '-')} needs --cell-effects")


def read_rows(parser: argparse.ArgumentParser, paths: list[str]) -> list[dict[str, Any]]:
    """The rows of earlier runs' JSON outputs; one line and exit 2 for a file that is missing,
    not JSON or holds no rows."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        try:
            found = json.loads(Path(path).read_text())["rows"]
            if not isinstance(found, list):
                raise TypeError("rows is not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"cannot read the rows of {path}: {exc}")
        rows.extend(found)
    return rows


def bayesian_strategy(args: argparse.Namespace) -> Bayesian:
    """The ``bayesian`` strategy with :func:`add_model_arguments`' options."""
    return Bayesian(
        model=model_settings(args),
        unpooled_doublings=args.unpooled_doublings,
        unpooled_sd=args.unpooled_sd,
        unpooled_window=args.unpooled_window,
    )


def model_settings(args: argparse.Namespace) -> PoolingModelSettings:
    """The relevance model's settings from :func:`add_model_arguments`' options."""
    return PoolingModelSettings(
        posterior=args.posterior,
        cell_effects=args.cell_effects,
        cell_scale=args.cell_scale,
        cell_smooth_scale=args.cell_smooth_scale,
        cell_counts=not args.cell_rank_only,
        run_scale=args.run_scale,
        retrieved_scale=args.run_scale,
        topic_slope_scale=args.topic_slope_scale,
    )


def _explored_columns(checks: list[Any]) -> dict[str, float | None]:
    """The means over seeds of the explored-documents check (``None`` without one)."""
    if not checks:
        return {
            "explored_documents": None,
            "explored_found": None,
            "explored_expected": None,
            "explored_flagged": None,
        }
    return {
        "explored_documents": float(np.mean([c.documents for c in checks])),
        "explored_found": float(np.mean([c.found for c in checks])),
        "explored_expected": float(np.mean([c.expected for c in checks])),
        "explored_flagged": float(np.mean([not c.lower <= c.found <= c.upper for c in checks])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--collections", nargs="+", default=list(COLLECTIONS), choices=list(COLLECTIONS)
    )
    parser.add_argument(
        "--strategies",
        nargs="+",
        default=[s.value for s in StrategyName],
        choices=[s.value for s in StrategyName],
    )
    parser.add_argument(
        "--budgets",
        nargs="+",
        type=float,
        default=[1, 2, 5, 10, 20, 30],
        help="shares of the pool, in percent",
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. SEEDS-1 (default 5)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one seed, budgets 1 2 5 10 (overrides --seeds and --budgets)",
    )
    add_model_arguments(parser)
    parser.add_argument("--json-out", default=None, help="also write the JSON here")
    parser.add_argument(
        "--figure",
        default=None,
        metavar="PNG",
        help="also draw tau, RMSE and coverage against the share judged (PNG)",
    )
    parser.add_argument(
        "--figure-from",
        nargs="+",
        default=None,
        metavar="JSON",
        help="draw --figure from these JSON outputs of earlier runs instead of running",
    )
    parser.add_argument(
        "--coverage-from",
        nargs="+",
        default=None,
        metavar="JSON",
        help="print each row's coverage over its seeds (mean, standard error, seeds under half "
        "the runs) from these JSON outputs of earlier runs instead of running",
    )
    args = parser.parse_args()
    check_model_arguments(parser, args)
    if args.coverage_from:
        print_coverage(read_rows(parser, args.coverage_from))
        return
    if args.figure_from:
        if not args.figure:
            parser.error("--figure-from needs --figure")
        draw_figure(read_rows(parser, args.figure_from), args.figure)
        print(f"wrote {args.figure}")
        return
    if args.quick:
        args.seeds, args.budgets = 1, [1, 2, 5, 10]
    budgets = [f"{b:g}%" for b in args.budgets]
    rows: list[dict[str, Any]] = []
    header = (
        f"{'collection':<10} {'strategy':<16} {'budget':>6} {'judged':>7} {'tau_map':>8} "
        f"{'tau_ndcg':>8} {'rmse_map':>8} {'relevant':>8} {'coverage':>8} {'seconds':>8} "
        f"{'explored':>13}"
    )
    print(header)
    for collection in args.collections:
        qrels, runs, level = _load(collection)
        for strategy in args.strategies:
            per_seed = []
            chosen: Any = strategy
            if strategy == StrategyName.BAYESIAN.value:
                chosen = bayesian_strategy(args)
            for seed in range(args.seeds):
                result = simulate(qrels, runs, chosen, budgets, seed=seed, level=level)
                per_seed.append(result.budgets)
            for i, budget in enumerate(budgets):
                results = [seeds[i] for seeds in per_seed]
                cover = [r.coverage for r in results if not np.isnan(r.coverage)]
                checks = [r.explored for r in results if r.explored is not None]
                row = {
                    "collection": collection,
                    "strategy": strategy,
                    "budget": budget,
                    "judged": int(np.mean([r.judgements for r in results])),
                    "tau_map": float(np.mean([r.tau_map for r in results])),
                    "tau_ndcg_cut_10": float(np.mean([r.tau_ndcg for r in results])),
                    "rmse_map": float(np.mean([r.rmse_map for r in results])),
                    "relevant_found": float(np.mean([r.relevant_found for r in results])),
                    "coverage_map": float(np.mean(cover)) if cover else None,
                    "seconds": float(np.mean([r.seconds for r in results])),
                    "seeds": args.seeds,
                    **_explored_columns(checks),
                    "per_seed": {
                        "tau_map": [r.tau_map for r in results],
                        "rmse_map": [r.rmse_map for r in results],
                        "coverage_map": cover or None,
                    },
                }
                rows.append(row)
                coverage = "-" if row["coverage_map"] is None else f"{row['coverage_map']:.2f}"
                explored = (
                    "-"
                    if not checks
                    else f"{row['explored_found']:.0f}/{row['explored_expected']:.0f} "
                    f"{row['explored_flagged']:.1f}"
                )
                print(
                    f"{collection:<10} {strategy:<16} {budget:>6} {row['judged']:>7} "
                    f"{row['tau_map']:>8.3f} {row['tau_ndcg_cut_10']:>8.3f} "
                    f"{row['rmse_map']:>8.4f} {row['relevant_found']:>8.0f} {coverage:>8} "
                    f"{row['seconds']:>8.1f} {explored:>13}",
                    flush=True,
                )
    summary = {
        "benchmark": "pooling",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "seeds": args.seeds,
        "posterior": args.posterior,
        "model": {
            "cell_effects": args.cell_effects,
            "cell_scale": args.cell_scale,
            "cell_smooth_scale": args.cell_smooth_scale,
            "cell_counts": not args.cell_rank_only,
            "run_scale": args.run_scale,
            "topic_slope_scale": args.topic_slope_scale,
            "unpooled_doublings": args.unpooled_doublings,
            "unpooled_sd": args.unpooled_sd,
            "unpooled_window": args.unpooled_window,
        },
        "rows": rows,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps(summary)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    if args.figure:
        draw_figure(rows, args.figure)
    print(text)


def print_coverage(rows: list[dict[str, Any]]) -> None:
    """Per row with intervals: the seeds' mean coverage, its standard error (sd over the seeds
    / sqrt(seeds)) and the seeds whose intervals cover under half the runs, beside tau and
    RMSE of MAP."""
    print(
        f"{'collection':<10} {'strategy':<16} {'budget':>6} {'seeds':>5} {'coverage':>8} "
        f"{'se':>6} {'under half':>10} {'tau_map':>8} {'rmse_map':>8}"
    )
    for row in rows:
        coverage = np.array(row.get("per_seed", {}).get("coverage_map") or [], dtype=float)
        if coverage.size == 0 or np.isnan(coverage).all():
            continue
        se = coverage.std(ddof=1) / np.sqrt(coverage.size) if coverage.size > 1 else float("nan")
        under = int((coverage < 0.5).sum())
        print(
            f"{row['collection']:<10} {row['strategy']:<16} {row['budget']:>6} "
            f"{coverage.size:>5} {coverage.mean():8.2f} {se:6.2f} {under:>10} "
            f"{row['tau_map']:8.3f} {row['rmse_map']:8.4f}"
        )


def draw_figure(rows: list[dict[str, Any]], path: str) -> None:
    """Per collection (columns): Kendall's tau of MAP, the RMSE of MAP (log scale) and the
    coverage of the 90% intervals (with the issue's 85-95% band) against the share of the pool
    judged; one line per strategy (the mean over seeds), shaded between the seeds' lowest and
    highest values where the rows hold them (``per_seed``)."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    from probrank._files import new_figure, save_figure

    collections = list(dict.fromkeys(row["collection"] for row in rows))
    strategies = list(dict.fromkeys(row["strategy"] for row in rows))
    figure, axes = new_figure(3, len(collections), figsize=(5.0 * len(collections), 9.5))
    axes = np.asarray(axes).reshape(3, len(collections))
    panels = (("tau_map", "Kendall tau of MAP"), ("rmse_map", "RMSE of MAP"),
              ("coverage_map", "90% interval coverage"))  # fmt: skip
    for j, collection in enumerate(collections):
        for i, (key, label) in enumerate(panels):
            ax = axes[i, j]
            for k, strategy in enumerate(strategies):
                mine = [
                    r for r in rows if r["collection"] == collection and r["strategy"] == strategy
                ]
                mine = [r for r in mine if r[key] is not None]
                if not mine:
                    continue
                x = [float(r["budget"].rstrip("%")) for r in mine]
                color = f"C{k}"
                ax.plot(x, [r[key] for r in mine], "o-", color=color, label=strategy, ms=3.5)
                seeds = [r.get("per_seed", {}).get(key) for r in mine]
                if all(seeds) and all(len(v) > 1 for v in seeds):
                    ax.fill_between(x, [min(v) for v in seeds], [max(v) for v in seeds],
                                    color=color, alpha=0.15, lw=0)  # fmt: skip
            ax.set_xscale("log")
            ax.set_xticks([1, 2, 5, 10, 20, 30], ["1", "2", "5", "10", "20", "30"])
            if key == "rmse_map":
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
                ax.yaxis.set_minor_formatter(NullFormatter())
            if key == "coverage_map":
                ax.axhspan(0.85, 0.95, color="0.85", zorder=0, label="goal 85-95%")
                ax.set_ylim(0.0, 1.02)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(collection)
            if i == 2:
                ax.set_xlabel("share of the depth-100 pool judged (%)")
        axes[0, j].legend(fontsize=8, loc="lower right")
        axes[2, j].legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    save_figure(figure, path)


if __name__ == "__main__":
    main()
