"""Parameters and inference time per 1,000 (query, candidate) pairs of each GPF head.

The paper's Table 3 analogue. Every head is trained first (briefly, on encoder features of
synthetic pairs with synthetic labels; SNGP/GPF with their exact Laplace pass, so the timed
heads have a real posterior), then timed two ways, all in one process:

- head only: ``predict_proba`` on the 1,000 pairs' cached features;
- end to end: the frozen encoder (no disk cache) on the 1,000 pairs' texts, then the head.

End-to-end runs go round-robin over the heads (``--e2e-repeats`` rounds, each starting at the
next head, after one warm-up pass) so that load drift on a shared machine hits every head
alike; the median per head is reported with the spread of the rounds, both as wall-clock time
and as the process's CPU time (with one thread, CPU time is far less disturbed by other jobs on
a shared machine than wall time). Ratios are to the deterministic head. MC dropout drops out in
the head only, so its encoder runs once (the paper reran BERT T times).

    .venv/bin/python benchmarks/gp_head_speed.py [--pairs 1000] [--repeats 20] [--e2e-repeats 5]

Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from probrank.encoders.transformer import TransformerEncoder
from probrank.nn.heads import FitSettings, HeadKind, build_head

WORDS = (
    "how do i install the ubuntu kernel driver for my sound card it fails after reboot with an "
    "error about missing packages try sudo apt get update then upgrade and check dmesg output"
).split()


def _texts(n: int, seed: int) -> list[str]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(4, 24, (n,), generator=generator)
    picks = torch.randint(0, len(WORDS), (n, 24), generator=generator)
    return [" ".join(WORDS[j] for j in picks[i, : lengths[i]]) for i in range(n)]


def _time(fn: Callable[[], Any], repeats: int) -> list[float]:
    fn()  # warm-up (first-call allocations, cached covariance)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--train-pairs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20, help="head-only timings per head")
    parser.add_argument("--e2e-repeats", type=int, default=5, help="end-to-end rounds")
    parser.add_argument("--model", default=None, help="local model folder (default MiniLM)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    encoder = TransformerEncoder(args.model, mode="bi", pooling="mean", show_progress=False)
    # training data: encoder features of other synthetic pairs, labels from a random direction
    train_q, train_c = _texts(args.train_pairs, 2), _texts(args.train_pairs, 3)
    with torch.no_grad():
        train_x = encoder.encode_pairs(train_q, train_c)
    mean, std = train_x.mean(0), train_x.std(0).clamp_min(1e-6)
    train_x = (train_x - mean) / std
    direction = torch.randn(train_x.shape[1], generator=torch.Generator().manual_seed(4))
    train_y = (train_x @ direction > 0).float()
    heads = {}
    for kind in HeadKind:
        head = build_head(kind, train_x.shape[1], seed=0)
        head.fit(train_x, train_y, FitSettings(epochs=2, batch_size=256, seed=0))
        heads[kind.value] = head
    queries, candidates = _texts(args.pairs, 0), _texts(args.pairs, 1)

    def end_to_end(head: Any) -> None:
        with torch.no_grad():
            features = (encoder.encode_pairs(queries, candidates) - mean) / std
            head.predict_proba(features)

    with torch.no_grad():
        features = (encoder.encode_pairs(queries, candidates) - mean) / std
    rows: dict[str, dict[str, Any]] = {}
    for name, head in heads.items():
        head_times = _time(lambda head=head: head.predict_proba(features), args.repeats)
        rows[name] = {
            "params": sum(p.numel() for p in head.parameters()),
            "head_ms_per_1000": 1000 * statistics.median(head_times) * 1000 / args.pairs,
            "e2e_times_s": [],
        }
        rows[name]["e2e_cpu_s"] = []
    end_to_end(heads["deterministic"])  # warm-up of the encoder path
    names = list(heads)
    for round_ in range(args.e2e_repeats):
        # each round starts at another head, so that no head is always first after a pause
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            head = heads[name]
            start, cpu = time.perf_counter(), time.process_time()
            end_to_end(head)
            rows[name]["e2e_times_s"].append(time.perf_counter() - start)
            rows[name]["e2e_cpu_s"].append(time.process_time() - cpu)
    per_1000 = 1000 * 1000 / args.pairs
    for row in rows.values():
        times, cpu = row["e2e_times_s"], row["e2e_cpu_s"]
        row["e2e_wall_ms_per_1000"] = statistics.median(times) * per_1000
        row["e2e_wall_spread_ms"] = (max(times) - min(times)) * per_1000
        row["e2e_cpu_ms_per_1000"] = statistics.median(cpu) * per_1000
        row["e2e_cpu_spread_ms"] = (max(cpu) - min(cpu)) * per_1000
    base = rows["deterministic"]
    for row in rows.values():
        row["params_ratio"] = row["params"] / base["params"]
        row["head_time_ratio"] = row["head_ms_per_1000"] / base["head_ms_per_1000"]
        row["e2e_wall_ratio"] = row["e2e_wall_ms_per_1000"] / base["e2e_wall_ms_per_1000"]
        row["e2e_cpu_ratio"] = row["e2e_cpu_ms_per_1000"] / base["e2e_cpu_ms_per_1000"]
    columns = [
        "params",
        "params_ratio",
        "head_ms_per_1000",
        "head_time_ratio",
        "e2e_wall_ms_per_1000",
        "e2e_wall_spread_ms",
        "e2e_wall_ratio",
        "e2e_cpu_ms_per_1000",
        "e2e_cpu_spread_ms",
        "e2e_cpu_ratio",
    ]
    print(
        f"encoder {encoder.path.parent.name}/{encoder.path.name}: {args.pairs} pairs; heads "
        f"trained on {args.train_pairs} pairs; head only: median of {args.repeats}; end to "
        f"end: median of {args.e2e_repeats} round-robin rounds (spread = max - min)"
    )
    print(f"{'head':<14}" + "".join(f"{c:>22}" for c in columns))
    for name, row in rows.items():
        print(
            f"{name:<14}"
            + "".join(
                f"{row[c]:>22d}" if isinstance(row[c], int) else f"{row[c]:>22.3f}" for c in columns
            )
        )
    print(
        json.dumps(
            {
                "encoder": f"{encoder.path.parent.name}/{encoder.path.name}",
                "pairs": args.pairs,
                "heads": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
