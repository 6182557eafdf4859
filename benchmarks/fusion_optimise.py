"""Fusion weights on Robust03: ranx's grid search against BoTorch, cross-validated over topics.

For each weighted rule (``wsum``, ``wmnz``, ``wrrf``) and each fold of a ``--folds``-fold
split of the judged topics (the folds of ``probrank fuse``), the weights of the top runs are
chosen on the other folds' topics to maximise their mean nDCG@10, then the fold's topics are
fused with them; the CV nDCG@10 is trec_eval's ``ndcg_cut_10`` (probrank.evaluation) of the run
that holds every topic fused by its own fold's weights. Optimisers:

* ``ranx-grid``: ranx's ``optimize_fusion`` search: the tuples of ``{0, 0.1, ..., 1}`` whose
  floating-point sum is exactly 1.0 (ranx's trial set, rebuilt here), the last best kept (ranx
  compares with ``>=``); each trial evaluated by probrank's nDCG@10 (trec_eval's tie order),
  not by ranx's own fusion and ``evaluate``, which take about 0.4 s per trial here (with
  ``--ranx`` the script also runs ranx's ``optimize_fusion`` itself for ``wsum`` on every
  fold, and reports its time and CV nDCG@10);
* ``grid``: probrank's complete lattice of step 0.1 (``probrank fuse --optimise grid``);
* ``botorch``: qLogNEI Bayesian optimisation, ``--budget`` evaluations per fold
  (``probrank fuse --optimise botorch``);
* ``botorch-select`` (``ranx-grid-select``): the rule and weights with the best training
  nDCG@10 per fold among the three ``botorch`` (``ranx-grid``) searches: method selection;
  its evaluations are theirs summed, and its ratios are against ``ranx-grid-select``.

Rows also show the untrained baseline (CombSUM, equal weights). Ratios are against
``ranx-grid`` of the same rule, measured in the same process. Prints a table and JSON.

    .venv/bin/python benchmarks/fusion_optimise.py --runs 6 --folds 5 --budget 60
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from probrank._files import write_text_atomically
from probrank.data import Qrels, Run
from probrank.data.folds import split_folds
from probrank.data.paths import shared_data_dir
from probrank.evaluation import evaluate
from probrank.fusion import FusionObjective, LearnedWeights, fuse
from probrank.fusion.optimize import WeightSearch, best_of
from probrank.fusion.trained import training_topics

TOP_RUNS = ["pircRBa1", "aplrob03a", "uwmtCR0", "VTcdhgp1", "THUIRr0301", "fub03IeOLKe3"]
"""The six Robust03 runs of highest MAP (../shared/data/README.md)."""
RULES = ("wsum", "wmnz", "wrrf")
FUSE_METHOD = {"wsum": "weighted", "wmnz": "weighted_mnz", "wrrf": "weighted_rrf"}
DEPTH = 100


def ranx_trials(dim: int, step: float = 0.1) -> torch.Tensor:
    """ranx's grid: tuples of ``round(arange(0, 1 + step, step), 1)`` whose sum is exactly 1.0."""
    values = [round(float(x), 1) for x in np.arange(0, 1 + step, step)]
    rows = [seq for seq in itertools.product(values, repeat=dim) if sum(seq) == 1.0]
    return torch.tensor(rows, dtype=torch.float64)


def ranx_grid(objective: FusionObjective, dim: int) -> WeightSearch:
    """ranx's search on ``objective``: every trial, the last of the best values kept."""
    tried = ranx_trials(dim)
    values = objective(tried)
    last = len(values) - 1 - int(torch.argmax(values.flip(0)))
    order = torch.tensor([last, *[i for i in range(len(values)) if i != last]])
    return best_of(tried[order], values[order], "ranx-grid")


