"""The ``probrank`` command: parses arguments and calls the public API; nothing else.

Bad input (:class:`~probrank.exceptions.InputDataError`) becomes one line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from probrank.exceptions import InputDataError

__all__ = ["main"]


def _cmd_eval(args: argparse.Namespace) -> None:
    from probrank.data import Qrels, Run
    from probrank.evaluation import DEFAULT_MEASURES, Evaluator, compare

    qrels = Qrels.read(args.qrels)
    runs = [Run.read(p) for p in args.runs]
    measures = args.measures or list(DEFAULT_MEASURES)
    options = {"relevance_level": args.level, "all_queries": args.complete, "depth": args.depth}
    if args.compare:
        table = compare(
            qrels, runs, measures, test=args.test, correction=args.correction, **options
        )
        if args.json:
            print(table.to_json(orient="records", indent=2))
        else:
            print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        return
    evaluator = Evaluator(qrels, measures, **options)
    summation = {name for name, m in evaluator.measures if _is_sum(m)}
    output: dict[str, dict] = {}
    for run in runs:
        values = evaluator.per_query(run)
        totals = evaluator.aggregate(values)
        if args.json:
            output[run.name] = {**values, "all": totals} if args.per_query else totals
            continue
        print(f"{'runid':<22}\tall\t{run.tag}")
        if args.per_query:
            for qid, row in values.items():
                for name in evaluator.names:
                    print(_line(name, qid, row[name], name in summation))
        for name in evaluator.names:
            print(_line(name, "all", totals[name], name in summation))
    if args.json:
        print(json.dumps(output, indent=2))


def _is_sum(measure: object) -> bool:
    return type(measure.aggregator()).__name__ == "SumAgg"  # type: ignore[attr-defined]


def _line(name: str, qid: str, value: float, integer: bool) -> str:
    text = f"{round(value)}" if integer else f"{value:.4f}"
    return f"{name:<22}\t{qid}\t{text}"


def _cmd_demo(args: argparse.Namespace) -> None:
    from probrank.demo import run_demo

    run_demo(output_dir=Path(args.output), seed=args.seed, quick=args.quick)


def _cmd_experiment(args: argparse.Namespace) -> None:
    from probrank.experiments import run_experiment

    result = run_experiment(args.config, seeds=args.seeds, smoke=args.smoke)
    print(result.to_json() if args.json else result.table())


def _cmd_fuse(args: argparse.Namespace) -> None:
    module = importlib.import_module("probrank.experiments.fuse_command")
    values = module.fuse_command(
        args.qrels,
        args.runs,
        method=args.method,
        norm=args.norm,
        depth=args.depth,
        top_runs=args.top_runs,
        folds=args.folds,
        seed=args.seed,
        output=args.output,
        on_duplicate=args.on_duplicate,
    )
    if args.json:
        print(json.dumps({"fused": values}, indent=2))
    else:
        for name, value in values.items():
            print(f"{name:<22}\tall\t{value:.4f}")


def _cmd_interactive(args: argparse.Namespace) -> None:
    module = importlib.import_module("probrank.experiments.interactive_commands")
    if args.human:
        if not args.question:
            raise InputDataError("--human needs --question (e.g. --question TQ5)")
        module.human_session(
            data=args.data,
            question=args.question,
            posterior=args.posterior,
            strategy=args.strategy,
            rounds=args.rounds if args.rounds_given else None,
            seed=args.seed,
            log=args.log,
            resume=args.resume,
            config=args.config,
        )
        return
    table, summary = module.interactive_command(
        data=args.data,
        posterior=args.posterior,
        strategy=args.strategy,
        rounds=args.rounds,
        noise=args.noise,
        seeds=args.seeds,
        split=args.split,
        max_questions=args.max_questions,
        config=args.config,
        progress=not args.json,
    )
    print(json.dumps(summary, indent=2) if args.json else table)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probrank", description="Bayesian relevance estimation toolkit."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="evaluate runs as trec_eval does (through ir-measures)")
    ev.add_argument("qrels", help="TREC qrels file (.gz allowed)")
    ev.add_argument("runs", nargs="+", help="TREC run files (.gz allowed)")
    ev.add_argument("-m", "--measures", nargs="+", metavar="MEASURE", help="ir-measures names")
    ev.add_argument("-l", "--level", type=int, default=None, help="relevance level (trec_eval -l)")
    ev.add_argument("-c", "--complete", action="store_true", help="average over all qrels queries")
    ev.add_argument("-M", "--depth", type=int, default=None, help="evaluate the top DEPTH only")
    ev.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    ev.add_argument("--compare", action="store_true", help="test every run against the first")
    ev.add_argument("--test", default="t", choices=["t", "wilcoxon", "randomization"])
    ev.add_argument("--correction", default="holm", choices=["holm", "bonferroni", "none"])
    ev.add_argument("--json", action="store_true", help="print JSON {run: {measure: value}}")
    ev.set_defaults(handler=_cmd_eval)

    demo = sub.add_parser("demo", help="run the models on generated data and write a report")
    demo.add_argument("-o", "--output", default="probrank-demo", help="report folder")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--quick", action="store_true", help="smallest sizes (for tests)")
    demo.set_defaults(handler=_cmd_demo)

    exp = sub.add_parser("experiment", help="run an experiment config (models/*/*.toml)")
    exp.add_argument("config", help="TOML config")
    exp.add_argument("--seeds", type=int, default=3)
    exp.add_argument("--smoke", action="store_true", help="tiny sizes, to check the pipeline")
    exp.add_argument("--json", action="store_true", help="print JSON {method: {measure: value}}")
    exp.set_defaults(handler=_cmd_experiment)

    fuse = sub.add_parser("fuse", help="fuse runs (learned methods by cross-validation)")
    fuse.add_argument("qrels")
    fuse.add_argument("runs", nargs="+")
    fuse.add_argument(
        "--method",
        default="combsum",
        choices=["combsum", "combmnz", "combmax", "rrf", "meta", "qlfusion", "qlfusion_plus"],
    )
    fuse.add_argument("--norm", default="minmax", choices=["minmax", "zscore", "sum", "rank"])
    fuse.add_argument("--depth", type=int, default=100)
    fuse.add_argument("--top-runs", type=int, default=None)
    fuse.add_argument("--folds", type=int, default=10)
    fuse.add_argument("--seed", type=int, default=0)
    fuse.add_argument(
        "--on-duplicate",
        default="error",
        choices=["error", "max", "first"],
        help="a document ranked twice for one query in a run file (default: an error)",
    )
    fuse.add_argument("-o", "--output", required=True)
    fuse.add_argument("--json", action="store_true")
    fuse.set_defaults(handler=_cmd_fuse)

    inter = sub.add_parser(
        "interactive", help="simulated (or --human) interactive answer selection"
    )
    inter.add_argument(
        "--data", default="liveqa-med", choices=["liveqa-med", "mediqa", "synthetic"]
    )
    inter.add_argument("--split", default="test", help="mediqa split (liveqa-med: test only)")
    inter.add_argument(
        "--posterior",
        default="laplace",
        choices=["mcdropout", "swag", "laplace", "ensemble", "gppl"],
    )
    inter.add_argument(
        "--strategy", default="ei", choices=["ei", "eubo", "unc", "thompson", "random"]
    )
    inter.add_argument("--rounds", type=int, default=None, help="judgements (default 4)")
    inter.add_argument("--noise", type=float, default=0.3, help="simulated user's noise t")
    inter.add_argument("--seeds", type=int, default=3)
    inter.add_argument("--max-questions", type=int, default=None, help="first N questions only")
    inter.add_argument("--config", default=None, help="TOML with option tables to override")
    inter.add_argument("--json", action="store_true", help="print the curves as JSON")
    inter.add_argument("--human", action="store_true", help="you answer, in the terminal")
    inter.add_argument("--question", default=None, help="question id for --human (e.g. TQ5)")
    inter.add_argument("--seed", type=int, default=0, help="seed of a --human session")
    inter.add_argument("--log", default=None, help="--human: durable JSONL session log to create")
    inter.add_argument("--resume", default=None, help="--human: session log to resume")
    inter.set_defaults(handler=_cmd_interactive)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``probrank`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    if getattr(args, "command", None) == "interactive":
        args.rounds_given = args.rounds is not None
        args.rounds = 4 if args.rounds is None else args.rounds
    handler: Callable[[argparse.Namespace], None] = args.handler
    try:
        handler(args)
    except InputDataError as exc:
        print(f"probrank: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("probrank: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
