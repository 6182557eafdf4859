"""``probrank encode``: a collection's documents into the encoder's disk cache, here or on Ray.

The collection is read with probrank's readers (:class:`~probrank.retrieval.Collection`: TREC
``<DOC>`` files, or JSON lines with ``--format jsonl``), every document text is encoded on its
own by a frozen encoder (as :meth:`~probrank.encoders.TransformerEncoder.encode_texts` does for
the experiments, under the same cache keys) and the vectors are written as checksummed cache
shards (:func:`probrank.executors.encoding.encode_collection`). A second run encodes only what
the cache lacks, so an interrupted job resumes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

__all__ = ["CollectionFormat", "encode_command", "read_texts"]


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
    threads_per_worker: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Encode a collection into the cache (see the module doc); returns the report as JSON data.

    A relative ``cache_dir`` is resolved against the project root of the working folder (the
    folder with ``pyproject.toml`` or ``.git``; else the working folder itself), as the
    experiment configs resolve theirs, so both fill the same cache. Every option is checked
    before the collection is read or the model loaded: ``cache_dir`` must name a folder (``""``,
    "no cache" in the configs, is refused: this command fills a cache), ``workers`` and
    ``threads_per_worker`` need the Ray executor, and ``max_length`` must fit the model's
    positions (its ``config.json`` is read first: :mod:`probrank.encoders.model_folder`).
    """
    from probrank._options import parse_enum
    from probrank.encoders.model_folder import check_model_folder
    from probrank.encoders.transformer import TransformerEncoder
    from probrank.executors import ExecutorKind, ExecutorSettings
    from probrank.executors.encoding import encode_collection

    kind = parse_enum(ExecutorKind, executor, "executor")
    settings = ExecutorSettings(kind=kind, address=ray_address)  # checked before reading
    if settings.kind is ExecutorKind.LOCAL:
        given = [
            option
            for option, value in (
                ("--workers", workers),
                ("--threads-per-worker", threads_per_worker),
            )
            if value is not None
        ]
        if given:
            raise InputDataError(
                f"{' and '.join(given)}: only with --executor ray (the executor is 'local': "
                "this process encodes with --threads threads)"
            )
    folder = _cache_folder(cache_dir)
    model_folder = _model_folder(model)
    check_model_folder(model_folder, max_length=max_length, option="--max-length")
    if settings.kind is ExecutorKind.RAY:
        from probrank.executors.ray_address import probe_address
        from probrank.executors.ray_cluster import import_ray

        import_ray("probrank encode --executor ray")
        probe_address(settings.address)  # before the collection is read
    texts = read_texts(
        paths,
        collection_format=collection_format,
        docno_field=docno_field,
        text_field=text_field,
        max_documents=max_documents,
        progress=progress,
    )
    encoder = TransformerEncoder(
        model_folder,
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
        threads_per_worker=1 if threads_per_worker is None else threads_per_worker,
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


def _cache_folder(cache_dir: str | os.PathLike[str]) -> Path:
    """The absolute cache folder ``cache_dir`` names (see :func:`encode_command`).

    Raises:
        InputDataError: an empty name (in a config, ``""`` means no cache; this command fills
            one, and it would otherwise be the working folder), or a file in its place.
    """
    from probrank._files import check_output_folder
    from probrank.encoders.cache import project_root

    if not str(os.fspath(cache_dir)).strip():
        raise InputDataError(
            "--cache-dir '': encode fills a cache, give its folder (in a config, cache_dir = "
            "'' means no cache; there is nothing to encode into)"
        )
    folder = Path(cache_dir).expanduser()
    if not folder.is_absolute():
        folder = (project_root(Path.cwd()) or Path.cwd()) / folder
    check_output_folder(folder, what="cache folder")
    return folder


def _model_folder(model: str | os.PathLike[str] | None) -> Path:
    """The local model folder: ``model``, or the packaged all-MiniLM-L6-v2."""
    from probrank.encoders.transformer import default_model_path

    if model is not None:
        if not str(os.fspath(model)).strip():
            raise InputDataError("--model '': give a local model folder (or leave it out)")
        return Path(model).expanduser()
    try:
        return default_model_path()
    except ImportError:
        raise InputDataError(
            "the default model is the packaged all-MiniLM-L6-v2: install it with "
            "pip install 'probrank[minilm]', or pass --model <folder>"
        ) from None
