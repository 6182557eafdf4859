"""The Ray path of :func:`~probrank.executors.encoding.encode_collection`: a Ray Data job.

``ray.data.from_items`` holds one row per forward pass of every pending shard (the texts the
local path puts in that pass, :meth:`~probrank.encoders.TransformerEncoder.forward_batches`);
``map_batches`` sends the rows to an actor pool (:class:`EncodeActor`, one model per actor,
``threads`` CPUs each, one GPU each where the cluster has GPUs), and the driver streams the
vectors back, fills each shard's rows and writes the shard as soon as it is complete, so an
interrupted job leaves only whole shards. Each row's result also names the Ray node that
computed it (:func:`ray.get_runtime_context`), so a job reports where its work ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from probrank.encoders.cache import EmbeddingCache
from probrank.encoders.transformer import EncoderSpec, TransformerEncoder
from probrank.executors.ray_cluster import cluster_gpus, import_ray

__all__ = ["ACTOR_START_TIMEOUT_S", "EncodeActor", "encode_on_ray"]

ACTOR_START_TIMEOUT_S = 600
"""How long an encoding job waits for its whole actor pool (each actor loading its model)
before the first batch is sent; past it the job fails with Ray's timeout error."""


class EncodeActor:
    """A Ray Data actor holding one frozen encoder; each row it gets is one forward pass.

    Args:
        spec: :class:`~probrank.encoders.transformer.EncoderSpec` fields.
        threads: Torch intra-op threads.
    """

    def __init__(self, spec: dict[str, Any], threads: int) -> None:
        import ray

        torch.set_num_threads(threads)
        self.encoder = EncoderSpec(**spec).build()
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{"shard", "batch", "texts"}`` rows -> ``{"shard", "batch", "values", "node"}``,
        ``values`` the pass's `b x d` float32 vectors as bytes."""
        values = [
            self.encoder.encode_batch([str(t) for t in texts])
            .to("cpu", torch.float32)
            .numpy()
            .tobytes()
            for texts in batch["texts"]
        ]
        count = len(values)
        return {
            "shard": np.asarray(batch["shard"]),
            "batch": np.asarray(batch["batch"]),
            "values": np.asarray(values, dtype=object),
            "node": np.asarray([self.node] * count, dtype=object),
        }


def _pool_size(workers: int | None, threads: int, gpus: float) -> int:
    ray = import_ray()
    if workers is not None:
        return workers
    if gpus > 0:
        return max(1, int(gpus))
    return max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)


def encode_on_ray(
    encoder: TransformerEncoder,
    shards: list[list[str]],
    by_key: dict[str, str],
    written: Callable[[list[str], Path], None],
    *,
    workers: int | None,
    threads: int,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[dict[str, int], int]:
    """Encode ``shards`` on the connected Ray cluster and write them to ``encoder``'s cache.

    Args:
        encoder: The driver's encoder (its cache is written here; its spec built per actor).
        shards: The pending shards' keys (:meth:`TransformerEncoder.pending_shards`).
        by_key: Text of each key.
        written: Called with each shard's keys and file once it is written.
        workers: Actors in the pool (None: one per GPU, else one per ``threads`` CPUs).
        threads: Torch threads and CPUs per actor.
        on_batch: Called with the rows still in flight after each row comes back.

    Returns:
        ``({node id: forward passes}, pool size)``.
    """
    ray = import_ray()
    cache = encoder.cache
    if cache is None:  # checked by encode_collection
        raise ValueError("the encoder has no cache")
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the job's own bar counts texts
    context.print_on_execution_start = False
    context.execution_options.preserve_order = False
    with _quiet_ray_data():
        return _run(ray, encoder, cache, shards, by_key, written, workers, threads, on_batch)


@contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data's execution log lines (and its note that its bars are off) below ERROR."""
    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _run(
    ray: Any,
    encoder: TransformerEncoder,
    cache: EmbeddingCache,
    shards: list[list[str]],
    by_key: dict[str, str],
    written: Callable[[list[str], Path], None],
    workers: int | None,
    threads: int,
    on_batch: Callable[[int], None] | None,
) -> tuple[dict[str, int], int]:
    items: list[dict[str, Any]] = []
    rows_of: dict[tuple[int, int], list[int]] = {}
    for s, chunk in enumerate(shards):
        chunk_texts = [by_key[k] for k in chunk]
        for b, rows in enumerate(encoder.forward_batches(chunk_texts)):
            rows_of[(s, b)] = rows
            items.append({"shard": s, "batch": b, "texts": [chunk_texts[i] for i in rows]})
    gpus = cluster_gpus()
    size = min(_pool_size(workers, threads, gpus), len(items))
    context = ray.data.DataContext.get_current()
    waited = context.wait_for_min_actors_s
    # every actor holds its model before the first batch is sent: otherwise the first actor
    # ready takes every batch of a short job while the others still load theirs
    context.wait_for_min_actors_s = ACTOR_START_TIMEOUT_S
    try:
        return _encode(
            ray, encoder, cache, shards, rows_of, items, size, threads, gpus, written, on_batch
        )
    finally:
        context.wait_for_min_actors_s = waited


def _encode(
    ray: Any,
    encoder: TransformerEncoder,
    cache: EmbeddingCache,
    shards: list[list[str]],
    rows_of: dict[tuple[int, int], list[int]],
    items: list[dict[str, Any]],
    size: int,
    threads: int,
    gpus: float,
    written: Callable[[list[str], Path], None],
    on_batch: Callable[[int], None] | None,
) -> tuple[dict[str, int], int]:
    dataset = ray.data.from_items(items, override_num_blocks=min(len(items), 8 * size))
    encoded = dataset.map_batches(
        EncodeActor,
        fn_constructor_kwargs={"spec": asdict(encoder.spec), "threads": threads},
        batch_size=1,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=size),
        num_cpus=threads,
        num_gpus=1 if gpus > 0 else 0,
    )
    dim = encoder.hidden_size
    filled: dict[int, np.ndarray] = {}
    remaining = {s: 0 for s in range(len(shards))}
    for s, _ in rows_of:
        remaining[s] += 1
    nodes: dict[str, int] = {}
    in_flight = len(items)
    for row in encoded.iter_rows():
        s, b = int(row["shard"]), int(row["batch"])
        rows = rows_of[(s, b)]
        values = np.frombuffer(row["values"], dtype=np.float32).reshape(len(rows), dim)
        target = filled.setdefault(s, np.zeros((len(shards[s]), dim), dtype=np.float32))
        target[rows] = values
        node = str(row["node"])
        nodes[node] = nodes.get(node, 0) + 1
        remaining[s] -= 1
        in_flight -= 1
        if on_batch is not None:
            on_batch(in_flight)
        if remaining[s] == 0:
            path = cache.put(shards[s], torch.from_numpy(filled.pop(s)))
            if path is not None:
                written(shards[s], path)
    return nodes, size
