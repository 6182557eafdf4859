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

    fuse.add_argument("qrels")
    fuse.add_argument("runs", nargs="+")
    fuse.add_argument("--method", default="combsum", choices=fuse_methods())
    fuse.add_argument("--norm", default="minmax", choices=enum_values(Normalization))
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
    fuse.add_argument("-o", "--output", required=True)
    fuse.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> None:
    """Fuse, write the fused run, print its measures."""
    from probrank.experiments.fuse import fuse_command

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
    )
    if args.json:
        print(strict_json({"fused": values}))
    else:
        for name, value in values.items():
            print(f"{name:<22}\tall\t{value:.4f}")
