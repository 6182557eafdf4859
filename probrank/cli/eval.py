"""``probrank eval``: evaluate runs exactly as trec_eval 10.0 does, in double precision; with
``--compare`` paired tests against the first run, with ``--bayesian`` the Bayesian comparison.

Imports neither torch, pyro, transformers nor pandas (``--compare`` imports pandas).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from probrank.cli._parsing import (
    OneLineParser,
    at_least,
    bounded,
    enum_values,
    positive_float,
    seed,
    strict_json,
)
from probrank.exceptions import InputDataError

__all__ = ["BAYESIAN_MEASURES", "TORCH", "add_arguments", "run"]

TORCH = False

MAX_LEVEL = 2**63 - 1
"""Largest ``-l``: a grade is an int64."""
MAX_DEPTH = 10**9
"""Largest ``-M``: documents per topic."""
MAX_CHAINS = 64
"""Largest ``--chains``."""
MAX_DRAWS = 1_000_000
"""Largest ``--draws`` and ``--warmup`` (per chain)."""

BAYESIAN_MEASURES = ("AP", "nDCG@10", "P@10")
"""What ``--bayesian`` models when no ``-m`` is given (each measure costs sampler time)."""


def run(args: argparse.Namespace) -> None:
    """Evaluate (trec_eval's lines, or JSON), or compare the runs with the first."""
    from probrank.data.trec import Run
    from probrank.evaluation.measures import DEFAULT_MEASURES, Evaluator

    _files(args)
    _check_bayesian_options(args)
    measures = args.measures if args.measures is not None else list(DEFAULT_MEASURES)
    options = {"relevance_level": args.level, "all_queries": args.complete, "depth": args.depth}
    # measure names, -l and -M are validated before the qrels are read
    evaluator = Evaluator(args.qrels, measures, **options)
    bayesian = _bayesian_measure_names(args, evaluator) if args.bayesian else []
    if args.compare:
        runs = [Run.read(path) for path in args.runs]
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
    # every run read (several files at a time) and evaluated together
    for result in evaluator.evaluate_many(args.runs):
        values, totals = result.per_query, result.totals
        if args.json:
            output[result.name] = {**values, "all": totals} if args.per_query else dict(totals)
            continue
        lines = [f"{'runid':<22}\tall\t{result.tag}"]
        if args.per_query:
            for qid, row in values.items():
                lines.extend(_line(name, qid, row[name], name in counts) for name in per_topic)
        lines.extend(_line(name, "all", totals[name], name in counts) for name in evaluator.names)
        print("\n".join(lines))
    if args.json:
        print(strict_json(output))


class _MeasureAction(argparse.Action):
    """``-m``: the measures, and where each ``-m``'s values start (for :func:`_files`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        measures = list(getattr(namespace, self.dest, None) or [])
        groups = list(getattr(namespace, "measure_groups", None) or [])
        groups.append(len(measures))
        setattr(namespace, self.dest, measures + list(values))
        namespace.measure_groups = groups


def _files(args: argparse.Namespace) -> None:
    """The qrels and run files, taken from the last ``-m``'s values where argparse put them.

    ``-m`` takes one measure when files follow it, as trec_eval's does (``-m map -m P.10 qrels
    run``: argparse gives ``P.10 qrels run`` to the last ``-m``); after the files it may take
    several (``qrels run -m AP P@10``). The files are taken from the ``-m`` values only when
    the qrels or the runs are missing otherwise.

    Raises:
        UsageError: no qrels or no run file.
    """
    from probrank.cli._parsing import UsageError

    starts = getattr(args, "measure_groups", None) or []
    missing = args.qrels is None or not args.runs
    if missing and starts and args.measures is not None:
        # each -m's first value is its measure, the values argparse added after it are files
        ends = [*starts[1:], len(args.measures)]
        groups = [args.measures[a:b] for a, b in zip(starts, ends, strict=True)]
        args.measures = [group[0] for group in groups]
        files = [path for group in groups for path in group[1:]]
        if args.qrels is None and files:
            args.qrels, files = files[0], files[1:]
        args.runs = [*(args.runs or []), *files]
    if args.qrels is None or not args.runs:
        needed = "qrels, runs" if args.qrels is None else "runs"
        raise UsageError(
            f"eval: the following arguments are required: {needed} (see 'probrank eval --help')"
        )


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
            ("--likelihood", args.likelihood),
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
    from probrank.evaluation.bayesian_report import comparison_report
    from probrank.exceptions import ConvergenceWarning

    settings = {
        key: value
        for key, value in (
            ("rope", args.rope),
            ("num_chains", args.chains),
            ("num_samples", args.draws),
            ("warmup_steps", args.warmup),
            ("seed", args.seed),
            ("likelihood", args.likelihood),
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
        print(strict_json(comparison_report(table, result)))
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


def _epilog() -> str:
    """``probrank eval --help``'s list of measures and notes."""
    from probrank.evaluation.measures import DEFAULT_MEASURES
    from probrank.evaluation.trec_eval.names import measure_help

    return f"""measures (-m NAME, one per -m as trec_eval's, repeatable; after the files -m A B
also works; every name is checked first):
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


def add_arguments(ev: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank eval``."""
    from probrank.evaluation.bayesian_likelihood import Likelihood
    from probrank.evaluation.significance_kinds import Correction, SignificanceTest

    ev.description = "Evaluate TREC runs exactly as trec_eval 10.0 does, in double precision."
    ev.epilog = None
    if isinstance(ev, OneLineParser):
        ev.epilog_factory = _epilog  # built when --help prints it
    else:  # pragma: no cover - probrank's parsers are OneLineParsers
        ev.epilog = _epilog()
    ev.formatter_class = argparse.RawDescriptionHelpFormatter
    ev.usage = "%(prog)s [options] [-m MEASURE]... qrels runs [runs ...]"
    # optional in argparse's eyes: trec_eval's "-m map -m P.10 qrels run" leaves the files
    # after the last -m, and _files() takes them from there
    ev.add_argument("qrels", nargs="?", help="TREC qrels file (.gz allowed)")
    ev.add_argument("runs", nargs="*", help="TREC run files (.gz allowed)")
    ev.add_argument(
        "-m",
        "--measures",
        action=_MeasureAction,
        nargs="+",
        metavar="MEASURE",
        help="a measure, ir-measures or trec_eval spelling (see below); one per -m, repeated "
        "as trec_eval's: -m map -m ndcg_cut.10 qrels run (after the files, -m A B gives "
        "several)",
    )
    ev.add_argument(
        "-l",
        "--level",
        type=at_least(0, "an integer >= 0", maximum=MAX_LEVEL),
        default=None,
        help="lowest grade that counts as relevant (trec_eval -l; default 1)",
    )
    ev.add_argument(
        "-c", "--complete", action="store_true", help="average over every qrels topic (-c)"
    )
    ev.add_argument(
        "-M",
        "--depth",
        type=bounded(MAX_DEPTH),
        default=None,
        help="evaluate each topic's top DEPTH documents only (trec_eval -M)",
    )
    ev.add_argument("-q", "--per-query", action="store_true", help="also print per-topic values")
    ev.add_argument("--compare", action="store_true", help="test every run against the first")
    ev.add_argument(
        "--test",
        default="t",
        choices=enum_values(SignificanceTest),
        help="--compare's paired test: t-test, Wilcoxon signed-rank or randomisation (default t)",
    )
    ev.add_argument(
        "--correction",
        default="holm",
        choices=enum_values(Correction),
        help="--compare's correction of the p-values for several runs (default holm)",
    )
    ev.add_argument("--json", action="store_true", help="print JSON {run: {measure: value}}")
    bayes = ev.add_argument_group(
        "Bayesian comparison (--compare --bayesian)",
        "A model of the per-topic values (default: paired, each topic's values multivariate "
        "normal, exact posterior draws; chosen by simulation, see docs/guide/comparison.md): "
        "per measure and run against the first, the posterior mean difference, a 95% credible "
        "interval, "
        "P(B > A) and P(|B - A| < ROPE); pairwise P(better) and P(best). Measures in [0, 1] "
        "of -m (default AP nDCG@10 P@10).",
    )
    bayes.add_argument("--bayesian", action="store_true", help="add the Bayesian comparison")
    bayes.add_argument(
        "--likelihood",
        choices=enum_values(Likelihood),
        default=None,
        help="model of --bayesian: paired (default; exact, the paired t-test's posterior), "
        "bootstrap (Bayesian bootstrap, exact), normal or truncated-normal (hierarchical, NUTS)",
    )
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
    bayes.add_argument("--chains", type=bounded(MAX_CHAINS), default=None, help="chains (4)")
    bayes.add_argument(
        "--draws",
        type=bounded(MAX_DRAWS),
        default=None,
        help="draws per chain (2500 exact, 500 NUTS)",
    )
    bayes.add_argument(
        "--warmup", type=bounded(MAX_DRAWS), default=None, help="NUTS warm-up steps per chain (300)"
    )
    bayes.add_argument("--seed", type=seed, default=None, help="chain c gets seed + c (0)")
