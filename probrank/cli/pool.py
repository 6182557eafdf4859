"""``probrank pool``: simulate a pooling strategy against full qrels (``simulate``), ask which
documents to judge next (``next``), or check the relevance model on the documents ``next``
explored (``check``) (the work: :mod:`probrank.pooling.simulate`,
:mod:`probrank.pooling.predictions`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from probrank.cli._parsing import (
    add_global_options,
    at_least,
    positive_float,
    positive_int,
    seed,
    strict_json,
)
from probrank.exceptions import InputDataError

if TYPE_CHECKING:
    from probrank.pooling.strategies import Strategy

__all__ = ["TORCH", "add_arguments", "run"]

TORCH = True  # probrank.models (the relevance model's package) loads torch


def _strategy_names() -> list[str]:
    from probrank.pooling.strategies import STRATEGIES

    return [name.value for name in STRATEGIES]


def _posterior_names() -> list[str]:
    from probrank.models.pooling import PoolingPosterior

    return [name.value for name in PoolingPosterior]


def _level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--level",
        type=at_least(1, "a positive integer", maximum=1_000_000),
        default=1,
        help="grades >= LEVEL are relevant, as trec_eval -l (default 1; 2 for TREC DL)",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strategy",
        default="bayesian",
        choices=_strategy_names(),
        help="the pooling strategy (default bayesian; see probrank.pooling.strategies)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the strategy (default 0)")
    parser.add_argument(
        "--pool-depth",
        type=at_least(1, "a positive integer", maximum=100_000),
        default=100,
        help="documents per run and topic in the pool (default 100)",
    )
    _level(parser)
    parser.add_argument(
        "--posterior",
        default=None,
        choices=_posterior_names(),
        help="bayesian only: the relevance model's posterior for the estimates (default "
        "laplace; nuts: Pyro's NUTS on the exact posterior, slower; models/pooling/README.md)",
    )
    parser.add_argument(
        "--cell-effects",
        action="store_true",
        help="bayesian only: add the relevance model's cell effects (best rank x runs ranking "
        "a document; PoolingModelSettings.cell_effects; models/pooling/README.md)",
    )
    parser.add_argument(
        "--cell-smooth-scale",
        type=positive_float,
        default=None,
        metavar="SD",
        help="with --cell-effects: prior sd of adjacent cells' difference (default: independent)",
    )
    parser.add_argument(
        "--cell-rank-only",
        action="store_true",
        help="with --cell-effects: cells by the best rank alone, not by the runs ranking a "
        "document too (PoolingModelSettings.cell_counts false; with --cell-smooth-scale 0.3 "
        "the setting that covered TREC DL 2021 at every budget, models/pooling/README.md)",
    )
    parser.add_argument(
        "--unpooled-window",
        type=at_least(1, "a positive integer", maximum=64),
        default=None,
        metavar="N",
        help="bayesian only: the relevant documents outside the pool are K times those per "
        "doubling of the depth over its last N doublings (default 1; 2 with --posterior nuts "
        "estimated TREC DL 2021 better; Bayesian.unpooled_window)",
    )


def _strategy(args: argparse.Namespace) -> Strategy:
    """The strategy of ``--strategy``, with the relevance model's options (``--posterior``,
    ``--cell-effects``, ``--cell-smooth-scale``, ``--cell-rank-only``) and
    ``--unpooled-window`` for ``bayesian``."""
    from dataclasses import replace

    from probrank.pooling.strategies import Bayesian, StrategyName, make_strategy

    if args.cell_smooth_scale is not None and not args.cell_effects:
        raise InputDataError("--cell-smooth-scale needs --cell-effects")
    if args.cell_rank_only and not args.cell_effects:
        raise InputDataError("--cell-rank-only needs --cell-effects")
    given = [
        option
        for option, value in (
            ("--posterior", args.posterior),
            ("--cell-effects", args.cell_effects or None),
            ("--unpooled-window", args.unpooled_window),
        )
        if value is not None
    ]
    if not given:
        return make_strategy(args.strategy)
    if args.strategy != StrategyName.BAYESIAN.value:
        raise InputDataError(
            f"{given[0]} is an option of the bayesian strategy, not {args.strategy}"
        )
    defaults = Bayesian()
    settings = replace(
        defaults.model,
        posterior=args.posterior or defaults.model.posterior,
        cell_effects=args.cell_effects,
        cell_smooth_scale=args.cell_smooth_scale,
        cell_counts=not args.cell_rank_only,
    )
    window = args.unpooled_window or defaults.unpooled_window  # a given window is >= 1
    return replace(defaults, model=settings, unpooled_window=window)


def add_arguments(pool: argparse.ArgumentParser) -> None:
    """The arguments of ``probrank pool``."""
    pool.description = (
        "Test-collection pooling: simulate a strategy that chooses which documents to judge "
        "(depth-k, mtf, mm-ns, active-sampling, bayesian) against full qrels and estimate "
        "every run's MAP and nDCG@10 with 90% intervals, list the next documents to judge, "
        "or check the relevance model on the documents it explored."
    )
    sub = pool.add_subparsers(dest="pool_command", required=True, metavar="{simulate,next,check}")
    simulate = sub.add_parser(
        "simulate",
        help="judge a pool from full qrels and compare the estimates with them",
        description=(
            "Judge the depth-POOL_DEPTH pool of RUNS from QRELS with a strategy (a document "
            "the qrels do not judge counts as not relevant) up to each budget; write "
            "DIR/judged.qrels (judging order), DIR/estimates.json (each budget's MAP and "
            "nDCG@10 estimates with 90% intervals, Kendall tau, RMSE, coverage; for the "
            "bayesian strategy its check on the documents it explored uniformly: relevant "
            "found, expected and the 90% predictive interval of the count) and "
            "DIR/simulation.png (tau and RMSE against judgements)."
        ),
    )
    simulate.add_argument("qrels", help="the full TREC qrels (.gz allowed): the simulated assessor")
    simulate.add_argument("runs", nargs="+", help="TREC run files whose pool is judged")
    simulate.add_argument(
        "--budget",
        nargs="+",
        required=True,
        metavar="BUDGET",
        help="judgements: counts (500) or shares of the pool (5%%); several in one call",
    )
    simulate.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    simulate.add_argument(
        "--json", action="store_true", help="print estimates.json's content on stdout"
    )
    _common(simulate)
    add_global_options(simulate, top_level=False)
    nxt = sub.add_parser(
        "next",
        help="the next documents to judge, given the judgements so far",
        description=(
            "Print the next K (topic, document) pairs to judge in the pool of RUNS, one "
            "'topic 0 document' line each (a qrels line without the grade), given the "
            "judgements so far in --judged. The bayesian strategy explores by each topic's "
            "count here: every fifth judgement of a topic is drawn uniformly from its "
            "unjudged documents, whatever K."
        ),
    )
    nxt.add_argument("runs", nargs="+", help="TREC run files whose pool is judged")
    nxt.add_argument(
        "--judged", default=None, metavar="QRELS", help="the judgements so far (TREC qrels)"
    )
    nxt.add_argument("-k", type=positive_int, default=50, help="documents to propose (default 50)")
    nxt.add_argument("--json", action="store_true", help='print JSON [{"topic", "doc"}]')
    nxt.add_argument(
        "--predictions",
        default=None,
        metavar="FILE",
        help="bayesian: append the relevance model's predictions of the documents it explored "
        "to FILE (JSON lines, made when missing), for `probrank pool check`",
    )
    _common(nxt)
    add_global_options(nxt, top_level=False)
    check = sub.add_parser(
        "check",
        help="the relevance model against the explored documents judged so far",
        description=(
            "Compare the relevant documents found among the explored documents that QRELS "
            "judges with what the bayesian strategy's relevance model predicted when `pool "
            "next --predictions FILE` drew them (uniformly, before their judgements): the "
            "count, its 90% predictive interval and a two-sided predictive p-value. A small "
            "p-value says the model's predictions of the unjudged documents, which its "
            "estimates extrapolate, are off."
        ),
    )
    check.add_argument("predictions", metavar="FILE", help="the file of pool next --predictions")
    check.add_argument(
        "--judged", required=True, metavar="QRELS", help="the judgements so far (TREC qrels)"
    )
    _level(check)
    check.add_argument("--seed", type=seed, default=0, help="seed of the Monte Carlo (default 0)")
    check.add_argument("--json", action="store_true", help="print the check as JSON (null: none)")
    add_global_options(check, top_level=False)


def _check(args: argparse.Namespace) -> None:
    """``pool check``: the held-out check from a predictions file."""
    from probrank.data.trec import Qrels
    from probrank.pooling.predictions import check_predictions, read_predictions

    predictions = read_predictions(args.predictions)
    if not predictions:
        raise InputDataError(f"{args.predictions} holds no prediction (does it exist?)")
    result = check_predictions(
        predictions, Qrels.read(args.judged), level=args.level, seed=args.seed
    )
    if args.json:
        print(strict_json(None if result is None else result.to_json()))
        return
    if result is None:
        print(f"none of the {len(predictions)} explored documents is judged in {args.judged}")
        return
    print(
        f"explored documents judged: {result.documents}; relevant: {result.found}; "
        f"expected: {result.expected:.1f} (90% predictive interval "
        f"{result.lower:.0f}-{result.upper:.0f}); p = {result.p_value:.3f}"
    )
    if result.p_value < 0.1:
        side = "too high" if result.found < result.expected else "too low"
        print(
            f"the relevance model's predictions are {side} (p < 0.1): read its intervals with care"
        )
    else:
        print("the relevance model's predictions hold on them (p >= 0.1)")


def run(args: argparse.Namespace) -> None:
    """Run ``pool simulate``, ``pool next`` or ``pool check`` and print the result."""
    from probrank.data.trec import Qrels
    from probrank.pooling.predictions import append_predictions, read_predictions
    from probrank.pooling.simulate import propose_next, read_runs, simulate, write_simulation

    if args.pool_command == "check":
        _check(args)
        return
    strategy = _strategy(args)
    runs = read_runs(args.runs)
    if args.pool_command == "simulate":
        qrels = Qrels.read(args.qrels)
        result = simulate(
            qrels,
            runs,
            strategy,
            args.budget,
            seed=args.seed,
            pool_depth=args.pool_depth,
            level=args.level,
            progress=None,
        )
        paths = write_simulation(result, args.output)
        if args.json:
            print(strict_json(result.to_json()))
            return
        header = ("judged", "relevant", "tau_map", "tau_ndcg", "rmse_map", "coverage")
        print(" ".join(f"{h:>8}" for h in header) + f" {'explored (90% predictive)':>26}")
        for b in result.budgets:
            check = b.explored
            explored = (
                "-"
                if check is None
                else f"{check.found}/{check.expected:.1f} ({check.lower:.0f}-{check.upper:.0f})"
            )
            print(
                f"{b.judgements:>8} {b.relevant_found:>8} {b.tau_map:>8.3f} {b.tau_ndcg:>8.3f}"
                f" {b.rmse_map:>8.4f} {b.coverage:>8.2f} {explored:>26}"
            )
        print(f"wrote {paths['qrels']}, {paths['estimates']}, {paths['plot']}")
        return
    judged = Qrels.read(args.judged) if args.judged is not None else None
    if args.predictions is not None:
        if args.strategy != "bayesian":
            raise InputDataError(
                f"--predictions is an option of the bayesian strategy, not {args.strategy}"
            )
        read_predictions(args.predictions)  # a file of another kind: refused before the fit
    batch = propose_next(
        runs,
        judged,
        strategy,
        args.k,
        seed=args.seed,
        pool_depth=args.pool_depth,
        level=args.level,
    )
    if args.predictions is not None:
        append_predictions(args.predictions, batch.explored)
    chosen = batch.documents
    if args.json:
        print(strict_json([{"topic": t, "doc": d} for t, d in chosen]))
    else:
        for topic, doc in chosen:
            print(f"{topic} 0 {doc}")
