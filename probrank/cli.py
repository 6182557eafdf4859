"""The ``probrank`` command: parses arguments and calls the public API; nothing else.

Every error, of any kind and from any command, is caught in one place (:func:`main`) and becomes
one line ``probrank: error: <file>:<line>: <what>`` on stderr and exit code 2; ``--debug`` adds
the traceback. Command-line errors are one line too. A closed output pipe ends the command
quietly, Ctrl-C with ``probrank: interrupted`` and exit code 130, SIGTERM with one line and
exit code 143: never a traceback or a death by signal. ``--threads N`` (before or after the
subcommand) sizes every thread pool (:mod:`probrank._threads`) before numpy or torch loads;
``-v`` / ``-q`` set the log level of the ``probrank`` loggers (``-q`` also turns progress bars
off; :func:`probrank._cli.logging_scope`).

Option choices come from the registries and enums they name (fusion methods, data sets,
posteriors, strategies, demo sections, ...), never from lists repeated here. Those live in
modules that may load numpy or torch, so the parser is built in two steps: the command's name
(and ``--threads``) are read first, the thread pools are sized, and only then is the chosen
command's full parser built (:func:`_parser`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probrank._cli import (
    OneLineParser,
    Terminated,
    UsageError,
    add_global_options,
    at_least,
    describe_error,
    logging_scope,
    positive_float,
    positive_int,
    seed,
    sigterm_raises,
    silence_stdout,
    threads_before_parsing,
)
from probrank._threads import configure_torch, thread_scope
from probrank.exceptions import InputDataError

__all__ = ["COMMANDS", "main"]


def _cmd_eval(args: argparse.Namespace) -> None:
    # imports neither torch, pyro, transformers nor pandas (--compare imports pandas)
    from probrank.data.trec import Run
    from probrank.evaluation.measures import DEFAULT_MEASURES, Evaluator

    _check_bayesian_options(args)
    measures = args.measures if args.measures is not None else list(DEFAULT_MEASURES)
    options = {"relevance_level": args.level, "all_queries": args.complete, "depth": args.depth}
    # measure names, -l and -M are validated before the qrels are read
    evaluator = Evaluator(args.qrels, measures, **options)
    bayesian = _bayesian_measure_names(args, evaluator) if args.bayesian else []
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
        if args.bayesian:
            _eval_bayesian(args, evaluator, runs, bayesian, table, options)
            return
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


BAYESIAN_MEASURES = ("AP", "nDCG@10", "P@10")
"""What ``--bayesian`` models when no ``-m`` is given (each measure costs sampler time)."""


def _check_bayesian_options(args: argparse.Namespace) -> None:
    """The Bayesian options' combinations, checked before any file is read."""
    given = [
        flag
        for flag, value in (
            ("--rope", args.rope),
            ("--plot", args.plot),
            ("--chains", args.chains),
            ("--draws", args.draws),
            ("--warmup", args.warmup),
            ("--seed", args.seed),
        )
        if value is not None
    ]
    if given and not args.bayesian:
        raise InputDataError(f"{', '.join(given)}: only with --compare --bayesian")
    if args.bayesian and not args.compare:
        raise InputDataError("--bayesian needs --compare (it compares every run with the first)")
    if args.compare and len(args.runs) < 2:
        raise InputDataError("--compare needs a baseline run and at least one other run")
    if args.plot is not None:
        from probrank._files import check_output_path

        check_output_path(args.plot)


def _bayesian_measure_names(args: argparse.Namespace, evaluator: Any) -> list[str]:
    """The measures ``--bayesian`` models: those of ``-m`` in [0, 1], or
    :data:`BAYESIAN_MEASURES`."""
    if args.measures is None:
        return list(BAYESIAN_MEASURES)
    from probrank.evaluation.bayesian import bayesian_measures

    names = bayesian_measures(evaluator)
    if not names:
        raise InputDataError(
            "--bayesian models measures in [0, 1]; -m gave only counts, num_q or gm_map"
        )
    return names


