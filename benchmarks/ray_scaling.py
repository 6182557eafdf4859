"""Local executor vs Ray with 1 and 2 workers: encoding throughput and a QLFusion CV sweep.

Two jobs, each run three ways in this process: the local executor (the baseline), then a local
Ray instance started with ``ray.init(num_cpus=1)`` and with ``num_cpus=2`` (no dashboard), one
worker per CPU:

* **encoding**: the first ``--passages`` documents of the Vaswani collection
  (``../shared/data/collections/vaswani``) with the packaged all-MiniLM-L6-v2 (frozen, mean
  pooling as ``probrank encode``), each way into a fresh cache folder
  (:func:`probrank.executors.encoding.encode_collection`; Ray: an actor pool of 1 or 2 actors,
  one torch thread each). Timed from the first forward pass to the last shard written; Ray's
  time includes the actors' start (each loads the model). The shards must equal the local
  ones (same files and keys, vectors to 1e-6).
* **sweep**: the ``qlfusion_cv`` protocol on Robust03 with 10 folds over topics
  (``models/qlfusion/robust03.toml``), ``--seeds`` seeds; each (seed, training group) is one
  task. Reduced by default (stated in the output): the variants ``--variants`` (default the
  proposed model, its deterministic twin, LR and RF: 4 groups) and the previous, smaller
  training settings (batch sizes 4, 8, 16; at most 200 SVI steps). ``--full`` runs the
  config's settings and every variant (about 5 minutes per seed and way on 2 busy cores).
  The sweep is the protocol's, step for step, from :mod:`probrank.models.qlfusion` and
  :mod:`probrank.executors` (a benchmark does not import :mod:`probrank.experiments`): one task
  per (seed, training group), timed over the whole of it (reading the runs, features,
  training, fusing, evaluating); every variant's scores must equal the local executor's
  exactly.

Starting Ray (``ray.init``) is timed apart and not counted in either job. Prints a table and a
JSON line; ratios are the local executor's time over each way's (above 1: faster than local).
The machine's 1-minute load average is printed before and after (other jobs share the cores).

    .venv/bin/python benchmarks/ray_scaling.py [--passages 2000] [--seeds 2] [--full]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tomllib  # noqa: E402
import torch  # noqa: E402

from probrank.data import Qrels, Run, shared_data_dir  # noqa: E402
from probrank.encoders.transformer import TransformerEncoder  # noqa: E402
from probrank.evaluation import evaluate, top_runs  # noqa: E402
from probrank.executors import ExecutorSettings, Task, open_executor  # noqa: E402
from probrank.executors.encoding import encode_collection  # noqa: E402
from probrank.models.qlfusion import (  # noqa: E402
    VARIANTS,
    CrossFitData,
    QLFusion,
    QLFusionSettings,
    TrainingGroup,
)
from probrank.retrieval.collection import Collection  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "models" / "qlfusion" / "robust03.toml"
REDUCED = {"batch_sizes": [4, 8, 16], "max_steps": 200}
"""The sweep's training settings unless ``--full`` (the config's previous, smaller ones)."""
DEFAULT_VARIANTS = "qlfusion,qlfusion_det,qlfusion_lr,qlfusion_rf"
WAYS = ("local", "ray, 1 worker", "ray, 2 workers")


def _load() -> float:
    return os.getloadavg()[0]


def _encoder(cache: Path) -> TransformerEncoder:
    return TransformerEncoder(mode="bi", pooling="mean", cache_dir=cache, show_progress=False)


def _shards(cache: Path) -> dict[str, dict[str, Any]]:
    return {p.name: torch.load(p, weights_only=True) for p in sorted(cache.glob("*/shard-*.pt"))}


def _same_cache(left: Path, right: Path) -> bool:
    a, b = _shards(left), _shards(right)
    return (
        bool(a)
        and sorted(a) == sorted(b)
        and all(
            a[n]["keys"] == b[n]["keys"]
            and torch.allclose(a[n]["values"], b[n]["values"], rtol=0, atol=1e-6)
            for n in a
        )
    )


def _encode(texts: list[str], cache: Path, workers: int | None) -> dict[str, Any]:
    executor = None if workers is None else ExecutorSettings("ray")
    report = encode_collection(
        _encoder(cache), texts, executor=executor, workers=workers, progress=False
    )
    return {
        "seconds": report.seconds,
        "passages_per_second": report.passages_per_second,
        "encoded": report.encoded,
        "shards": len(report.shards),
    }


def _train_group(
    data: CrossFitData, group: TrainingGroup, seed: int, settings: QLFusionSettings
) -> tuple[dict[str, Any], dict[str, Any], float]:
    """One task, as the ``qlfusion_cv`` protocol's: one training group of one seed (its
    predictions and selections come back, not the trained models), and its wall time."""
    start = time.perf_counter()
    preds, info = QLFusion(settings).cross_fit_group(data, group, seed=seed)
    info.pop("quantifiers", None)
    return preds, info, time.perf_counter() - start


def _sweep(config: dict, seeds: int, executor: ExecutorSettings) -> dict[str, Any]:
    """The ``qlfusion_cv`` protocol's sweep as it runs it (read the runs, keep the best by MAP,
    build the folds; one task per (seed, training group) on ``executor``; merge, fuse and
    evaluate each variant), without its extra tables. Returns the wall time, the tasks' summed
    time and every variant's scores per seed."""
    protocol, variants = config["protocol"], list(config["protocol"]["variants"])
    settings = QLFusionSettings.from_table(
        config["quantifier"], depth=int(protocol.get("depth", 100)), progress=False
    )
    model = QLFusion(settings)
    base = shared_data_dir(*str(config["data"]["shared"]).split("/"))
    measures = list(protocol["measures"])
    start = time.perf_counter()
    qrels = Qrels.read(base / config["data"].get("qrels", "qrels.txt"))
    paths = sorted(base.glob(config["data"].get("runs", "runs/*")))
    selected = top_runs(qrels, [Run.read(p) for p in paths], int(protocol.get("top_runs", 6)))
    data = model.prepare_cross_fit(
        selected,
        qrels,
        folds=int(protocol.get("folds", 10)),
        fold_seed=int(protocol.get("fold_seed", 0)),
        variants=variants,
    )
    groups = model.training_groups(variants)
    with open_executor(executor) as pool:
        shared = pool.share(data)
        tasks = [
            Task(f"seed {seed}, {group.key}", _train_group, (shared, group, seed, settings))
            for seed in range(seeds)
            for group in groups
        ]
        results = pool.map(tasks, progress=False)
    scores: dict[str, list[dict[str, float]]] = {}
    for seed in range(seeds):
        per_seed = [(p, i) for p, i, _ in results[seed * len(groups) : (seed + 1) * len(groups)]]
        cross_fit = model.merge_cross_fit(data, variants, per_seed)
        for name in variants:
            fused = cross_fit.fuse(selected, name)
            scores.setdefault(name, []).append(evaluate(qrels, fused, measures))
    return {
        "seconds": time.perf_counter() - start,
        "task_seconds": sum(r[2] for r in results),
        "scores": scores,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=2000, help="Vaswani documents to encode")
    parser.add_argument("--seeds", type=int, default=2, help="seeds of the sweep")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated")
    parser.add_argument("--full", action="store_true", help="config settings, every variant")
    args = parser.parse_args()
    try:
        import ray
    except ImportError:
        raise SystemExit("Ray is compared: pip install -e '.[ray]'") from None

    torch.set_num_threads(1)
    vaswani = shared_data_dir("collections", "vaswani", "doc-text.trec")
    texts = Collection.from_trec([str(vaswani)], progress=False).texts[: args.passages]
    config = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    if args.full:
        config["protocol"]["variants"] = list(VARIANTS)
    else:
        config["quantifier"] = {**config["quantifier"], **REDUCED}
        config["protocol"]["variants"] = args.variants.split(",")
    variants = config["protocol"]["variants"]
    load_before = _load()

    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="ray-scaling-") as tmp:
        folder = Path(tmp)
        rows["local"] = {"encoding": _encode(texts, folder / "local", None), "ray_start_s": 0.0}
        local = _sweep(config, args.seeds, ExecutorSettings())
        rows["local"]["sweep_s"] = local["seconds"]
        work = rows["local"]["sweep_task_work_s"] = local["task_seconds"]
        for workers, way in ((1, WAYS[1]), (2, WAYS[2])):
            start = time.perf_counter()
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
            row: dict[str, Any] = {"ray_start_s": time.perf_counter() - start}
            try:
                cache = folder / f"ray{workers}"
                row["encoding"] = _encode(texts, cache, workers)
                row["encoding"]["same_cache_as_local"] = _same_cache(folder / "local", cache)
                sweep = _sweep(config, args.seeds, ExecutorSettings("ray"))
                row["sweep_s"] = sweep["seconds"]
                row["sweep_same_results_as_local"] = sweep["scores"] == local["scores"]
            finally:
                ray.shutdown()
            rows[way] = row
    load_after = _load()

    base_enc = rows["local"]["encoding"]["seconds"]
    base_sweep = rows["local"]["sweep_s"]
    for row in rows.values():
        row["encoding_speedup"] = base_enc / row["encoding"]["seconds"]
        row["sweep_speedup"] = base_sweep / row["sweep_s"]
    sweep = "full" if args.full else "reduced: batch sizes 4, 8, 16, <= 200 SVI steps"
    print(
        f"Encoding: {len(texts)} Vaswani passages, all-MiniLM-L6-v2, 1 torch thread per worker. "
        f"Sweep: qlfusion_cv on Robust03, 10 folds, {args.seeds} seed(s), variants {variants} "
        f"({sweep}). 1-min load average {load_before:.1f} before, {load_after:.1f} after."
    )
    print(
        f"{'executor':<16}{'encode s':>10}{'passages/s':>12}{'ratio':>8}"
        f"{'sweep s':>10}{'ratio':>8}{'ray.init s':>12}{'same results':>14}"
    )
    for way, row in rows.items():
        same = (
            "-"
            if way == "local"
            else str(row["encoding"]["same_cache_as_local"] and row["sweep_same_results_as_local"])
        )
        print(
            f"{way:<16}{row['encoding']['seconds']:>10.1f}"
            f"{row['encoding']['passages_per_second']:>12.1f}{row['encoding_speedup']:>7.2f}x"
            f"{row['sweep_s']:>10.1f}{row['sweep_speedup']:>7.2f}x"
            f"{row['ray_start_s']:>12.1f}{same:>14}"
        )
    print(
        f"sweep: {work:.1f} s of the local run's {base_sweep:.1f} s are its tasks' training "
        f"(the part Ray spreads); the rest is reading, features, fusing and evaluating"
    )
    print(
        json.dumps(
            {
                "passages": len(texts),
                "seeds": args.seeds,
                "variants": variants,
                "full": args.full,
                "load_before": load_before,
                "load_after": load_after,
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
