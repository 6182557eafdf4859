"""Time one BoTorch round (qLogNEI + conditioning) on probrank's models against a PairwiseGP refit.

One process, 45 candidates (``--candidates``), the same comparisons for every model. For each
of ``--rounds`` rounds a simulated user's judgement is added and:

* **InteractiveRanker** (last-layer Laplace, the model card's default posterior; the model of
  ``InteractiveRanker.botorch_model``) and **GPFRanker** (the GPF head, 1,024 random features;
  the model of ``GPFRanker.botorch_model``, :func:`probrank.models.gpf_ranker.botorch.head_model`)
  are *conditioned* on the judgement (``condition_on_observations``, closed form), then
  ``qLogNoisyExpectedImprovement`` (128 Sobol samples, ``X_baseline`` the candidates,
  ``cache_root=False``) scores every candidate through ``optimize_acqf_discrete``;
* BoTorch's own **PairwiseGP** is *refitted* on all comparisons so far (a new
  ``PairwiseGP`` + ``fit_gpytorch_mll`` of its ``PairwiseLaplaceMarginalLogLikelihood``), then
  the same qLogNEI round runs on it.

The table gives median seconds of the conditioning (or refit) and of the whole round
(conditioning + acquisition), and their ratios to the PairwiseGP refit; goal: probrank's
conditioning <= 0.2x the PairwiseGP refit. Features are synthetic (``--width`` wide, random
candidate features; timing does not depend on their values), networks randomly initialised
(InteractiveRanker) or trained for a few epochs on random labels (GPF head).

    .venv/bin/python benchmarks/botorch_round.py [--candidates 45] [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from botorch.acquisition import qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import PairwiseGP, PairwiseLaplaceMarginalLogLikelihood
from botorch.optim import optimize_acqf_discrete
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

from probrank.interactive.users import Response, SimulatedUser
from probrank.models.gpf_ranker.botorch import head_model
from probrank.models.interactive import InteractiveRanker, InteractiveRankerSettings, WarmStart
from probrank.nn.heads import FitSettings, build_head
from probrank.nn.siamese import SiameseUtilityNet


def _acquire(model: Any, x: Tensor) -> int:
    """One qLogNEI step over the candidates: the index of the best one."""
    acq = qLogNoisyExpectedImprovement(
        model,
        X_baseline=x,
        sampler=SobolQMCNormalSampler(torch.Size([128]), seed=0),
        cache_root=False,
        prune_baseline=False,
    )
    best, _ = optimize_acqf_discrete(acq, q=1, choices=x)
    return int((x == best.reshape(1, -1)).all(-1).nonzero()[0, 0])


def _pairwise_gp(x: Tensor, comparisons: Tensor) -> PairwiseGP:
    model = PairwiseGP(x, comparisons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(PairwiseLaplaceMarginalLogLikelihood(model.likelihood, model))
    return model


def _time(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=45)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--width", type=int, default=1536)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message=".*has known numerical issues")
    n, d = args.candidates, args.width
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=generator, dtype=torch.float64)
    user = SimulatedUser(torch.randn(n, generator=generator, dtype=torch.float64), 0.3, seed=0)
    pairs = [tuple(torch.randperm(n, generator=generator)[:2].tolist()) for _ in range(args.rounds)]
    comparisons = [(i, j) if user.judge(i, j) is Response.FIRST else (j, i) for i, j in pairs]

    settings = InteractiveRankerSettings()
    net = SiameseUtilityNet(d, settings.warm_start.hidden, dropout=0.1, seed=0)
    ranker = InteractiveRanker.from_warm_start(WarmStart(net=net), settings)
    head = build_head("gpf", d, hidden=256, num_features=1024, seed=0)
    train = torch.randn(512, d, generator=generator)
    head.fit(train, (train[:, 0] > 0).float(), FitSettings(epochs=2, batch_size=128))
    models: dict[str, Any] = {
        "InteractiveRanker": ranker.botorch_model("q", [str(k) for k in range(n)], features=x),
        "GPFRanker": head_model(head, d, x),
    }
    seconds: dict[str, dict[str, list[float]]] = {
        name: {"condition": [], "round": []} for name in [*models, "PairwiseGP refit"]
    }
    for r, (winner, loser) in enumerate(comparisons):
        points, judged = x[[winner, loser]], torch.tensor([[0, 1]])
        for name in list(models):
            model = models[name]
            models[name], cond = _time(
                lambda m=model, p=points, j=judged: m.condition_on_observations(p, j)
            )
            _, acq = _time(lambda m=models[name]: _acquire(m, x))
            seconds[name]["condition"].append(cond)
            seconds[name]["round"].append(cond + acq)
        so_far = torch.tensor(comparisons[: r + 1])
        gp, refit = _time(lambda c=so_far: _pairwise_gp(x, c))
        _, acq = _time(lambda g=gp: _acquire(g, x))
        seconds["PairwiseGP refit"]["condition"].append(refit)
        seconds["PairwiseGP refit"]["round"].append(refit + acq)

    base = statistics.median(seconds["PairwiseGP refit"]["condition"])
    base_round = statistics.median(seconds["PairwiseGP refit"]["round"])
    rows = []
    for name, times in seconds.items():
        cond, whole = statistics.median(times["condition"]), statistics.median(times["round"])
        rows.append(
            {
                "model": name,
                "condition_s": cond,
                "round_s": whole,
                "condition_ratio": cond / base,
                "round_ratio": whole / base_round,
            }
        )
    print(
        f"one BoTorch round (qLogNEI + conditioning), {n} candidates, width {d}, "
        f"median of {args.rounds} rounds, {args.threads} thread(s)"
    )
    print(f"{'model':<18} {'condition s':>12} {'round s':>9} {'cond/refit':>11} {'round/GP':>9}")
    for row in rows:
        print(
            f"{row['model']:<18} {row['condition_s']:>12.4f} {row['round_s']:>9.4f} "
            f"{row['condition_ratio']:>11.3f} {row['round_ratio']:>9.3f}"
        )
    goal = all(r["condition_ratio"] <= 0.2 for r in rows if r["model"] in models)
    print(f"probrank conditioning <= 0.2x the PairwiseGP refit: {goal}")
    print(json.dumps({"rows": rows, "candidates": n, "rounds": args.rounds, "goal_met": goal}))


if __name__ == "__main__":
    main()