def cross_validated(
    runs: Sequence[Run],
    qrels: Qrels,
    folds: list[list[str]],
    search: Callable[[list[Run], Qrels], tuple[dict[str, float], WeightSearch]],
    rule: str,
) -> dict:
    """Fit weights per fold with ``search``, fuse each fold's topics, evaluate all of them."""
    judged = qrels.as_dict()
    topics = [t for fold in folds for t in fold]
    fused: dict[str, dict[str, float]] = {}
    evaluations, train_values, weights = 0, [], []
    start = time.perf_counter()
    for test in folds:
        train = Qrels({q: judged[q] for q in topics if q not in set(test)})
        chosen, result = search(list(runs), train)
        evaluations += result.evaluations
        train_values.append(result.value)
        weights.append(chosen)
        part = fuse(
            [r.restrict(test) for r in runs], FUSE_METHOD[rule], depth=DEPTH, weights=chosen
        )
        fused.update(part.as_dict())
    wall = time.perf_counter() - start
    cv = evaluate(qrels, Run(fused), ["nDCG@10"])["nDCG@10"]
    return {
        "rule": rule,
        "evaluations": evaluations,
        "evaluations_per_fold": evaluations / len(folds),
        "cv_ndcg10": cv,
        "train_ndcg10_mean": float(np.mean(train_values)),
        "wall_s": wall,
        "weights": weights,
    }


def _learned(rule: str, optimiser: str, budget: int, seed: int):
    def search(runs: list[Run], train: Qrels) -> tuple[dict[str, float], WeightSearch]:
        model = LearnedWeights(rule, optimiser=optimiser, budget=budget, depth=DEPTH, seed=seed)
        model.fit(runs, train)
        if model.search is None:
            raise RuntimeError("fit did not record its search")
        return model.weights, model.search

    return search


def _ranx_search(rule: str):
    def search(runs: list[Run], train: Qrels) -> tuple[dict[str, float], WeightSearch]:
        objective = FusionObjective(runs, train, rule, depth=DEPTH)
        result = ranx_grid(objective, len(runs))
        return dict(zip([r.name for r in runs], result.weights, strict=True)), result

    return search