def _eval_bayesian(
    args: argparse.Namespace,
    evaluator: Any,
    runs: list[Any],
    measures: list[str],
    table: Any,
    options: dict[str, Any],
) -> None:
    """``eval --compare --bayesian``: the frequentist table, then the Bayesian comparison."""
    import warnings

    from probrank.evaluation.bayesian import bayesian_compare
    from probrank.exceptions import ConvergenceWarning

    settings = {
        key: value
        for key, value in (
            ("rope", args.rope),
            ("num_chains", args.chains),
            ("num_samples", args.draws),
            ("warmup_steps", args.warmup),
            ("seed", args.seed),
        )
        if value is not None
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = bayesian_compare(
            evaluator.qrels, runs, measures, progress=not args.json, **settings, **options
        )
    for warning in caught:
        if issubclass(warning.category, ConvergenceWarning):
            print(f"probrank: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    if args.plot is not None:
        from probrank.evaluation.bayesian_plots import plot_posterior_differences

        plot_posterior_differences(result, args.plot)
    if args.json:
        chains, draws = result.draws.shape[:2]
        check = result.convergence
        model = {
            "likelihood": result.likelihood.value,
            "topics": result.num_topics,
            "rope": result.rope,
            "interval": result.interval,
            "chains": chains,
            "draws": draws,
            "converged": check.converged,
            "max_rhat": check.max_rhat if check.max_rhat == check.max_rhat else None,
            "min_ess": check.min_ess,
            "divergences": check.divergences,
            "messages": check.messages,
        }
        output = {
            "frequentist": json.loads(table.to_json(orient="records")),
            "bayesian": result.to_json(),
            "bayesian_ranking": result.ranking_json(),
            "bayesian_model": model,
        }
        print(json.dumps(output, indent=2))
        return
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print(result.describe())
    print(result.table())
    if args.plot is not None:
        print(f"\nposterior differences plotted to {args.plot}")


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
    from probrank.experiments.provenance import default_run_dir

    out = Path(args.out) if args.out is not None else default_run_dir(args.config)
    result = run_experiment(
        args.config,
        seeds=args.seeds,
        smoke=args.smoke,
        threads=args.threads_given,
        out=out,
        update_card=args.update_card,
        executor=args.executor,
        ray_address=args.ray_address,
    )
    print(result.to_json() if args.json else result.table())


def _cmd_encode(args: argparse.Namespace) -> None:
    module = importlib.import_module("probrank._encode_command")
    module.print_report(module.encode_command_from_args(args), args.json)


def _cmd_fuse(args: argparse.Namespace) -> None:
    module = importlib.import_module("probrank._fuse_command")
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
        optimiser=args.optimise,
        budget=args.budget,
    )
    if args.json:
        print(json.dumps({"fused": values}, indent=2))
    else:
        for name, value in values.items():
            print(f"{name:<22}\tall\t{value:.4f}")


def _cmd_interactive(args: argparse.Namespace) -> None:
    module = importlib.import_module("probrank.experiments.interactive.commands")
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


def _cmd_serve(args: argparse.Namespace) -> None:
    from probrank.serve.server import ServeOptions, serve

    serve(
        ServeOptions(
            data=args.data,
            topics=args.topics,
            run=args.run,
            documents=args.docs,
            depth=args.depth,
            db=args.db,
            host=args.host,
            port=args.port,
            posterior=args.posterior,
            strategy=args.strategy,
            seed=args.seed,
            rounds=args.rounds,
            model=args.model,
            threads=args.threads_given or 1,  # one torch thread per judgement round
        )
    )


def _values(kind: Any) -> list[str]:
    """The values of a ``str`` enum, in definition order (for ``choices``)."""
    return [member.value for member in kind]


def _eval_arguments(ev: argparse.ArgumentParser) -> None:
    from probrank.evaluation.significance_kinds import Correction, SignificanceTest

    ev.description = "Evaluate TREC runs exactly as trec_eval 10.0 does, in double precision."
    ev.epilog = _eval_epilog()
    ev.formatter_class = argparse.RawDescriptionHelpFormatter
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
    ev.add_argument("--test", default="t", choices=_values(SignificanceTest))
    ev.add_argument("--correction", default="holm", choices=_values(Correction))
    ev.add_argument("--json", action="store_true", help="print JSON {run: {measure: value}}")
    bayes = ev.add_argument_group(
        "Bayesian comparison (--compare --bayesian)",
        "A hierarchical model of the per-topic values (truncated normal on [0, 1], topic "
        "effects) fitted with NUTS: per measure and run against the first, the posterior mean "
        "difference, a 95%% credible interval, P(B > A) and P(|B - A| < ROPE); pairwise "
        "P(better) and P(best). Measures in [0, 1] of -m (default AP nDCG@10 P@10).",
    )
    bayes.add_argument("--bayesian", action="store_true", help="add the Bayesian comparison")
    bayes.add_argument(
        "--rope",
        type=positive_float,
        default=None,
        metavar="R",
        help="region of practical equivalence |B - A| < R (default 0.01)",
    )
    bayes.add_argument(
        "--plot", default=None, metavar="FILE", help="PNG of the posterior differences"
    )
    bayes.add_argument("--chains", type=positive_int, default=None, help="NUTS chains (4)")
    bayes.add_argument("--draws", type=positive_int, default=None, help="draws per chain (500)")
    bayes.add_argument(
        "--warmup", type=positive_int, default=None, help="warm-up steps per chain (300)"
    )
    bayes.add_argument("--seed", type=seed, default=None, help="chain c gets seed + c (0)")


def _demo_arguments(demo: argparse.ArgumentParser) -> None:
    from probrank.demo.context import DemoSection

    sections = _values(DemoSection)
    demo.add_argument("-o", "--output", default="probrank-demo", help="report folder")
    demo.add_argument("--seed", type=seed, default=0, help="seed of the data and the models")
    demo.add_argument("--quick", action="store_true", help="smallest sizes (for tests)")
    demo.add_argument(
        "--sections",
        nargs="+",
        choices=sections,
        default=None,
        metavar="SECTION",
        help=f"run only these sections ({', '.join(sections)}; default all)",
    )


def _experiment_arguments(exp: argparse.ArgumentParser) -> None:
    from probrank.experiments import PROTOCOLS

    exp.description = (
        f"Run an experiment config of one of the protocols {', '.join(PROTOCOLS)}; the results "
        "JSON (with provenance) and figures go to a run folder."
    )
    exp.add_argument("config", help="TOML config")
    exp.add_argument("--seeds", type=positive_int, default=3, help="seeds 0 .. N-1 (default 3)")
    exp.add_argument("--smoke", action="store_true", help="tiny sizes, to check the pipeline")
    exp.add_argument("--json", action="store_true", help="print JSON {method: {measure: value}}")
    exp.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="run folder for the results JSON and figures (default runs/<config>-<UTC time>/)",
    )
    exp.add_argument(
        "--update-card",
        action="store_true",
        help="also replace the model card's committed results (<config folder>/results/)",
    )
    importlib.import_module("probrank._encode_command").add_executor_arguments(exp)


