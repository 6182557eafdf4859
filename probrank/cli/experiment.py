"""``probrank experiment``: run an experiment config
(:func:`probrank.experiments.run_experiment`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from probrank.cli._parsing import bounded
from probrank.cli.encode import add_executor_arguments

__all__ = ["MAX_SEEDS", "TORCH", "add_arguments", "run"]

TORCH = True

MAX_SEEDS = 1000
"""Largest ``--seeds``: each seed is a whole protocol run (a cascade config builds one entry
per seed before the first runs)."""


def add_arguments(exp: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank experiment``."""
    from probrank.experiments import PROTOCOLS

    exp.description = (
        f"Run an experiment config of one of the protocols {', '.join(PROTOCOLS)}; the results "
        "JSON (with provenance) and figures go to a run folder."
    )
    exp.add_argument("config", help="TOML config")
    exp.add_argument(
        "--seeds",
        type=bounded(MAX_SEEDS),
        default=3,
        help=f"seeds 0 .. N-1 (default 3, at most {MAX_SEEDS})",
    )
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
    add_executor_arguments(exp)


def run(args: argparse.Namespace) -> None:
    """Run the config; print the results table or JSON."""
    from probrank.experiments import run_experiment
    from probrank.experiments.provenance import default_run_dir

    if args.out is not None:  # a file there is refused now, not after the work
        from probrank._files import check_output_folder

        check_output_folder(args.out, what="run folder (--out)")
    if args.executor == "ray" and args.ray_address is not None:
        from probrank.executors.ray_address import probe_address

        probe_address(args.ray_address)  # nothing listening: one line, not a hang
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
