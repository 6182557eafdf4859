"""The ``probrank`` command: parses arguments and calls the public API; nothing else.

Every error, of any kind and from any command, is caught in one place (:func:`main`) and becomes
one line ``probrank: error: <file>:<line>: <what>`` on stderr and exit code 2; ``--debug`` adds
the traceback. Command-line errors are one line too. A closed output pipe ends the command
quietly, Ctrl-C with ``probrank: interrupted`` and exit code 130, SIGTERM with one line and
exit code 143: never a traceback or a death by signal. ``--threads N`` (before or after the
subcommand) sizes every thread pool (:mod:`probrank._threads`) before numpy or torch loads.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from probrank._cli import (
    OneLineParser,
    Terminated,
    UsageError,
    add_global_options,
    at_least,
    describe_error,
    positive_float,
    positive_int,
    seed,
    sigterm_raises,
    silence_stdout,
)
from probrank._threads import thread_scope
from probrank.exceptions import InputDataError

__all__ = ["main"]


def _cmd_eval(args: argparse.Namespace) -> None:
    # imports neither torch, pyro, transformers nor pandas (--compare imports pandas)
    from probrank.data.trec import Run
    from probrank.evaluation.measures import DEFAULT_MEASURES, Evaluator

    measures = args.measures if args.measures is not None else list(DEFAULT_MEASURES)
    options = {"relevance_level": args.level, "all_queries": args.complete, "depth": args.depth}
    # measure names, -l and -M are validated before the qrels are read
    evaluator = Evaluator(args.qrels, measures, **options)
    runs = [Run.read(path) for path in args.runs]
    if args.compare:
        from probrank.evaluation.significance import compare

        table = compare(
            evaluator.qrels,
            runs,
            evaluator.names,
            test=args.test,
            correction=args.correction,
            **options,
        )
        if args.json:
            print(table.to_json(orient="records", indent=2))
        else:
            print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        return
    counts = {name for name in evaluator.names if evaluator.is_count(name)}
    # trec_eval prints num_q and gm_map in the summary only
    per_topic = [m.name for m in evaluator.measures if m.family not in ("NumQ", "GMAP")]
    output: dict[str, dict[str, object]] = {}
    for run in runs:
        values = evaluator.per_query(run)
        totals = evaluator.aggregate(values)
        if args.json:
            output[run.name] = {**values, "all": totals} if args.per_query else dict(totals)
            continue
        lines = [f"{'runid':<22}\tall\t{run.tag}"]
        if args.per_query:
            for qid, row in values.items():
                lines.extend(_line(name, qid, row[name], name in counts) for name in per_topic)
        lines.extend(_line(name, "all", totals[name], name in counts) for name in evaluator.names)
        print("\n".join(lines))
    if args.json:
        print(json.dumps(output, indent=2))


def _line(name: str, qid: str, value: float, integer: bool) -> str:
    """One output line as trec_eval prints it (``%-22s\t%s\t%6.4f``, counts as ``%ld``)."""
    text = f"{int(value)}" if integer else f"{value:6.4f}"
    return f"{name:<22}\t{qid}\t{text}"


def _eval_epilog() -> str:
    """``probrank eval --help``'s list of measures and notes."""
    from probrank.evaluation.measures import DEFAULT_MEASURES
    from probrank.evaluation.trec_eval.names import measure_help

    return f"""measures (-m NAME, repeatable; -m A B also works; every name is checked first):
{measure_help()}

  trec_eval's -m syntax works too: P.5,10  map_cut.100  iprec_at_recall..1,.25  set_F.0.5
  rbp.p=0.8; a bare family (P, recall, success, map_cut, ndcg_cut, unj, iprec_at_recall)
  gives trec_eval's default cut-offs; 'official' gives trec_eval's default measures.
  k is a positive integer, r a recall level in [0, 1], rel= an integer >= 0 (that measure's
  own -l), p in (0, 1), beta >= 0.
  default: {" ".join(DEFAULT_MEASURES)}

semantics (trec_eval 10.0, in double precision):
  documents are ordered by score (as a double) descending, ties by docno descending; -M cuts
  that order. A run topic the qrels lack is ignored; a qrels topic the run lacks is left out
  (trec_eval 10 stops instead), or with -c counted as trec_eval 10 counts it. Counts are
  summed over topics, other measures averaged; -q prints each topic (not num_q, gm_map)."""


