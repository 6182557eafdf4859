"""Encoding a collection into the encoder's disk cache, locally or on Ray.

Both paths write the shards :meth:`~probrank.encoders.TransformerEncoder.pending_shards` plans:
the texts the cache lacks, de-duplicated in input order, ``shard_size`` per shard, each shard
named by its keys and written whole, with its checksum, by this process
(:class:`~probrank.encoders.cache.EmbeddingCache`). Locally each shard is encoded by
:meth:`~probrank.encoders.TransformerEncoder.encode_texts`, exactly as an experiment fills the
cache. On Ray (:mod:`probrank.executors.ray_encode`) the forward passes of every pending shard,
the same batches of texts the local path forms, are spread over a Ray Data actor pool, one
model per actor, and the vectors come back here to be written as the same shards; so a
collection encoded either way gives the same cache keys and shard files, and vectors equal to
float rounding (the forward passes are the same; only the thread count of the matrix products
may differ). An interrupted job keeps the shards it wrote: the next one encodes only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from probrank._progress import progress_bar
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.executors.base import ExecutorKind, ExecutorSettings

__all__ = ["EncodeReport", "encode_collection"]


@dataclass
class EncodeReport:
    """What an encoding job did.

    Attributes:
        executor: ``"local"`` or ``"ray"``.
        texts: Texts asked for.
        unique: Distinct texts among them.
        cached: Distinct texts already in the cache before the job.
        encoded: Texts encoded by this job.
        shards: The shard files written, in plan order.
        seconds: Wall time of the encoding (reading the collection and starting Ray excluded).
        cache_folder: The cache folder of the encoder's model and settings.
        nodes: Ray only: forward passes per Ray node id.
        workers: Ray only: the actor pool's size.
    """

    executor: str
    texts: int
    unique: int
    cached: int
    encoded: int = 0
    shards: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    cache_folder: Path | None = None
    nodes: dict[str, int] = field(default_factory=dict)
    workers: int = 1

    @property
    def passages_per_second(self) -> float:
        """Texts encoded per second of wall time (0 when none was encoded)."""
        return self.encoded / self.seconds if self.encoded and self.seconds > 0 else 0.0

    def summary(self) -> str:
        """A few lines for the terminal."""
        lines = [
            f"texts: {self.texts} ({self.unique} distinct); already cached: {self.cached}; "
            f"encoded now: {self.encoded} in {len(self.shards)} shard(s)",
            f"executor: {self.executor}"
            + (f" ({self.workers} worker(s), {len(self.nodes)} node(s))" if self.nodes else ""),
            f"time: {self.seconds:.1f} s"
            + (f"; {self.passages_per_second:.1f} passages/s" if self.encoded else ""),
            f"cache: {self.cache_folder}",
        ]
        return "\n".join(lines)


ShardCallback = Callable[[list[str]], None]
"""Called with a shard's keys after it was written."""


def encode_collection(
    encoder: TransformerEncoder,
    texts: Sequence[str],
    *,
    executor: ExecutorSettings | None = None,
    workers: int | None = None,
    threads_per_worker: int = 1,
    progress: bool = True,
    on_shard: ShardCallback | None = None,
) -> EncodeReport:
    """Encode ``texts`` into ``encoder``'s disk cache (see the module doc).

    Args:
        encoder: A frozen encoder with a cache (``cache_dir``); its ``batch_size`` texts go
            through the model per forward pass and ``shard_size`` texts into each shard.
        texts: `n` texts (documents of a collection, encoded one by one, as
            :meth:`~probrank.encoders.TransformerEncoder.encode_texts` does).
        executor: Local (default) or Ray.
        workers: Ray: actors in the pool, one model each (default: one per GPU of the
            cluster, else one per ``threads_per_worker`` CPUs).
        threads_per_worker: Ray: torch threads (and CPUs requested) per actor.
        progress: Show a progress bar over the texts.
        on_shard: Called after each shard is written.

    Returns:
        The :class:`EncodeReport`.

    Raises:
        InputDataError: the encoder has no cache or is not frozen, or a bad worker count.
        MissingExtraError: Ray is asked for but not installed.
    """
    if encoder.cache is None:
        raise InputDataError("encoding a collection needs an encoder with a cache (cache_dir)")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise InputDataError(f"workers must be a positive integer, got {workers!r}")
    if isinstance(threads_per_worker, bool) or threads_per_worker < 1:
        raise InputDataError(f"threads per worker must be positive, got {threads_per_worker!r}")
    settings = executor or ExecutorSettings()
    texts = list(texts)
    keys = encoder.text_keys(texts)
    unique = len(dict.fromkeys(keys))
    shards = encoder.pending_shards(keys)
    pending = sum(len(chunk) for chunk in shards)
    report = EncodeReport(
        executor=settings.kind.value,
        texts=len(texts),
        unique=unique,
        cached=unique - pending,
        cache_folder=encoder.cache.folder,
    )
    if not shards:
        return report
    by_key = dict(zip(keys, texts, strict=True))
    bar = progress_bar(total=pending, desc="encoding", unit="text", disable=not progress)

    def written(chunk: list[str], path: Path) -> None:
        report.shards.append(path)
        report.encoded += len(chunk)
        bar.update(len(chunk))
        if on_shard is not None:
            on_shard(chunk)

    start = time.perf_counter()
    try:
        if settings.kind is ExecutorKind.LOCAL:
            _encode_locally(encoder, shards, by_key, written)
        else:
            from probrank.executors.ray_cluster import ray_session
            from probrank.executors.ray_encode import encode_on_ray

            with ray_session(settings.address, num_cpus=settings.num_cpus):
                start = time.perf_counter()
                report.nodes, report.workers = encode_on_ray(
                    encoder,
                    shards,
                    by_key,
                    written,
                    workers=workers,
                    threads=threads_per_worker,
                    on_batch=lambda rows: bar.set_postfix_str(f"{rows} in flight", refresh=False),
                )
    finally:
        report.seconds = time.perf_counter() - start
        bar.close()
    return report


def _encode_locally(
    encoder: TransformerEncoder,
    shards: list[list[str]],
    by_key: dict[str, str],
    written: Callable[[list[str], Path], None],
) -> None:
    """Each shard through the encoder's own cached path (one shard written per call)."""
    cache = encoder.cache
    if cache is None:  # checked by the caller
        raise InputDataError("encoding a collection needs an encoder with a cache (cache_dir)")
    show = encoder.show_progress
    encoder.show_progress = False  # the job's bar counts the texts
    try:
        for chunk in shards:
            encoder.encode_texts([by_key[k] for k in chunk])
            written(chunk, cache.shard_path(chunk))
    finally:
        encoder.show_progress = show
