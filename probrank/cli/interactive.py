"""``probrank interactive``: a simulated cell as a table or JSON, or a ``--human`` session
(the work: :mod:`probrank.experiments.interactive.commands`)."""

from __future__ import annotations

import argparse

from probrank.cli._parsing import bounded, enum_values, positive_float, seed, strict_json
from probrank.exceptions import InputDataError

__all__ = ["DEFAULT_ROUNDS", "TORCH", "add_arguments", "run"]

TORCH = True

DEFAULT_ROUNDS = 4
"""Judgements per question when ``--rounds`` is not given (a ``--human`` session: all)."""
MAX_ROUNDS = 100_000
"""Largest ``--rounds``."""
MAX_SEEDS = 1000
"""Largest ``--seeds``."""
MAX_QUESTIONS = 10**9
"""Largest ``--max-questions``."""


def add_arguments(inter: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank interactive``."""
    from probrank.acquisition.select import Strategy
    from probrank.data.datasets import DatasetName, dataset_names
    from probrank.models.interactive.settings import PosteriorKind

    inter.description = (
        "Interactive answer selection: the interactive Bayesian ranker asks which of two "
        "answers is better, a simulated user (or you, with --human) answers, and the ranking "
        "improves with each judgement; prints the quality curve over rounds, averaged over "
        "seeds."
    )
    inter.add_argument(
        "--data",
        default=DatasetName.LIVEQA_MED.value,
        choices=dataset_names(graded=True),
        help=f"questions and graded answers (default {DatasetName.LIVEQA_MED.value})",
    )
    inter.add_argument("--split", default="test", help="mediqa split (liveqa-med: test only)")
    inter.add_argument(
        "--posterior",
        default=PosteriorKind.LAPLACE.value,
        choices=enum_values(PosteriorKind),
        help=f"the ranker's posterior over utilities (default {PosteriorKind.LAPLACE.value})",
    )
    inter.add_argument(
        "--strategy",
        default=Strategy.EI.value,
        choices=enum_values(Strategy),
        help=f"how the next pair is chosen (default {Strategy.EI.value}: expected improvement)",
    )
    inter.add_argument(
        "--rounds",
        type=bounded(MAX_ROUNDS),
        default=None,
        help=f"judgements (default {DEFAULT_ROUNDS})",
    )
    inter.add_argument(
        "--noise", type=positive_float, default=0.3, help="simulated user's noise t (> 0)"
    )
    inter.add_argument(
        "--seeds",
        type=bounded(MAX_SEEDS),
        default=3,
        help="simulated sessions per question, seeds 0 .. N-1, averaged (default 3)",
    )
    inter.add_argument(
        "--max-questions", type=bounded(MAX_QUESTIONS), default=None, help="first N questions only"
    )
    inter.add_argument("--config", default=None, help="TOML with option tables to override")
    inter.add_argument("--json", action="store_true", help="print the curves as JSON")
    inter.add_argument("--human", action="store_true", help="you answer, in the terminal")
    inter.add_argument("--question", default=None, help="question id for --human (e.g. TQ5)")
    inter.add_argument("--seed", type=seed, default=0, help="seed of a --human session")
    inter.add_argument("--log", default=None, help="--human: durable JSONL session log to create")
    inter.add_argument("--resume", default=None, help="--human: session log to resume")


def run(args: argparse.Namespace) -> None:
    """A ``--human`` session, or one simulated cell printed as a table or JSON."""
    from probrank.experiments.interactive import commands

    # the sessions use one torch thread unless --threads says otherwise (the warm start they
    # train and cache depends on the thread count)
    threads = {} if args.threads_given is None else {"threads": args.threads_given}
    if args.human:
        if not args.question and not args.resume:  # a resumed session's log names it
            raise InputDataError("--human needs --question (e.g. --question TQ5)")
        commands.human_session(
            data=args.data,
            question=args.question,
            posterior=args.posterior,
            strategy=args.strategy,
            rounds=args.rounds,
            seed=args.seed,
            log=args.log,
            resume=args.resume,
            config=args.config,
            **threads,
        )
        return
    table, summary = commands.interactive_command(
        data=args.data,
        posterior=args.posterior,
        strategy=args.strategy,
        rounds=DEFAULT_ROUNDS if args.rounds is None else args.rounds,
        noise=args.noise,
        seeds=args.seeds,
        split=args.split,
        max_questions=args.max_questions,
        config=args.config,
        progress=not args.json,
        **threads,
    )
    print(strict_json(summary) if args.json else table)