def _cmd_demo(args: argparse.Namespace) -> None:
    from probrank.demo import run_demo

    run_demo(output_dir=Path(args.output), seed=args.seed, quick=args.quick, sections=args.sections)


def _cmd_experiment(args: argparse.Namespace) -> None:
    from probrank.experiments import run_experiment

    result = run_experiment(
        args.config, seeds=args.seeds, smoke=args.smoke, threads=args.threads_given
    )
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
    # the sessions use one torch thread unless --threads says otherwise (the warm start they
    # train and cache depends on the thread count)
    threads = {} if args.threads_given is None else {"threads": args.threads_given}
    if args.human:
        if not args.question and not args.resume:  # a resumed session's log names it
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
            **threads,
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
        **threads,
    )
    print(json.dumps(summary, indent=2) if args.json else table)


DEMO_SECTIONS = ("evaluation", "fusion", "calibration", "multitask", "interactive")
"""Names of the demo's sections (``probrank.demo.sections.SECTIONS``, kept equal by a test;
listed here so that parsing imports nothing heavy)."""


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="probrank", description="Bayesian relevance estimation toolkit.")
    add_global_options(parser, top_level=True)
    parser.set_defaults(torch=False)
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "eval",
        help="evaluate runs exactly as trec_eval 10 does (double precision)",
        description="Evaluate TREC runs exactly as trec_eval 10.0 does, in double precision.",
        epilog=_eval_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("qrels", help="TREC qrels file (.gz allowed)")
    ev.add_argument("runs", nargs="+", help="TREC run files (.gz allowed)")
    ev.add_argument(
        "-m",
        "--measures",
        action="extend",
        nargs="+",
        metavar="MEASURE",
        help="measure names, ir-measures or trec_eval spelling (see below); repeatable",
    )
    ev.add_argument(
        "-l",
        "--level",
        type=at_least(0, "an integer >= 0"),
        default=None,
        help="lowest grade that counts as relevant (trec_eval -l; default 1)",
    )
    ev.add_argument(
        "-c", "--complete", action="store_true", help="average over every qrels topic (-c)"
    )
    ev.add_argument(
        "-M",
        "--depth",
        type=positive_int,
        default=None,
        help="evaluate each topic's top DEPTH documents only (trec_eval -M)",
    )
    ev.add_argument("-q", "--per-query", action="store_true", help="also print per-topic values")
    ev.add_argument("--compare", action="store_true", help="test every run against the first")
    ev.add_argument("--test", default="t", choices=["t", "wilcoxon", "randomization"])
    ev.add_argument("--correction", default="holm", choices=["holm", "bonferroni", "none"])
    ev.add_argument("--json", action="store_true", help="print JSON {run: {measure: value}}")
    ev.set_defaults(handler=_cmd_eval)

    demo = sub.add_parser("demo", help="run the models on generated data and write a report")
    demo.add_argument("-o", "--output", default="probrank-demo", help="report folder")
    demo.add_argument("--seed", type=seed, default=0, help="seed of the data and the models")
    demo.add_argument("--quick", action="store_true", help="smallest sizes (for tests)")
    demo.add_argument(
        "--sections",
        nargs="+",
        choices=DEMO_SECTIONS,
        default=None,
        metavar="SECTION",
        help=f"run only these sections ({', '.join(DEMO_SECTIONS)}; default all)",
    )
    demo.set_defaults(handler=_cmd_demo, torch=True)

    exp = sub.add_parser("experiment", help="run an experiment config (models/*/*.toml)")
    exp.add_argument("config", help="TOML config")
    exp.add_argument("--seeds", type=positive_int, default=3, help="seeds 0 .. N-1 (default 3)")
    exp.add_argument("--smoke", action="store_true", help="tiny sizes, to check the pipeline")
    exp.add_argument("--json", action="store_true", help="print JSON {method: {measure: value}}")
    exp.set_defaults(handler=_cmd_experiment, torch=True)

    fuse = sub.add_parser("fuse", help="fuse runs (learned methods by cross-validation)")
    fuse.add_argument("qrels")
    fuse.add_argument("runs", nargs="+")
    fuse.add_argument(
        "--method",
        default="combsum",
        choices=["combsum", "combmnz", "combmax", "rrf", "meta", "qlfusion", "qlfusion_plus"],
    )
    fuse.add_argument("--norm", default="minmax", choices=["minmax", "zscore", "sum", "rank"])
    fuse.add_argument("--depth", type=positive_int, default=100, help="documents per list")
    fuse.add_argument(
        "--top-runs", type=positive_int, default=None, help="fuse the N runs of highest MAP"
    )
    fuse.add_argument(
        "--folds",
        type=at_least(3, "an integer >= 3"),
        default=10,
        help="cross-validation folds over topics, 3 to the number of topics (learned methods)",
    )
    fuse.add_argument("--seed", type=seed, default=0)
    fuse.add_argument(
        "--on-duplicate",
        default="error",
        choices=["error", "max", "first"],
        help="a document ranked twice for one query in a run file (default: an error)",
    )
    fuse.add_argument("-o", "--output", required=True)
    fuse.add_argument("--json", action="store_true")
    fuse.set_defaults(handler=_cmd_fuse, torch=True)

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
    inter.add_argument("--rounds", type=positive_int, default=None, help="judgements (default 4)")
    inter.add_argument(
        "--noise", type=positive_float, default=0.3, help="simulated user's noise t (> 0)"
    )
    inter.add_argument("--seeds", type=positive_int, default=3)
    inter.add_argument(
        "--max-questions", type=positive_int, default=None, help="first N questions only"
    )
    inter.add_argument("--config", default=None, help="TOML with option tables to override")
    inter.add_argument("--json", action="store_true", help="print the curves as JSON")
    inter.add_argument("--human", action="store_true", help="you answer, in the terminal")
    inter.add_argument("--question", default=None, help="question id for --human (e.g. TQ5)")
    inter.add_argument("--seed", type=seed, default=0, help="seed of a --human session")
    inter.add_argument("--log", default=None, help="--human: durable JSONL session log to create")
    inter.add_argument("--resume", default=None, help="--human: session log to resume")
    inter.set_defaults(handler=_cmd_interactive, torch=True)
    for command in sub.choices.values():
        add_global_options(command, top_level=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``probrank`` console script; returns the exit code.

    The one place where errors are caught: whatever a command raises ends as one line on
    stderr (see the module docstring).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    with sigterm_raises():
        try:
            args = _parser().parse_args(argv)
            debug = args.debug
            _run(args)
            sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:
            silence_stdout()
            return 0
        except KeyboardInterrupt:
            print("probrank: interrupted", file=sys.stderr)
            return 130
        except Terminated:
            print("probrank: error: terminated (SIGTERM)", file=sys.stderr)
            return 143
        except Exception as exc:  # every error becomes one line
            if debug and not isinstance(exc, UsageError):
                traceback.print_exc()
            print(f"probrank: error: {describe_error(exc)}", file=sys.stderr)
            return 2
    return 0


def _run(args: argparse.Namespace) -> None:
    """Size the thread pools, then call the command's handler."""
    if getattr(args, "command", None) == "interactive":
        args.rounds_given = args.rounds is not None
        args.rounds = 4 if args.rounds is None else args.rounds
    args.threads_given = args.threads
    handler: Callable[[argparse.Namespace], None] = args.handler
    with thread_scope(args.threads, torch=args.torch):
        handler(args)


if __name__ == "__main__":
    sys.exit(main())
