"""``probrank encode``: a collection's documents into the encoder's disk cache, here or on Ray
(the work: :func:`probrank.experiments.encode.encode_command`)."""

from __future__ import annotations

import argparse
from typing import Any

from probrank.cli._parsing import MAX_THREADS, bounded, strict_json

__all__ = ["TORCH", "add_arguments", "add_executor_arguments", "run"]

TORCH = True

MAX_DOCUMENTS = 10**12
"""Largest ``--max-documents``."""
MAX_LENGTH = 10**6
"""Largest ``--max-length`` the parser takes; the model's positions are checked next."""
MAX_BATCH = 2**20
"""Largest ``--batch-size``."""
MAX_WORKERS = 100_000
"""Largest ``--workers`` (Ray actors)."""


def add_executor_arguments(parser: argparse.ArgumentParser, *, default: str | None = None) -> None:
    """``--executor`` and ``--ray-address`` (``probrank experiment`` and ``probrank encode``).

    Args:
        parser: The command's parser.
        default: ``--executor``'s default (None: the config's ``[experiment] executor``).
    """
    from probrank.executors.base import ExecutorKind

    kinds = [kind.value for kind in ExecutorKind]
    parser.add_argument(
        "--executor",
        choices=kinds,
        default=default,
        help="where the work runs: this process, or Ray (the probrank[ray] extra; default "
        + (default if default is not None else "the config's [experiment] executor, else local")
        + ")",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        default=None,
        help="the Ray cluster: 'auto' joins the one this machine runs (ray start), "
        "'host:port' a given one (default: start a local Ray instance, no dashboard)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank encode``."""
    from probrank.encoders.transformer import CACHE_SHARD_SIZE, Pooling
    from probrank.experiments.encode import CollectionFormat

    parser.description = (
        "Encode every document of a collection with a frozen encoder into the disk cache the "
        "experiments read (checksummed shards of "
        f"{CACHE_SHARD_SIZE} texts); what the cache holds is not encoded again."
    )
    parser.add_argument("collection", nargs="+", help="TREC <DOC> files (.gz allowed) or a JSONL")
    parser.add_argument(
        "--format",
        dest="collection_format",
        choices=[kind.value for kind in CollectionFormat],
        default=None,
        help="how to read the files (default: jsonl for *.jsonl[.gz], else trec)",
    )
    parser.add_argument("--docno-field", default="docno", help="JSONL docno field")
    parser.add_argument("--text-field", default="text", help="JSONL text field")
    parser.add_argument(
        "--max-documents",
        type=bounded(MAX_DOCUMENTS),
        default=None,
        help="the first N documents only",
    )
    parser.add_argument(
        "--model", default=None, help="local model folder (default: the packaged MiniLM)"
    )
    parser.add_argument(
        "--pooling",
        choices=[p.value for p in Pooling],
        default=Pooling.MEAN.value,
        help=f"how token states become one vector (default {Pooling.MEAN.value}, as "
        "all-MiniLM-L6-v2 was trained)",
    )
    parser.add_argument(
        "--max-length",
        type=bounded(MAX_LENGTH),
        default=256,
        help="tokens per text (at most the model's positions, read from its config.json)",
    )
    parser.add_argument(
        "--batch-size", type=bounded(MAX_BATCH), default=32, help="texts per forward pass (32)"
    )
    parser.add_argument(
        "--cache-dir",
        default=".probrank-cache",
        help="cache folder; a relative one is under the project root, as in the configs "
        "(not empty: this command fills a cache)",
    )
    add_executor_arguments(parser, default="local")
    parser.add_argument(
        "--workers",
        type=bounded(MAX_WORKERS),
        default=None,
        help="Ray: actors, one model each (default: one per GPU, else per CPU of the cluster)",
    )
    parser.add_argument(
        "--threads-per-worker",
        type=bounded(MAX_THREADS),
        default=None,
        help="Ray: torch threads and CPUs per actor (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> None:
    """Encode, then print the report: its summary lines, or the JSON object without them."""
    from probrank._progress import progress_enabled
    from probrank.experiments.encode import encode_command

    report: dict[str, Any] = encode_command(
        args.collection,
        collection_format=args.collection_format,
        docno_field=args.docno_field,
        text_field=args.text_field,
        max_documents=args.max_documents,
        model=args.model,
        pooling=args.pooling,
        max_length=args.max_length,
        batch_size=args.batch_size,
        cache_dir=args.cache_dir,
        executor=args.executor,
        ray_address=args.ray_address,
        workers=args.workers,
        threads_per_worker=args.threads_per_worker,
        progress=progress_enabled() and not args.json,
    )
    if args.json:
        print(strict_json({k: v for k, v in report.items() if k != "summary"}))
    else:
        print(report["summary"])