def _encode_arguments(enc: argparse.ArgumentParser) -> None:
    importlib.import_module("probrank._encode_command").add_encode_arguments(enc)


def _fuse_arguments(fuse: argparse.ArgumentParser) -> None:
    from probrank._fuse_command import fuse_methods
    from probrank.data.trec import OnDuplicate
    from probrank.fusion.normalize import Normalization
    from probrank.fusion.optimize import DEFAULT_BUDGET, Optimiser

    fuse.add_argument("qrels")
    fuse.add_argument("runs", nargs="+")
    fuse.add_argument("--method", default="combsum", choices=fuse_methods())
    fuse.add_argument("--norm", default="minmax", choices=_values(Normalization))
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
        "--optimise",
        default=Optimiser.BOTORCH.value,
        choices=_values(Optimiser),
        help="weight search of wsum, wmnz, wrrf on each fold's training topics: BoTorch's "
        "qLogNEI within --budget evaluations, or a grid of step 0.1 (default: botorch)",
    )
    fuse.add_argument(
        "--budget",
        type=positive_int,
        default=DEFAULT_BUDGET,
        help=f"objective evaluations per fold of --optimise botorch (default {DEFAULT_BUDGET})",
    )
    fuse.add_argument(
        "--on-duplicate",
        default="error",
        choices=_values(OnDuplicate),
        help="a document ranked twice for one query in a run file (default: an error)",
    )
    fuse.add_argument("-o", "--output", required=True)
    fuse.add_argument("--json", action="store_true")


