"""``probrank fuse``: fuse run files and write the fused run
(the work: :func:`probrank.experiments.fuse.fuse_command`)."""

from __future__ import annotations

import argparse

from probrank.cli._parsing import at_least, enum_values, positive_int, seed, strict_json

__all__ = ["TORCH", "add_arguments", "run"]

TORCH = True


def add_arguments(fuse: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank fuse``."""
    from probrank.data.trec import OnDuplicate
    from probrank.experiments.fuse import fuse_methods
    from probrank.fusion.normalize import Normalization
    from probrank.fusion.optimize import DEFAULT_BUDGET, Optimiser
    from probrank.models.qlfusion.settings import PROPORTION_LIKELIHOODS

    fuse.description = (
        "Fuse TREC runs into one and print its measures: unsupervised methods (CombSUM, "
        "CombMNZ, RRF, ...) fuse every topic; learned ones (QLFusion, ProbFuse, weighted "
        "sums, ...) are cross-validated over folds of the judged topics, each topic fused by "
        "what was trained without it."
    )
    fuse.add_argument("qrels", help="TREC qrels file (.gz allowed): measures, training, --top-runs")
    fuse.add_argument("runs", nargs="+", help="TREC run files to fuse (.gz allowed)")
    fuse.add_argument(
        "--method",
        default="combsum",
        choices=fuse_methods(),
        help="fusion method (default combsum; qlfusion: the quantifier-weighted CombSUM, "
        "cross-fitted)",
    )
    fuse.add_argument(
        "--norm",
        default="minmax",
        choices=enum_values(Normalization),
        help="score normalisation of each list before fusing (default minmax)",
    )
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
    fuse.add_argument(
        "--seed", type=seed, default=0, help="seed of the folds and of training (default 0)"
    )
    fuse.add_argument(
        "--optimise",
        default=Optimiser.BOTORCH.value,
        choices=enum_values(Optimiser),
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
        choices=enum_values(OnDuplicate),
        help="a document ranked twice for one query in a run file (default: an error)",
    )
    fuse.add_argument("-o", "--output", required=True, help="the fused run file to write")
    fuse.add_argument("--json", action="store_true", help='print JSON {"fused": {measure: value}}')
    qlfusion = fuse.add_argument_group(
        "QLFusion (--method qlfusion or qlfusion_plus)",
        "The quantifiers' settings: a file, then a prior and a likelihood; your own "
        "'module.path:callable' is imported from the settings file's folder (the current "
        "folder for --prior / --likelihood) and checked before any run is read.",
    )
    qlfusion.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="TOML of QLFusionSettings keys, at its top level or in a [quantifier] table "
        "(a models/qlfusion/*.toml works); depth and seed come from --depth and --seed",
    )
    qlfusion.add_argument(
        "--prior",
        default=None,
        metavar="PRIOR",
        help="the output layer's weight prior: 'normal' or 'module.path:callable'",
    )
    qlfusion.add_argument(
        "--prior-arg",
        action="append",
        default=None,
        type=_key_value,
        metavar="KEY=VALUE",
        help="a keyword argument of --prior (repeatable), e.g. scale=0.5",
    )
    qlfusion.add_argument(
        "--likelihood",
        default=None,
        metavar="LIKELIHOOD",
        help=f"the counts' likelihood: {', '.join(PROPORTION_LIKELIHOODS)} or "
        "'module.path:callable'",
    )
    qlfusion.add_argument(
        "--likelihood-arg",
        action="append",
        default=None,
        type=_key_value,
        metavar="KEY=VALUE",
        help="a keyword argument of --likelihood (repeatable), e.g. concentration=10",
    )


def _key_value(text: str) -> tuple[str, object]:
    """argparse ``type``: ``KEY=VALUE``, the value a number, true/false or text."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, got {text!r}")
    try:
        parsed: object = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


_QLFUSION_OPTIONS = ("settings", "prior", "prior_arg", "likelihood", "likelihood_arg")


def run(args: argparse.Namespace) -> None:
    """Fuse, write the fused run, print its measures."""
    from probrank.exceptions import InputDataError
    from probrank.experiments.fuse import fuse_command, qlfusion_settings
    from probrank.models.qlfusion import LearnedFusion

    given = [name for name in _QLFUSION_OPTIONS if getattr(args, name) is not None]
    settings = None
    if args.method in {m.value for m in LearnedFusion}:
        settings = qlfusion_settings(
            args.settings,
            prior=args.prior,
            prior_args=None if args.prior_arg is None else dict(args.prior_arg),
            likelihood=args.likelihood,
            likelihood_args=None if args.likelihood_arg is None else dict(args.likelihood_arg),
        )
    elif given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InputDataError(f"{options}: only with --method qlfusion or qlfusion_plus")
    values = fuse_command(
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
        settings=settings,
    )
    if args.json:
        print(strict_json({"fused": values}))
    else:
        for name, value in values.items():
            print(f"{name:<22}\tall\t{value:.4f}")
