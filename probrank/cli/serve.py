"""``probrank serve``: the pairwise judging pages (:func:`probrank.serve.server.serve`), or
with ``--pool RUNS_DIR`` the graded judging of single documents chosen by a pooling strategy
(:func:`probrank.serve.pool_server.serve_pool`).

``TORCH`` is False: the server binds and prints its links before torch loads; torch's pools
are sized by the preparation thread (:mod:`probrank.serve.startup`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from probrank.cli._parsing import at_least, positive_int, seed

__all__ = ["TORCH", "add_arguments", "run"]

TORCH = False


def _enum(module: str, name: str, option: str) -> Callable[[str], str]:
    """An argparse ``type`` checking a value of the enum ``module.name``, imported only when
    the option is given (the enums' modules load torch)."""

    def parse(text: str) -> str:
        from probrank._options import parse_enum

        kind = getattr(importlib.import_module(module), name)
        try:
            return str(parse_enum(kind, text, option).value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _choices_in_help(module: str, name: str) -> type[argparse.Action]:
    """A store action whose metavar lists the values of the enum ``module.name``, read only
    when ``--help`` shows it: the serve command binds and prints its links before torch
    (which the enums' modules load) is imported."""

    class ChoicesInHelp(argparse._StoreAction):
        @property  # type: ignore[override]
        def metavar(self) -> str:
            kind = getattr(importlib.import_module(module), name)
            return "{" + ",".join(member.value for member in kind) + "}"

        @metavar.setter
        def metavar(self, value: object) -> None:
            pass

    return ChoicesInHelp


def _pool_names() -> list[str]:
    from probrank.pooling.strategies import STRATEGIES

    return [name.value for name in STRATEGIES]


def _any_strategy(text: str) -> str:
    """An argparse ``type``: a pair strategy or a pooling strategy (which one is needed is
    checked once ``--pool`` is known, in :func:`run`)."""
    if text in _pool_names():  # before the pair strategies' module, which loads torch
        return text
    from probrank.acquisition.select import Strategy

    if text in {member.value for member in Strategy}:
        return text
    pairs = ", ".join(member.value for member in Strategy)
    raise argparse.ArgumentTypeError(
        f"--strategy must be one of {pairs} (pairs), or with --pool one of "
        f"{', '.join(_pool_names())}, got {text!r}"
    )


def _strategy_action() -> type[argparse.Action]:
    """The pair strategies in the metavar and the pooling strategies in the help, both read
    only when ``--help`` shows them (their modules load torch)."""

    class StrategyChoices(argparse._StoreAction):
        @property  # type: ignore[override]
        def metavar(self) -> str:
            from probrank.acquisition.select import Strategy

            return "{" + ",".join(member.value for member in Strategy) + "}"

        @metavar.setter
        def metavar(self, value: object) -> None:
            pass

        @property  # type: ignore[override]
        def help(self) -> str:
            return (
                "how the next pair is chosen (default: the ranker's); with --pool, how the next "
                f"document is chosen: {', '.join(_pool_names())} (default bayesian)"
            )

        @help.setter
        def help(self, value: object) -> None:
            pass

    return StrategyChoices


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank serve``."""
    from probrank.serve.server import DEFAULT_DB, DEFAULT_MAX_SESSIONS, DEFAULT_PORT
    from probrank.serve.sources import dataset_choices

    serve.description = (
        "Serve the pairwise judging pages: annotators judge which of two answers is better, "
        "the interactive ranker chooses the pairs; judgements go to a SQLite database. With "
        "--pool RUNS_DIR --topics TOPICS --docs COLLECTION: annotators grade single documents "
        "of the runs' pool, each chosen live by a pooling strategy; the admin page exports "
        "the judgements as TREC qrels."
    )
    serve.add_argument(
        "--pool",
        default=None,
        metavar="RUNS_DIR",
        help="a folder of TREC runs: judge their depth-DEPTH pool, one document at a time "
        "(with --topics and --docs)",
    )
    serve.add_argument(
        "--data",
        default=None,
        help=f"data set ({', '.join(dataset_choices())}; default liveqa-med) or a .jsonl / .csv "
        "file of questions and candidates",
    )
    serve.add_argument(
        "--topics", default=None, help="TREC topics (with --run or --pool, and --docs)"
    )
    serve.add_argument("--run", default=None, help="TREC run whose top documents are judged")
    serve.add_argument("--docs", default=None, help="document texts: TREC <DOC> file or JSONL")
    serve.add_argument(
        "--depth",
        type=at_least(2, "an integer >= 2"),
        default=20,
        help="documents per topic (with --pool: per run and topic in the pool; default 20)",
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
    serve.add_argument(
        "--posterior",
        default=None,
        type=_enum("probrank.models.interactive.settings", "PosteriorKind", "--posterior"),
        action=_choices_in_help("probrank.models.interactive.settings", "PosteriorKind"),
        help="the ranker's posterior (default laplace, or the saved model's)",
    )
    serve.add_argument(
        "--strategy",
        default=None,
        type=_any_strategy,
        action=_strategy_action(),
    )
    serve.add_argument("--seed", type=seed, default=0, help="seed of the warm start and sessions")
    serve.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help="judgements per question (default all); with --pool: per topic, every "
        "annotator's together (default the whole pool)",
    )
    serve.add_argument("--model", default=None, help="a saved InteractiveRanker folder")
    serve.add_argument(
        "--max-sessions",
        type=positive_int,
        default=DEFAULT_MAX_SESSIONS,
        help=f"annotator sessions kept in memory (default {DEFAULT_MAX_SESSIONS}, about 4 MB "
        "each at 45 candidates); older ones are rebuilt from the database when reopened",
    )
    serve.add_argument(
        "--instructions", default=None, help="a Markdown file of instructions for the annotators"
    )


def _serve_pool(args: argparse.Namespace) -> None:
    from probrank.exceptions import InputDataError
    from probrank.serve.pool_server import PoolServeSettings, serve_pool

    given = [
        option
        for option, value in (("--data", args.data), ("--run", args.run),
                              ("--model", args.model), ("--posterior", args.posterior))
        if value is not None
    ]  # fmt: skip
    if given:
        raise InputDataError(f"--pool judges the runs' pool: it takes no {', '.join(given)}")
    missing = [option for option, value in (("--topics", args.topics), ("--docs", args.docs))
               if value is None]  # fmt: skip
    if missing:
        raise InputDataError(f"--pool needs {' and '.join(missing)}")
    strategy = args.strategy or "bayesian"
    if strategy not in _pool_names():
        raise InputDataError(
            f"--strategy with --pool must be one of {', '.join(_pool_names())}, got {strategy!r}"
        )
    serve_pool(
        PoolServeSettings(
            runs=args.pool,
            topics=args.topics,
            documents=args.docs,
            depth=args.depth,
            strategy=strategy,
            seed=args.seed,
            rounds=args.rounds,
            db=args.db,
            host=args.host,
            port=args.port,
            instructions=args.instructions,
        )
    )


def run(args: argparse.Namespace) -> None:
    """Serve until interrupted."""
    from probrank._options import parse_enum
    from probrank.serve.server import ServeSettings, serve

    if args.pool is not None:
        _serve_pool(args)
        return
    if args.strategy is not None:
        from probrank.acquisition.select import Strategy

        args.strategy = parse_enum(Strategy, args.strategy, "--strategy (without --pool)").value

    serve(
        ServeSettings(
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
            max_sessions=args.max_sessions,
            instructions=args.instructions,
            threads=args.threads_given or 1,  # one torch thread per judgement round
        )
    )
