"""Time one interactive round (pair selection + update + re-ranking) for every posterior.

In one process, for each posterior (MC dropout T = 20, SWAG S = 20, last-layer Laplace,
deep ensemble M = 5, GPPL) x strategy (EI, EUBO by default) x number of candidates, a simulated
session of ``--rounds`` judgements runs on cached features and the seconds of every round are
collected; the table shows the median and the 90th percentile, and the ratio of the median to
the GPPL + EUBO baseline (the issue's anchor) at the same number of candidates. Goal: median
round <= 0.25 s at 45 candidates on the 2-core CPU.

``--data synthetic`` (default) uses random 1,536-wide features and randomly initialised
networks of the paper's shape (timing does not depend on trained weights, except through the
SGD update's early stop); ``--data liveqa-med`` uses the real MiniLM features of the LiveQA-Med
questions with the most candidates and the cached MEDIQA warm start (seed 0).

    .venv/bin/python benchmarks/interactive_speed.py [--candidates 10 25 45] [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.data.datasets import DatasetName, load_candidate_lists
from probrank.encoders.config import encoder_cache_dir, encoder_from_config
from probrank.inference.swag import SWAGCollector
from probrank.interactive.simulate import simulate
from probrank.interactive.users import SimulatedUser, simulated_user_seed, utilities_from_grades
from probrank.models.interactive import (
    InteractiveRanker,
    InteractiveRankerSettings,
    PosteriorKind,
    WarmStart,
    WarmStartSettings,
)
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.neural import CandidateSetPosterior
from probrank.posteriors.swag import swag_parameters

WIDTH = 1536


@dataclass(frozen=True)
class Question:
    """One question's candidates as a session sees them."""

    qid: str
    features: Tensor  # `n x d`
    utilities: Tensor  # `n`, the simulated user's

    @property
    def num_candidates(self) -> int:
        return int(self.features.shape[0])


def _factory(
    kind: PosteriorKind, warm: WarmStart, question: Question
) -> Callable[[], CandidateSetPosterior]:
    """Fresh posteriors of ``kind`` over the question's candidates (default settings, seed 0),
    as :meth:`probrank.models.InteractiveRanker.session` builds them."""
    ranker = InteractiveRanker.from_warm_start(warm, InteractiveRankerSettings(posterior=kind))
    return lambda: ranker.preference_model(question.features, seed=0)


def _synthetic_warm_start(options: WarmStartSettings) -> WarmStart:
    members = [
        SiameseUtilityNet(WIDTH, options.hidden, dropout=options.dropout, seed=k)
        for k in range(options.ensemble_size)
    ]
    collector = SWAGCollector(max_rank=options.swag_epochs)
    generator = torch.Generator().manual_seed(0)
    for _ in range(options.swag_epochs):
        params = swag_parameters(members[0], options.swag_layers)
        collector.collect([p + 0.01 * torch.randn(p.shape, generator=generator) for p in params])
    return WarmStart(net=members[0], members=members, swag=collector.posterior())


def _synthetic_question(n: int) -> Question:
    generator = torch.Generator().manual_seed(n)
    h = WIDTH // 4
    u = torch.randn(h, generator=generator).expand(n, h)
    v = u + torch.randn(n, h, generator=generator)
    grades = torch.randint(1, 5, (n,), generator=generator)
    return Question(
        qid=f"synthetic-{n}",
        features=torch.cat([u, v, u * v, (u - v).abs()], dim=-1),
        utilities=grades.double() + 0.1 * torch.rand(n, generator=generator, dtype=torch.float64),
    )


def _encode(encoder: object, lists: list[CandidateList]) -> list[Tensor]:
    queries, candidates = pair_texts(lists)
    with torch.no_grad():
        features = encoder.encode_pairs(queries, candidates).float().cpu()  # type: ignore[attr-defined]
    sizes = [len(item) for item in lists]
    return list(torch.split(features, sizes))


