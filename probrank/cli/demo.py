"""``probrank demo``: the models on generated data, and a report
(:func:`probrank.demo.run_demo`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from probrank.cli._parsing import enum_values, seed

__all__ = ["TORCH", "add_arguments", "run"]

TORCH = True


def add_arguments(demo: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank demo``."""
    from probrank.demo.context import DemoSection

    sections = enum_values(DemoSection)
    demo.description = (
        "Run the reference models on generated data (no downloads) and write a report: "
        "tables, figures and JSON in the report folder; --quick for the smallest sizes."
    )
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


def run(args: argparse.Namespace) -> None:
    """Run the demo."""
    from probrank.demo import run_demo

    run_demo(output_dir=Path(args.output), seed=args.seed, quick=args.quick, sections=args.sections)
