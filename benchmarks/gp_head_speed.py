"""Parameters and inference time per 1,000 (query, candidate) pairs of each GPF head.

All heads sit on the same frozen encoder (default: all-MiniLM-L6-v2, bi-encoder features);
times are ratios to the deterministic head (the paper's Table 3). Two timings: the head alone on
cached features, and end to end (encoder forward + head). MC dropout here drops out in the head
only, so the encoder runs once for every head (the paper reran BERT T times).

    .venv/bin/python benchmarks/gp_head_speed.py [--pairs 1000] [--repeats 5] [--model PATH]

Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from probrank.encoders.transformer import TransformerEncoder
from probrank.nn.heads import HeadKind, build_head

WORDS = (
    "how do i install the ubuntu kernel driver for my sound card it fails after reboot with an "
    "error about missing packages try sudo apt get update then upgrade and check dmesg output"
).split()


def _texts(n: int, seed: int) -> list[str]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(4, 24, (n,), generator=generator)
    picks = torch.randint(0, len(WORDS), (n, 24), generator=generator)
    return [" ".join(WORDS[j] for j in picks[i, : lengths[i]]) for i in range(n)]


def _time(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None, help="local model folder (default MiniLM)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    encoder = TransformerEncoder(args.model, mode="bi", pooling="mean", show_progress=False)
    queries, candidates = _texts(args.pairs, 0), _texts(args.pairs, 1)
    encode_s = _time(lambda: encoder.encode_pairs(queries, candidates), 1)
    features = encoder.encode_pairs(queries, candidates)
    rows = {}
    for kind in HeadKind:
        head = build_head(kind, features.shape[1], seed=0)
        if hasattr(head, "compute_precision"):
            head.compute_precision(features)
        head.eval()
        with torch.no_grad():
            head_s = _time(lambda head=head: head.predict_proba(features), args.repeats)
        rows[kind.value] = {
            "params": sum(p.numel() for p in head.parameters()),
            "head_ms_per_1000": 1000 * head_s * 1000 / args.pairs,
            "end_to_end_ms_per_1000": 1000 * (encode_s + head_s) * 1000 / args.pairs,
        }
    base = rows["deterministic"]
    for row in rows.values():
        row["params_ratio"] = row["params"] / base["params"]
        row["head_time_ratio"] = row["head_ms_per_1000"] / base["head_ms_per_1000"]
        row["end_to_end_ratio"] = row["end_to_end_ms_per_1000"] / base["end_to_end_ms_per_1000"]
    columns = [
        "params",
        "params_ratio",
        "head_ms_per_1000",
        "head_time_ratio",
        "end_to_end_ms_per_1000",
        "end_to_end_ratio",
    ]
    print(f"encoder {encoder.path.name}: {args.pairs} pairs, {encode_s:.2f} s to encode")
    print(f"{'head':<14}" + "".join(f"{c:>24}" for c in columns))
    for name, row in rows.items():
        print(
            f"{name:<14}"
            + "".join(
                f"{row[c]:>24d}" if isinstance(row[c], int) else f"{row[c]:>24.3f}" for c in columns
            )
        )
    print(
        json.dumps(
            {"encoder": encoder.path.name, "pairs": args.pairs, "encode_s": encode_s, "heads": rows}
        )
    )


if __name__ == "__main__":
    main()
