"""``probrank experiment``: run an experiment config (:func:`probrank.experiments.run_experiment`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from probrank.cli._parsing import positive_int
from probrank.cli.encode import add_executor_arguments

TORCH = True


def add_arguments(exp: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank experiment``."""
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
    add_executor_arguments(exp)


def run(args: argparse.Namespace) -> None:
    """Run the config; print the results table or JSON."""
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
