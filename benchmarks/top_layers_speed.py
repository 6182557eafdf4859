"""Time per example of fine-tuning the top ``n - k`` encoder layers on cached states, per ``k``.

For each number of frozen layers ``k`` (all-MiniLM-L6-v2 by default: ``n = 6``), one process
measures, per (context, response) pair of ``--tokens`` tokens:

- ``cache``: the frozen part (embeddings + layers ``1..k``) once, as the cache is filled
  (:class:`probrank.encoders.hidden_states.HiddenStateEncoder`, no disk writes);
- ``step det`` / ``step gpf``: one training step (forward, backward, AdamW) of the top layers
  with the deterministic MLP head, and with spectrally normalised top layers (relative bound 1)
  and the GPF head (RFF GP, focal loss, prior penalty), on cached states
  (:func:`probrank.encoders.top_layers_fit.fine_tune_top_layers`' step);
- ``score``: a forward pass without gradients (scoring a checkpoint, the Laplace pass).

Each figure is the median over ``--repeats`` rounds of one batch of ``--batch-size`` pairs,
divided by the batch size, after one warm-up call of every task. The rounds go round-robin over
all tasks (each round starting one task later), so that load from other jobs on a shared
machine falls on every task alike; ``cpu`` columns are the process's CPU time divided by the
threads (less disturbed by other jobs than wall time). The ratio columns divide the step time by
that of ``k = 0`` (every layer trained, the end-to-end cost), measured in the same process.
With ``--plan`` it also prints the projected minutes of one config run (see :func:`_plan`):
``planned`` from the wall columns (this machine as loaded while it ran), ``planned cpu`` from
the CPU columns (the threads with a core each, e.g. a run alone on 2 cores).

    .venv/bin/python benchmarks/top_layers_speed.py [--frozen 0 4 5 6] [--tokens 67]
        [--batch-size 32] [--repeats 5] [--threads 2]
        [--plan TRAIN VALIDATION SCORED EPOCHS RUNS SEEDS MC]

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

from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.pair_tokens import PairTokens
from probrank.encoders.top_layers import TopLayerRanker
from probrank.nn.heads import build_head


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and process CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _tokens(n: int, length: int, vocab: int, seed: int) -> list[PairTokens]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, vocab, (n, length), generator=generator)
    half = length // 2
    return [
        PairTokens(
            (101, *ids[i, 1:half].tolist(), 102, *ids[i, half + 1 : -1].tolist(), 102),
            (0,) * half + (1,) * (length - half),
        )
        for i in range(n)
    ]


def _step(
    ranker: TopLayerRanker, head: Any, states: PackedStates, labels: torch.Tensor
) -> Callable[[], None]:
    """One training step of ``ranker`` on the whole batch ``states``, as a closure."""
    optimizer = torch.optim.AdamW(
        [
            {"params": list(ranker.top.parameters()), "lr": 2e-5},
            {"params": list(ranker.head.parameters()), "lr": 1e-3},
        ]
    )
    rows = list(range(len(states)))
    gp = getattr(head, "gp", None)

    def run() -> None:
        ranker.train()
        x, mask = states.padded(rows)
        value = head.loss(ranker(x, mask), labels)
        if gp is not None:
            value = value + gp.output.prior_penalty() / 10_000
        optimizer.zero_grad()
        value.backward()
        optimizer.step()

    return run


def _plan(row: dict[str, float], plan: list[int], clock: str = "") -> float:
    """Projected minutes of one config run of the ``gpf_top_layers`` protocol.

    ``plan`` is ``train`` training pairs, ``validation`` pairs, ``scored`` test + shift pairs,
    ``epochs`` (the last checkpoint of ``[heads] epochs``), ``runs`` training runs in all
    (seeds x (one for the deterministic and MC-dropout rows + one per GPF gamma + SNGP)),
    ``seeds``, and ``mc`` MC-dropout passes through the top layers (0: none, or
    ``scope = "head"``, whose passes cost next to nothing).

    Cache: ``(train + validation + scored) * cache``. Per run: ``epochs * train * step`` (the
    mean of the deterministic and GPF steps); per epoch checkpoint a pass over the training
    pairs (the GP heads' Laplace pass; counted for every run) and one over validation:
    ``epochs * (train + validation) * score``; the test and shift sets scored at most twice
    (plain and ``+T`` rows at different checkpoints): ``2 * scored * score``. MC dropout adds,
    per seed, ``mc`` passes over the same validation and test sets. ``clock`` ``""`` projects
    from the wall columns (this machine, as loaded while measured), ``" cpu"`` from the CPU
    columns (the threads with a core each).
    """
    train, validation, scored, epochs, runs, seeds, mc = plan
    step = (row[f"step det{clock} ms"] + row[f"step gpf{clock} ms"]) / 2
    score = row[f"score{clock} ms"]
    evaluated = epochs * validation + 2 * scored
    per_run = epochs * train * step + (epochs * train + evaluated) * score
    mc_cost = seeds * mc * evaluated * score
    total_ms = (train + validation + scored) * row[f"cache{clock} ms"] + runs * per_run + mc_cost
    return total_ms / 60_000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="local model folder (default MiniLM)")
    parser.add_argument("--frozen", type=int, nargs="+", default=None, help="k values (all)")
    parser.add_argument("--tokens", type=int, default=67, help="tokens per pair")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--plan",
        type=int,
        nargs=7,
        metavar=("TRAIN", "VALIDATION", "SCORED", "EPOCHS", "RUNS", "SEEDS", "MC"),
        default=None,
        help="project one config run's minutes (see _plan)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    probe = HiddenStateEncoder(args.model, frozen_layers=0, show_progress=False)
    n_layers = probe.num_layers
    frozen = args.frozen if args.frozen is not None else list(range(n_layers + 1))
    if 0 not in frozen:
        frozen = [0, *frozen]  # the baseline of the ratios
    tokens = _tokens(args.batch_size, args.tokens, probe.tokenizer.vocab_size, seed=1)
    labels = (torch.arange(args.batch_size) % 10 == 0).float()
    tasks: dict[tuple[int, str], Callable[[], Any]] = {}
    for k in sorted(set(frozen)):
        encoder = HiddenStateEncoder(
            args.model,
            frozen_layers=k,
            dtype="float32",
            batch_size=args.batch_size,
            show_progress=False,
        )
        states = encoder.states_of_tokens(tokens)
        h = encoder.hidden_size
        det_head = build_head("deterministic", h, seed=0)
        det = TopLayerRanker(encoder.top_layers(), det_head)  # type: ignore[arg-type]
        gpf_head = build_head("gpf", h, seed=0, gamma=1.0)
        gpf = TopLayerRanker(encoder.top_layers(spectral_bound=1.0), gpf_head)  # type: ignore[arg-type]
        tasks[(k, "cache")] = lambda e=encoder: e.states_of_tokens(tokens)
        tasks[(k, "step det")] = _step(det, det_head, states, labels)
        tasks[(k, "step gpf")] = _step(gpf, gpf_head, states, labels)
        tasks[(k, "score")] = lambda r=det, s=states: r.pooled(s, args.batch_size)
    for fn in tasks.values():  # warm-up
        fn()
    keys = list(tasks)
    walls: dict[tuple[int, str], list[float]] = {key: [] for key in keys}
    cpus: dict[tuple[int, str], list[float]] = {key: [] for key in keys}
    for repeat in range(args.repeats):  # round-robin, each round starting one task later
        shift = repeat % len(keys)
        for key in keys[shift:] + keys[:shift]:
            wall, cpu = _timed(tasks[key])
            walls[key].append(wall)
            cpus[key].append(cpu)
    n = len(tokens)
    rows: dict[int, dict[str, float]] = {}
    for (k, what), times in walls.items():
        row = rows.setdefault(k, {"trainable layers": n_layers - k})
        row[f"{what} ms"] = 1000.0 * statistics.median(times) / n
        row[f"{what} cpu ms"] = 1000.0 * statistics.median(cpus[(k, what)]) / n / args.threads
    base = rows[0]["step det ms"]
    base_cpu = rows[0]["step det cpu ms"]
    for row in rows.values():
        row["step ratio"] = row["step det ms"] / base
        row["step cpu ratio"] = row["step det cpu ms"] / base_cpu
        if args.plan:
            row["planned min"] = _plan(row, args.plan)
            row["planned cpu min"] = _plan(row, args.plan, " cpu")
    columns = list(next(iter(rows.values())))
    print(
        f"ms per pair ({args.tokens} tokens, batches of {args.batch_size}, "
        f"{args.threads} thread(s)); wall: median of {args.repeats} round-robin rounds; cpu: "
        "process CPU time / threads; ratios: to k = 0"
    )
    names = [c.replace(" ms", "") for c in columns]
    widths = [max(11, len(name)) for name in names]
    print("k  " + "  ".join(f"{name:>{w}}" for name, w in zip(names, widths, strict=True)))
    for k, row in rows.items():
        cells = [f"{row[c]:>{w}.2f}" for c, w in zip(columns, widths, strict=True)]
        print(f"{k:<2} " + "  ".join(cells))
    print(
        json.dumps(
            {
                "tokens": args.tokens,
                "batch_size": args.batch_size,
                "threads": args.threads,
                "plan": args.plan,
                "rows": {str(k): v for k, v in rows.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