def _interactive_arguments(inter: argparse.ArgumentParser) -> None:
    from probrank.acquisition.select import Strategy
    from probrank.data.datasets import DatasetName, dataset_names
    from probrank.models.interactive.settings import PosteriorKind

    inter.add_argument(
        "--data", default=DatasetName.LIVEQA_MED.value, choices=dataset_names(graded=True)
    )
    inter.add_argument("--split", default="test", help="mediqa split (liveqa-med: test only)")
    inter.add_argument(
        "--posterior", default=PosteriorKind.LAPLACE.value, choices=_values(PosteriorKind)
    )
    inter.add_argument("--strategy", default=Strategy.EI.value, choices=_values(Strategy))
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


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    from probrank.acquisition.select import Strategy
    from probrank.models.interactive.settings import PosteriorKind
    from probrank.serve.server import DEFAULT_DB, DEFAULT_PORT
    from probrank.serve.sources import dataset_choices

    serve.description = (
        "Serve the pairwise judging pages: annotators judge which of two answers is better, "
        "the interactive ranker chooses the pairs; judgements go to a SQLite database."
    )
    serve.add_argument(
        "--data",
        default=None,
        help=f"data set ({', '.join(dataset_choices())}; default liveqa-med) or a .jsonl / .csv "
        "file of questions and candidates",
    )
    serve.add_argument("--topics", default=None, help="TREC topics (with --run and --docs)")
    serve.add_argument("--run", default=None, help="TREC run whose top documents are judged")
    serve.add_argument("--docs", default=None, help="document texts: TREC <DOC> file or JSONL")
    serve.add_argument(
        "--depth", type=at_least(2, "an integer >= 2"), default=20, help="documents per topic"
    )
    serve.add_argument("--db", default=DEFAULT_DB, help=f"SQLite database (default {DEFAULT_DB})")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine)"
    )
    serve.add_argument(
        "--port",
        type=at_least(0, "a port number"),
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0: any free port)",
    )
    serve.add_argument("--posterior", default=None, choices=_values(PosteriorKind))
    serve.add_argument("--strategy", default=None, choices=_values(Strategy))
    serve.add_argument("--seed", type=seed, default=0, help="seed of the warm start and sessions")
    serve.add_argument(
        "--rounds", type=positive_int, default=None, help="judgements per question (default all)"
    )
    serve.add_argument("--model", default=None, help="a saved InteractiveRanker folder")


@dataclass(frozen=True)
class Command:
    """One subcommand: its one-line help, the function that adds its arguments (called only
    when the command is the one being run, or for its ``--help``), its handler (best the name
    of a function of this module, looked up when the parser is built, so that a test can
    replace it), and whether it uses torch (its pools are then sized too)."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: str | Callable[[argparse.Namespace], None]
    torch: bool


COMMANDS: dict[str, Command] = {
    "eval": Command(
        "evaluate runs exactly as trec_eval 10 does (double precision)",
        _eval_arguments,
        "_cmd_eval",
        torch=False,
    ),
    "demo": Command(
        "run the models on generated data and write a report", _demo_arguments, "_cmd_demo", True
    ),
    "experiment": Command(
        "run an experiment config (models/*/*.toml)", _experiment_arguments, "_cmd_experiment", True
    ),
    "encode": Command(
        "encode a collection into the encoder cache (locally or on Ray)",
        _encode_arguments,
        "_cmd_encode",
        True,
    ),
    "fuse": Command(
        "fuse runs (learned methods by cross-validation)", _fuse_arguments, "_cmd_fuse", True
    ),
    "interactive": Command(
        "simulated (or --human) interactive answer selection",
        _interactive_arguments,
        "_cmd_interactive",
        True,
    ),
    "serve": Command(
        "web pages for pairwise relevance judging by many annotators",
        _serve_arguments,
        "_cmd_serve",
        True,
    ),
}
"""The subcommands, by name, in ``--help`` order."""


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full arguments of ``command`` only (the others are listed, and
    accept only the global options: they are not the one being run)."""
    parser = OneLineParser(prog="probrank", description="Bayesian relevance estimation toolkit.")
    add_global_options(parser, top_level=True)
    parser.set_defaults(torch=False)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, spec in COMMANDS.items():
        child = sub.add_parser(name, help=spec.help)
        if name == command:
            spec.arguments(child)
        handler = globals()[spec.handler] if isinstance(spec.handler, str) else spec.handler
        child.set_defaults(handler=handler, torch=spec.torch)
        add_global_options(child, top_level=False)
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
            threads, command = threads_before_parsing(argv, COMMANDS)
            with thread_scope(threads) as count:
                args = _parser(command).parse_args(argv)
                debug = args.debug
                _run(args, count)
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


def _run(args: argparse.Namespace, threads: int) -> None:
    """Size torch's pools (commands that use torch), set up logging, call the handler."""
    if getattr(args, "command", None) == "interactive":
        args.rounds_given = args.rounds is not None
        args.rounds = 4 if args.rounds is None else args.rounds
    args.threads_given = args.threads
    handler: Callable[[argparse.Namespace], None] = args.handler
    if args.torch:
        configure_torch(threads)
    with logging_scope(args.verbose - args.quiet):
        handler(args)


if __name__ == "__main__":
    sys.exit(main())
