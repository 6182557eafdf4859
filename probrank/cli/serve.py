"""``probrank serve``: the pairwise judging pages (:func:`probrank.serve.server.serve`)."""

from __future__ import annotations

import argparse

from probrank.cli._parsing import at_least, enum_values, positive_int, seed

TORCH = True


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank serve``."""
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
    serve.add_argument("--posterior", default=None, choices=enum_values(PosteriorKind))
    serve.add_argument("--strategy", default=None, choices=enum_values(Strategy))
    serve.add_argument("--seed", type=seed, default=0, help="seed of the warm start and sessions")
    serve.add_argument(
        "--rounds", type=positive_int, default=None, help="judgements per question (default all)"
    )
    serve.add_argument("--model", default=None, help="a saved InteractiveRanker folder")


def run(args: argparse.Namespace) -> None:
    """Serve until interrupted."""
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