def ranx_itself(runs: Sequence[Run], qrels: Qrels, folds: list[list[str]]) -> dict:
    """ranx's own ``optimize_fusion`` (wsum, min-max, ndcg@10) per fold, numba-compiled."""
    import ranx

    judged = qrels.as_dict()
    topics = [t for fold in folds for t in fold]
    cut = [r.restrict(topics).truncate(DEPTH) for r in runs]
    fused: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    for test in folds:
        train = [q for q in topics if q not in set(test)]
        ranx_qrels = ranx.Qrels({q: dict(judged[q]) for q in train})
        ranx_runs = [ranx.Run({q: dict(r.as_dict()[q]) for q in train}, name=r.name) for r in cut]
        best = ranx.optimize_fusion(
            ranx_qrels, ranx_runs, norm="min-max", method="wsum", metric="ndcg@10",
            show_progress=False,
        )  # fmt: skip
        chosen = {r.name: float(w) for r, w in zip(runs, best["weights"], strict=True)}
        part = fuse([r.restrict(test) for r in runs], "weighted", depth=DEPTH, weights=chosen)
        fused.update(part.as_dict())
    wall = time.perf_counter() - start
    return {
        "rule": "wsum",
        "evaluations": len(ranx_trials(len(runs))) * len(folds),
        "cv_ndcg10": evaluate(qrels, Run(fused), ["nDCG@10"])["nDCG@10"],
        "wall_s": wall,
        "version": ranx.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="top runs by MAP (2 to 6)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=60, help="BoTorch evaluations per fold")
    parser.add_argument("--seed", type=int, default=0, help="seeds the folds and BoTorch")
    parser.add_argument("--ranx", action="store_true", help="also run ranx's own grid (slow)")
    parser.add_argument("--json", default=None, help="also write the JSON to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)

    folder = shared_data_dir("fusion", "robust03")
    qrels = Qrels.read(folder / "qrels.txt")
    runs = [Run.read(folder / "runs" / f"input.{n}.gz") for n in TOP_RUNS[: args.runs]]
    folds = split_folds(training_topics(runs, qrels), args.folds, seed=args.seed)
    load_before = os.getloadavg()

    combsum = fuse(runs, "combsum", depth=DEPTH)
    baseline = evaluate(qrels, combsum, ["nDCG@10"])["nDCG@10"]
    rows: list[dict] = []
    for rule in RULES:
        reference = cross_validated(runs, qrels, folds, _ranx_search(rule), rule)
        rows.append({"optimiser": "ranx-grid", **reference})
        for optimiser in ("grid", "botorch"):
            search = _learned(rule, optimiser, args.budget, args.seed)
            rows.append(
                {"optimiser": optimiser, **cross_validated(runs, qrels, folds, search, rule)}
            )
    rows.append(_selection(runs, qrels, folds, rows, "ranx-grid"))
    rows.append(_selection(runs, qrels, folds, rows, "botorch"))
    by_rule = {r["rule"]: r for r in rows if r["optimiser"] == "ranx-grid"}
    by_rule["best"] = next(r for r in rows if r["optimiser"] == "ranx-grid-select")
    for row in rows:
        ref = by_rule[row["rule"]]
        row["evaluations_ratio"] = row["evaluations"] / ref["evaluations"]
        row["wall_ratio"] = row["wall_s"] / ref["wall_s"]
        row["cv_ndcg10_minus_ranx_grid"] = row["cv_ndcg10"] - ref["cv_ndcg10"]
    ranx_row = ranx_itself(runs, qrels, folds) if args.ranx else None

    load_after = os.getloadavg()
    print(
        f"Robust03, top {len(runs)} runs, depth {DEPTH}, min-max, {args.folds}-fold CV over "
        f"{sum(len(f) for f in folds)} topics (seed {args.seed}), BoTorch budget {args.budget}"
    )
    print(
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, 1 torch thread; 1-min load "
        f"average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print(f"untrained CombSUM (equal weights): nDCG@10 {baseline:.4f}")
    header = (
        f"{'rule':<7}{'optimiser':<16}{'evals':>7}{'evals/fold':>11}{'ratio':>7}"
        f"{'CV nDCG@10':>11}{'- ranx':>8}{'train':>8}{'wall s':>8}{'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['rule']:<7}{r['optimiser']:<16}{r['evaluations']:>7}"
            f"{r['evaluations_per_fold']:>11.1f}{r['evaluations_ratio']:>7.3f}"
            f"{r['cv_ndcg10']:>11.4f}{r['cv_ndcg10_minus_ranx_grid']:>+8.4f}"
            f"{r['train_ndcg10_mean']:>8.4f}{r['wall_s']:>8.1f}{r['wall_ratio']:>7.2f}"
        )
    if ranx_row is not None:
        print(
            f"ranx {ranx_row['version']} optimize_fusion itself (wsum): {ranx_row['evaluations']} "
            f"evaluations, CV nDCG@10 {ranx_row['cv_ndcg10']:.4f}, {ranx_row['wall_s']:.1f} s"
        )
    report = {
        "benchmark": "fusion_optimise",
        "data": "robust03",
        "runs": [r.name for r in runs],
        "folds": args.folds,
        "seed": args.seed,
        "budget": args.budget,
        "depth": DEPTH,
        "combsum_ndcg10": baseline,
        "rows": rows,
        "ranx_itself": ranx_row,
        "load_average": [load_before[0], load_after[0]],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        write_text_atomically(args.json, text + "\n")


def _selection(
    runs: Sequence[Run], qrels: Qrels, folds: list[list[str]], rows: list[dict], optimiser: str
) -> dict:
    """Per fold, the rule whose ``optimiser`` search reached the best training nDCG@10
    (method selection)."""
    searched = {r["rule"]: r for r in rows if r["optimiser"] == optimiser}
    judged = qrels.as_dict()
    topics = [t for fold in folds for t in fold]
    fused: dict[str, dict[str, float]] = {}
    chosen_rules, train_values = [], []
    for f, test in enumerate(folds):
        train = Qrels({q: judged[q] for q in topics if q not in set(test)})
        values = {}
        for rule, row in searched.items():
            objective = FusionObjective(runs, train, rule, depth=DEPTH)
            weights = torch.tensor([row["weights"][f][r.name] for r in runs])
            values[rule] = float(objective(weights))
        rule = max(values, key=values.__getitem__)
        chosen_rules.append(rule)
        train_values.append(values[rule])
        part = fuse(
            [r.restrict(test) for r in runs],
            FUSE_METHOD[rule],
            depth=DEPTH,
            weights=searched[rule]["weights"][f],
        )
        fused.update(part.as_dict())
    return {
        "optimiser": f"{optimiser}-select",
        "rule": "best",
        "evaluations": sum(r["evaluations"] for r in searched.values()),
        "evaluations_per_fold": sum(r["evaluations_per_fold"] for r in searched.values()),
        "cv_ndcg10": evaluate(qrels, Run(fused), ["nDCG@10"])["nDCG@10"],
        "train_ndcg10_mean": float(np.mean(train_values)),
        "wall_s": sum(r["wall_s"] for r in searched.values()),
        "chosen_rules": chosen_rules,
        "weights": [searched[r]["weights"][f] for f, r in enumerate(chosen_rules)],
    }


if __name__ == "__main__":
    main()
