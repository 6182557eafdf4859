"""``probrank encode``: a collection's documents into the encoder's disk cache, here or on Ray.

The collection is read with probrank's readers (:class:`~probrank.retrieval.Collection`: TREC
``<DOC>`` files, or JSON lines with ``--format jsonl``), every document text is encoded on its
own by a frozen encoder (as :meth:`~probrank.encoders.TransformerEncoder.encode_texts` does for
the experiments, under the same cache keys) and the vectors are written as checksummed cache
shards (:func:`probrank.executors.encoding.encode_collection`). A second run encodes only what
the cache lacks, so an interrupted job resumes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

__all__ = [
    "CollectionFormat",
    "add_encode_arguments",
    "add_executor_arguments",
    "encode_command",
    "encode_command_from_args",
    "print_report",
    "read_texts",
]


class CollectionFormat(str, Enum):
    """How the collection files are read."""

    TREC = "trec"
    """TREC ``<DOC>`` files (``<DOCNO>`` and the text of the other elements; .gz allowed)."""
    JSONL = "jsonl"
    """JSON lines with a docno and a text field (``--docno-field``, ``--text-field``)."""


def _format_of(paths: Sequence[str], given: str | None) -> CollectionFormat:
    if given is not None:
        return CollectionFormat(given)
    names = [Path(p).name.removesuffix(".gz") for p in paths]
    jsonl = all(n.endswith(".jsonl") for n in names)
    return CollectionFormat.JSONL if jsonl else CollectionFormat.TREC


def read_texts(
    paths: Sequence[str],
    *,
    collection_format: str | None = None,
    docno_field: str = "docno",
    text_field: str = "text",
    max_documents: int | None = None,
    progress: bool = True,
) -> list[str]:
    """The document texts of a collection, in input order.

    Args:
        paths: The collection files.
        collection_format: ``"trec"`` or ``"jsonl"`` (None: JSONL when every name ends in
            ``.jsonl`` or ``.jsonl.gz``, else TREC).
        docno_field: JSONL: the docno field.
        text_field: JSONL: the text field.
        max_documents: Keep the first this many documents.
        progress: Show a counter while reading TREC files.

    Raises:
        InputDataError: a malformed file (naming it and the line), no documents.
    """
    from probrank.retrieval.collection import Collection

    kind = _format_of(paths, collection_format)
    if kind is CollectionFormat.JSONL:
        if len(paths) != 1:
            raise InputDataError("--format jsonl reads one file")
        collection = Collection.from_jsonl(paths[0], docno_field=docno_field, text_field=text_field)
    else:
        collection = Collection.from_trec(list(paths), progress=progress)
    texts = collection.texts
    return texts[:max_documents] if max_documents is not None else texts


def encode_command(
    paths: Sequence[str],
    *,
    collection_format: str | None = None,
    docno_field: str = "docno",
    text_field: str = "text",
    max_documents: int | None = None,
    model: str | None = None,
    pooling: str = "mean",
    max_length: int = 256,
    batch_size: int = 32,
    cache_dir: str = ".probrank-cache",
    executor: str = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    threads_per_worker: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Encode a collection into the cache (see the module doc); returns the report as JSON data.

    A relative ``cache_dir`` is resolved against the project root of the working folder (the
    folder with ``pyproject.toml`` or ``.git``; else the working folder itself), as the
    experiment configs resolve theirs, so both fill the same cache.
    """
    from probrank._options import parse_enum
    from probrank.encoders.cache import project_root
    from probrank.encoders.transformer import TransformerEncoder
    from probrank.executors import ExecutorKind, ExecutorSettings
    from probrank.executors.encoding import encode_collection

    kind = parse_enum(ExecutorKind, executor, "executor")
    settings = ExecutorSettings(kind=kind, address=ray_address)  # checked before reading
    if settings.kind is ExecutorKind.RAY:
        from probrank.executors.ray_cluster import import_ray

        import_ray("probrank encode --executor ray")
    folder = Path(cache_dir).expanduser()
    if not folder.is_absolute():
        folder = (project_root(Path.cwd()) or Path.cwd()) / folder
    texts = read_texts(
        paths,
        collection_format=collection_format,
        docno_field=docno_field,
        text_field=text_field,
        max_documents=max_documents,
        progress=progress,
    )
    encoder = TransformerEncoder(
        model,
        mode="bi",
        pooling=pooling,
        max_length=max_length,
        batch_size=batch_size,
        cache_dir=folder,
        show_progress=False,
    )
    report = encode_collection(
        encoder,
        texts,
        executor=settings,
        workers=workers,
        threads_per_worker=threads_per_worker,
        progress=progress,
    )
    return {
        "executor": report.executor,
        "texts": report.texts,
        "distinct": report.unique,
        "already_cached": report.cached,
        "encoded": report.encoded,
        "shards_written": [str(p) for p in report.shards],
        "seconds": report.seconds,
        "passages_per_second": report.passages_per_second,
        "cache": str(report.cache_folder),
        "workers": report.workers,
        "nodes": report.nodes,
        "summary": report.summary(),
    }


def print_report(report: dict[str, Any], as_json: bool) -> None:
    """Print the report: its summary lines, or the JSON object without them."""
    if as_json:
        print(json.dumps({k: v for k, v in report.items() if k != "summary"}, indent=2))
    else:
        print(report["summary"])


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


def add_encode_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank encode``."""
    from probrank._cli import positive_int
    from probrank.encoders.transformer import CACHE_SHARD_SIZE, Pooling

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
        "--max-documents", type=positive_int, default=None, help="the first N documents only"
    )
    parser.add_argument(
        "--model", default=None, help="local model folder (default: the packaged MiniLM)"
    )
    parser.add_argument("--pooling", choices=[p.value for p in Pooling], default=Pooling.MEAN.value)
    parser.add_argument("--max-length", type=positive_int, default=256, help="tokens per text")
    parser.add_argument(
        "--batch-size", type=positive_int, default=32, help="texts per forward pass (32)"
    )
    parser.add_argument(
        "--cache-dir",
        default=".probrank-cache",
        help="cache folder; a relative one is under the project root, as in the configs",
    )
    add_executor_arguments(parser, default="local")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="Ray: actors, one model each (default: one per GPU, else per CPU of the cluster)",
    )
    parser.add_argument(
        "--threads-per-worker",
        type=positive_int,
        default=1,
        help="Ray: torch threads and CPUs per actor (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def encode_command_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`encode_command` with the parsed arguments of ``probrank encode``."""
    from probrank._progress import progress_enabled

    return encode_command(
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