def _real(sizes: list[int]) -> tuple[dict[int, Question], WarmStart]:
    """LiveQA-Med questions (best grade >= 3, 2..45 candidates, as the experiments keep them)
    with MiniLM features, and seed 0's MEDIQA warm start (from the experiments' cache)."""
    encoder = encoder_from_config({"show_progress": False})
    lists = [
        item
        for item in load_candidate_lists(DatasetName.LIVEQA_MED, "test")
        if max(item.grades) >= 3 and 2 <= len(item) <= 45
    ]
    by_size = sorted(
        (
            Question(item.qid, block, utilities_from_grades(item.grades, item.candidates))
            for item, block in zip(lists, _encode(encoder, lists), strict=True)
        ),
        key=lambda q: q.num_candidates,
    )
    questions = {}
    for n in sizes:
        fitting = [q for q in by_size if q.num_candidates <= n]
        questions[n] = fitting[-1] if fitting else by_size[0]
    train, val = (load_candidate_lists(DatasetName.MEDIQA, s) for s in ("train", "validation"))
    blocks = (_encode(encoder, train), [i.grades for i in train])
    val_blocks = (_encode(encoder, val), [i.grades for i in val])
    cache = encoder_cache_dir(None, None)
    warm = {}
    for kind in (PosteriorKind.ENSEMBLE, PosteriorKind.SWAG):
        ranker = InteractiveRanker(InteractiveRankerSettings(posterior=kind))
        ranker.fit_features(*blocks, *val_blocks, cache_dir=cache)
        warm[kind] = ranker.warm_start
    ensemble, swag = warm[PosteriorKind.ENSEMBLE], warm[PosteriorKind.SWAG]
    assert ensemble is not None and swag is not None
    return questions, WarmStart(net=ensemble.net, members=ensemble.members, swag=swag.swag)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, nargs="+", default=[10, 25, 45])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--strategies", nargs="+", default=["ei", "eubo"])
    parser.add_argument("--data", choices=["synthetic", "liveqa-med"], default="synthetic")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.data == "synthetic":
        warm = _synthetic_warm_start(InteractiveRankerSettings().warm_start)
        questions = {n: _synthetic_question(n) for n in args.candidates}
    else:
        questions, warm = _real(args.candidates)
    rows = []
    for question in questions.values():
        for kind in PosteriorKind:
            for strategy in args.strategies:
                factory = _factory(kind, warm, question)
                factory().posterior()  # warm-up (first calls allocate)
                user = SimulatedUser(question.utilities, 0.3, simulated_user_seed(0, question.qid))
                start = time.perf_counter()
                trace = simulate(factory, user, strategy, rounds=args.rounds, seed=0)
                total = time.perf_counter() - start
                seconds = sorted(trace.round_seconds)
                rows.append(
                    {
                        "candidates": question.num_candidates,
                        "posterior": kind.value,
                        "strategy": strategy,
                        "median_s": statistics.median(seconds),
                        "p90_s": seconds[int(0.9 * (len(seconds) - 1))],
                        "session_s": total,
                    }
                )
    for row in rows:
        base = next(
            r["median_s"]
            for r in rows
            if r["candidates"] == row["candidates"]
            and r["posterior"] == "gppl"
            and r["strategy"] == ("eubo" if "eubo" in args.strategies else args.strategies[0])
        )
        row["ratio_to_gppl_eubo"] = row["median_s"] / base
    header = (
        f"{'n':>3}  {'posterior':<10} {'strategy':<8} {'median s':>9} {'p90 s':>8} {'ratio':>6}"
    )
    print(f"interactive round time ({args.data}, {args.rounds} rounds, {args.threads} thread(s))")
    print(header)
    for row in rows:
        print(
            f"{row['candidates']:>3}  {row['posterior']:<10} {row['strategy']:<8} "
            f"{row['median_s']:>9.4f} {row['p90_s']:>8.4f} {row['ratio_to_gppl_eubo']:>6.2f}"
        )
    largest = max(r["candidates"] for r in rows)
    worst = max(r["median_s"] for r in rows if r["candidates"] == largest)
    print(f"slowest median round at {largest} candidates: {worst:.4f} s (goal <= 0.25 s)")
    print(json.dumps({"rows": rows, "goal_met": worst <= 0.25}))


if __name__ == "__main__":
    main()
