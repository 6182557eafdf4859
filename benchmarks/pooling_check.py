"""Where the ``bayesian`` pooling strategy's relevance model is wrong: a posterior predictive
check of the unjudged documents by stratum, and the sign of its MAP errors.

The strategy simulates judging the depth-100 pool of a collection of ``benchmarks/pooling.py``
up to ``--budget`` (a share of the pool; ``--seeds`` seeds); then the relevance model is fitted
on the judgements (as the strategy's estimates use it) and, per stratum of the unjudged
documents, the relevant documents it expects (the sum of its P(relevant) at the MAP) are set
beside those the full qrels hold, with the judged documents of the stratum and their relevant
ones (what the model learnt from); beside the expected count at the MAP, the expected count
under the posterior draws (the mean over ``estimate_samples`` Laplace draws of P(relevant)),
which is what the estimates sample relevance from. Strata: the best rank over the runs, by
doubling of the depth (``1``, ``2``, ``3-4``, ..., ``65-100``), and the number of runs that
rank the document; and two that depend on the fit: the document's P(relevant) at the MAP (a
reliability table of the unjudged documents beside the judged ones), and its topic's share of
relevant documents among the topic's judged ones; and the share of the topic's pool that the
full qrels judge (below) crossed with the best rank. Last, the runs' MAP: the mean signed error
of the estimates (estimate - truth), the share of runs estimated too low, the mean half-width of
the 90% intervals and their coverage; and that error split by the count of relevant documents
outside the pool: the runs' MAP error, coverage and half-width with the estimates' count
(``unpooled_draws``), with each draw's expected count instead of its drawn one (no Bernoulli
noise), with the estimate scaled to the true total (how it shares the total among the topics),
with the true total shared by the topics' true relevant documents per doubling (the
discovery-curve rule knowing the pool's relevance), and with the qrels' own counts (what is left
is the relevance model's own error). Last, that split by the topics' reference qrels: strata of
topics by the share of their pool's documents that the full qrels judge (100%: qrels pooled
from these runs at least as deep, as Robust03's topics 601-650; less: qrels that judged part of
the pool, as DL 2021's, or were pooled from other runs, as Robust03's older topics from TREC
6-8), with each stratum's share of the MAP error (``run_measures(topics=...)``; the shares add up to
the error). Sums and means over seeds. Last, one line per seed: the explored documents (the
uniformly drawn fifth of each batch) judged, the relevant found among them and the number the
model expected when it chose them; the unjudged relevant documents expected at the MAP, under
the draws (with the draws' 90% interval of that count) and true; those outside the pool estimated
and true; the MAP error and coverage; then the seeds whose true count lies outside the draws'
interval, the sd over the seeds of the count at the MAP beside the draws' own sd (is the
posterior of the count as wide as the campaigns' spread?), and with ``--posterior nuts`` the
chains' divergent transitions after warm-up; and Spearman's
correlation over the seeds of the explored documents' share of relevant ones with the MAP error
(how much one campaign's error follows the luck of its explored sample), with the spread of
those columns over the seeds and the coverage of the quarters of seeds whose explored documents
held the fewest and the most relevant ones. Prints the tables,
then one JSON object (``per_seed`` holds the seed lines).

Run: ``.venv/bin/python benchmarks/pooling_check.py [--collections dl2021 robust03]
[--budget 5] [--seeds 1] [--cell-effects [--cell-scale 1] [--cell-smooth-scale S]
[--cell-rank-only]]
[--run-scale 50] [--topic-slope-scale 0.5] [--unpooled-window 1]`` (the relevance model's
and the strategy's options as in ``benchmarks/pooling.py``).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pooling import (
    COLLECTIONS,
    _load,
    add_model_arguments,
    bayesian_strategy,
    check_model_arguments,
    model_settings,
)

from probrank.pooling.measures import ideal_dcg, run_measures
from probrank.pooling.pool import Judgements
from probrank.pooling.simulate import simulate
from probrank.pooling.strategies.bayesian import (
    fit_relevance,
    grade_draws,
    last_doubling,
    unpooled_draws,
)

RUN_EDGES = (0, 1, 2, 4, 8, 16, 32, 64)


def _depth_bins(pool: Any) -> tuple[np.ndarray, list[str]]:
    """Each item's doubling of the depth by its best rank over the runs (bin ``j``: best ranks
    in ``(2^(j-1), 2^j]``, bin 0: rank 1; the last bin ends at the depth), and the labels."""
    best = np.where(pool.ranks > 0, pool.ranks, pool.depth).min(axis=0)
    count = int(np.ceil(np.log2(pool.depth))) + 1
    bins = np.minimum(np.ceil(np.log2(best)).astype(np.int64), count - 1)
    labels = []
    for j in range(count):
        low, high = (1 if j == 0 else 2 ** (j - 1) + 1), min(2**j, pool.depth)
        labels.append(str(low) if low == high else f"{low}-{high}")
    return bins, labels


def _posterior_mean(
    model: Any, pool: Any, items: np.ndarray, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each item's P(relevant) averaged over ``draws`` posterior draws (seed 0: the same draws
    for every chunk of items), `len(items)`, and each draw's sum of P(relevant) over the items
    (the relevant items that draw expects), `draws`."""
    means, totals = [], np.zeros(draws)
    for chunk in np.array_split(items, max(1, len(items) // 5000)):
        probs = model.posterior(pool.ranks[:, chunk], pool.item_topic[chunk], draws, seed=0)
        means.append(probs.mean(axis=0))
        totals += probs.sum(axis=1)
    return (np.concatenate(means) if means else np.zeros(0)), totals


P_EDGES = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 1.0)
SHARE_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _bins(values: np.ndarray, edges: tuple[float, ...]) -> tuple[np.ndarray, list[str]]:
    """Each value's bin of ``edges`` (``[e_i, e_i+1)``, the last bin closed) and the labels."""
    index = np.clip(np.searchsorted(np.asarray(edges), values, side="right") - 1, 0, len(edges) - 2)
    return index, [f"{low:g}-{high:g}" for low, high in itertools.pairwise(edges)]


def _fit_strata(
    pool: Any, expected: np.ndarray, judged: np.ndarray, truth: np.ndarray
) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Strata that depend on the fit: the item's P(relevant) at the MAP (a reliability table
    of the unjudged items), and its topic's share of relevant items among the judged ones."""
    count = np.bincount(pool.item_topic[judged], minlength=pool.num_topics)
    hits = np.bincount(pool.item_topic[judged], weights=truth[judged], minlength=pool.num_topics)
    share = (hits / np.maximum(count, 1))[pool.item_topic]
    return {
        "P(rel) at MAP": _bins(expected, P_EDGES),
        "topic judged rel": _bins(share, SHARE_EDGES),
    }


def _strata(pool: Any) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Each item's stratum index and the strata's labels, per kind of stratum."""
    runs = (pool.ranks > 0).sum(axis=0)
    edges = [e for e in RUN_EDGES if e < pool.num_runs] + [pool.num_runs]
    run_bins = np.searchsorted(np.asarray(edges), runs, side="left") - 1
    run_labels = [
        str(high) if low + 1 == high else f"{low + 1}-{high}"
        for low, high in itertools.pairwise(edges)
    ]
    return {"best rank": _depth_bins(pool), "runs ranking it": (run_bins, run_labels)}


SPLIT_VARIANTS = {
    "estimated": "the estimate (the strategy's)",
    "expected": "each draw's expected count",
    "rescaled": "the estimate scaled to the true total",
    "rule": "the true total by true per doubling",
    "true": "the true counts (the model's own)",
}
"""The counts of relevant documents outside the pool that the check computes the runs' MAP
with (:func:`_unpooled_split`)."""
SPLIT_KEYS = (
    "estimated",
    "true",
    *(f"{m}_{v}" for v in SPLIT_VARIANTS for m in ("error", "coverage", "half_width")),
)


REFERENCE_EDGES = (0.0, 0.5, 1.0 - 1e-9, 1.0)
REFERENCE_LABELS = ("0-50%", "50-<100%", "100%")
PROVENANCE_KEYS = (
    "topics",
    "unjudged_expected",
    "unjudged_relevant",
    "outside_estimated",
    "outside_true",
    "map_error_estimated",
    "map_error_true",
    "true_doublings",
)


def _reference_strata(pool: Any, qrels: Any) -> np.ndarray:
    """Each topic's stratum by the share of its pool's documents that the full qrels judge,
    `num_topics` (:data:`REFERENCE_LABELS`; 100%: the qrels were pooled from these runs at least
    as deep as the pool; less: they judged part of it or came from other runs' pools, and the
    rest of the pool counts as non-relevant)."""
    in_qrels = Judgements.from_qrels(pool, qrels).judged
    share = np.bincount(pool.item_topic, weights=in_qrels, minlength=pool.num_topics)
    share /= np.maximum(np.diff(pool.topic_start), 1)
    index, _ = _bins(share, REFERENCE_EDGES)
    return index


def _reference_depth(pool: Any, reference: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each item's stratum by its topic's ``reference`` stratum (:func:`_reference_strata`)
    and its best rank's doubling (:func:`_depth_bins`), and the labels (``"100% 65-100"``)."""
    depth, depth_labels = _depth_bins(pool)
    labels = [f"{r} {d}" for r, d in itertools.product(REFERENCE_LABELS, depth_labels)]
    return reference[pool.item_topic] * len(depth_labels) + depth, labels


def _unpooled_split(
    qrels: Any,
    level: int,
    result: Any,
    model: Any,
    strategy: Any,
    seed: int,
    reference: np.ndarray,
) -> tuple[tuple[float, ...], np.ndarray]:
    """The relevant documents outside the pool, estimated (as the strategy's estimates do:
    :func:`unpooled_draws`) and true (the qrels'), and the runs' MAP error, 90% coverage and
    mean half-width with each count of :data:`SPLIT_VARIANTS`: the estimate; the same with
    ``K`` times the relevant documents per doubling that each draw expects (its P(relevant))
    instead of those it drew (without the draw's Bernoulli noise; the same ``K`` draws); the
    estimate scaled in each draw to the true total (what is left is how it shares the total
    among the topics); the true total shared among the topics as their true relevant
    documents per doubling (how well the discovery-curve rule shares it, knowing the pool's
    relevance); and the true counts (what is left is the relevance model's own error).
    Totals over the topics (see :data:`SPLIT_KEYS`); and per stratum of topics by the qrels'
    judging of their pool (``reference``, :func:`_reference_strata`), `strata x
    PROVENANCE_KEYS`: topics, unjudged relevant documents expected under the draws and true,
    outside the pool estimated and true, the stratum's share of the mean MAP error with the
    estimate and with the true counts (``run_measures(topics=...)``: the shares add up to the
    MAP error), and the ``K`` that fits the stratum: its true relevant documents outside the
    pool over its true relevant documents per doubling (:func:`last_doubling`, the strategy's
    window)."""
    pool, judged = result.pool, result.judgements
    rng = np.random.default_rng(seed)
    probabilities = model.posterior(
        pool.ranks, pool.item_topic, num_samples=strategy.estimate_samples, seed=rng
    )
    grades = grade_draws(judged, probabilities, level=level, rng=rng)
    options = {
        "doublings": strategy.unpooled_doublings,
        "sd": strategy.unpooled_sd,
        "window": strategy.unpooled_window,
    }
    replay = copy.deepcopy(rng)  # the same K draws for the expected count
    estimated = unpooled_draws(pool, grades >= level, rng, **options)
    expected_relevance = np.where(judged.judged, judged.grades >= level, probabilities)
    true_grades = pool.grades_from(qrels).astype(np.float64)
    true = np.broadcast_to(pool.unpooled_relevant(qrels, level).astype(float), estimated.shape)
    total = true[0].sum()
    per_doubling = last_doubling(pool, (true_grades >= level)[None], strategy.unpooled_window)[0]
    counts = {
        "estimated": estimated,
        "expected": unpooled_draws(
            pool, grades >= level, replay, expected=expected_relevance, **options
        ),
        "rescaled": estimated * total / np.maximum(estimated.sum(axis=1, keepdims=True), 1e-12),
        "rule": np.broadcast_to(
            per_doubling * total / max(per_doubling.sum(), 1e-12), estimated.shape
        ),
        "true": true,
    }
    ideal = ideal_dcg(pool, grades)
    truth = result.truth["map"]
    out = [float(estimated.sum(axis=1).mean()), float(total)]
    for name in SPLIT_VARIANTS:
        maps, _ = run_measures(pool, grades, level=level, extra_relevant=counts[name], ideal=ideal)
        lower, upper = np.quantile(maps, [0.05, 0.95], axis=0)
        out.append(float(np.mean(maps.mean(axis=0) - truth)))
        out.append(float(np.mean((lower <= truth) & (truth <= upper))))
        out.append(float(np.mean((upper - lower) / 2)))
    unjudged = ~judged.judged
    expected = np.bincount(
        pool.item_topic[unjudged],
        weights=(grades[:, unjudged] >= level).mean(axis=0),
        minlength=pool.num_topics,
    )
    relevant = (true_grades >= level) & unjudged
    relevant_count = np.bincount(pool.item_topic, weights=relevant, minlength=pool.num_topics)
    rows = np.zeros((len(REFERENCE_LABELS), len(PROVENANCE_KEYS)))
    for b in range(len(REFERENCE_LABELS)):
        inside = reference == b
        if not inside.any():
            continue
        # the stratum's share of the true MAP (run_measures equals trec_eval on full qrels)
        part, _ = run_measures(
            pool, true_grades, level=level, extra_relevant=true[0], topics=inside
        )
        errors = []
        for extra in (estimated, true):
            maps, _ = run_measures(
                pool, grades, level=level, extra_relevant=extra, ideal=ideal, topics=inside
            )
            errors.append(float(np.mean(maps.mean(axis=0) - part)))
        rows[b] = (
            inside.sum(),
            expected[inside].sum(),
            relevant_count[inside].sum(),
            estimated[:, inside].sum(axis=1).mean(),
            true[0, inside].sum(),
            *errors,
            true[0, inside].sum() / max(per_doubling[inside].sum(), 1e-9),
        )
    return tuple(out), rows


def _seed_row(
    seed: int,
    budget: Any,
    averaged: np.ndarray,
    truth: np.ndarray,
    unjudged: np.ndarray,
    split_totals: tuple[float, ...],
) -> dict[str, float]:
    """One seed's explored documents (judged, relevant found, expected when chosen), the
    unjudged relevant documents expected under the draws and true, and those outside the
    pool estimated and true (the caller adds the count check, the MAP error and coverage)."""
    check = budget.explored
    return {
        "seed": seed,
        "explored": check.documents if check else 0,
        "explored_found": check.found if check else 0,
        "explored_expected": check.expected if check else 0.0,
        "unjudged_expected": float(averaged[unjudged].sum()),
        "unjudged_true": float(truth[unjudged].sum()),
        "outside_estimated": split_totals[0],
        "outside_true": split_totals[1],
    }


def _count_check(
    at_map: float, draw_totals: np.ndarray, divergences: int | None
) -> dict[str, float]:
    """The unjudged relevant documents expected at the MAP, the 5% and 95% quantiles and the sd
    of those the posterior draws expect (``draw_totals``, `s`), and the NUTS chain's divergent
    transitions (-1 without a chain)."""
    low, high = np.quantile(draw_totals, [0.05, 0.95])
    return {
        "unjudged_map": float(at_map),
        "unjudged_low": float(low),
        "unjudged_high": float(high),
        "unjudged_sd": float(draw_totals.std(ddof=1)),
        "divergences": -1 if divergences is None else int(divergences),
    }


def _print_counts(rows: list[dict[str, float]]) -> None:
    """How well the posterior knows the unjudged relevant count: the seeds whose true count lies
    outside the draws' 90% interval of it (too low: the draws expect more), and the sd over the
    seeds of the count at the MAP against the draws' own sd (the seed mean)."""
    true = np.array([r["unjudged_true"] for r in rows])
    above = sum(r["unjudged_low"] > t for r, t in zip(rows, true, strict=True))
    below = sum(r["unjudged_high"] < t for r, t in zip(rows, true, strict=True))
    at_map = np.array([r["unjudged_map"] for r in rows])
    spread = at_map.std(ddof=1) if len(rows) > 1 else 0.0
    print(
        f"  unjudged relevant: the true count lies outside the draws' 90% interval in "
        f"{above + below} of {len(rows)} seeds ({above} with the interval above it, {below} "
        f"below); the count at the MAP varies over the seeds with sd {spread:.0f}, the draws' "
        f"own sd is {np.mean([r['unjudged_sd'] for r in rows]):.0f} (seed mean)"
    )
    divergences = [r["divergences"] for r in rows if r["divergences"] >= 0]
    if divergences:
        print(
            f"  NUTS divergent transitions after warm-up: {sum(divergences)} in all, "
            f"{sum(d > 0 for d in divergences)} of {len(divergences)} chains with any"
        )


def _print_seeds(rows: list[dict[str, float]]) -> float | None:
    """Print one line per seed, the mean, sd and range over the seeds of the explored relevant
    found, the unjudged and outside relevant estimated and the MAP error, the coverage and
    error of the quarters of seeds whose explored documents held the fewest and the most
    relevant ones; return Spearman's correlation, over the seeds, of the share of relevant
    documents among the explored ones with the mean MAP error (None with fewer than three
    seeds)."""
    print(
        f"  {'seed':>4} {'explored: found / judged (expected)':>36} "
        f"{'unjudged rel.: MAP / draws [5-95%] / true':>42} {'outside: est. / true':>21} "
        f"{'MAP error':>9} {'coverage':>8}"
    )
    for r in rows:
        explored = f"{r['explored_found']} / {r['explored']} ({r['explored_expected']:.1f})"
        unjudged = (
            f"{r['unjudged_map']:.0f} / {r['unjudged_expected']:.0f} "
            f"[{r['unjudged_low']:.0f}-{r['unjudged_high']:.0f}] / {r['unjudged_true']:.0f}"
        )
        outside = f"{r['outside_estimated']:.0f} / {r['outside_true']:.0f}"
        print(
            f"  {r['seed']:>4} {explored:>36} {unjudged:>42} {outside:>21} "
            f"{r['map_error']:+9.4f} {r['coverage']:8.2f}"
        )
    _print_counts(rows)
    for key in ("explored_found", "unjudged_expected", "outside_estimated", "map_error"):
        values = np.array([r[key] for r in rows])
        sd = values.std(ddof=1) if len(values) > 1 else 0.0
        form = "+.4f" if key == "map_error" else ".1f"
        print(
            f"  {key}: mean {values.mean():{form}}, sd {sd:.4g}, "
            f"lowest {values.min():{form}}, highest {values.max():{form}}"
        )
    found = np.array([r["explored_found"] for r in rows])
    for name, inside in (
        ("fewest", found <= np.quantile(found, 0.25)),
        ("most", found >= np.quantile(found, 0.75)),
    ):
        group = [r for r, keep in zip(rows, inside, strict=True) if keep]
        print(
            f"  the quarter of seeds whose explored documents held the {name} relevant "
            f"({len(group)} seeds, {found[inside].min():.0f}-{found[inside].max():.0f} found): "
            f"coverage {np.mean([r['coverage'] for r in group]):.2f}, "
            f"MAP error {np.mean([r['map_error'] for r in group]):+.4f}"
        )
    rates = [r["explored_found"] / max(r["explored"], 1) for r in rows]
    if len(rows) < 3 or len(set(rates)) < 2:
        return None
    from scipy.stats import spearmanr

    rho = float(spearmanr(rates, [r["map_error"] for r in rows]).statistic)
    print(
        f"  Spearman correlation over the seeds of the explored documents' share relevant "
        f"with the MAP error: {rho:+.2f}"
    )
    return rho


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--collections", nargs="+", default=list(COLLECTIONS), choices=list(COLLECTIONS)
    )
    parser.add_argument("--budget", type=float, default=5.0, help="share of the pool, percent")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0 .. SEEDS-1")
    add_model_arguments(parser)
    args = parser.parse_args()
    check_model_arguments(parser, args)
    settings = model_settings(args)
    strategy = bayesian_strategy(args)
    out: dict[str, Any] = {
        "benchmark": "pooling_check",
        "budget": args.budget,
        "model": {
            "posterior": args.posterior,
            "cell_effects": args.cell_effects,
            "cell_scale": args.cell_scale,
            "cell_smooth_scale": args.cell_smooth_scale,
            "cell_counts": not args.cell_rank_only,
            "run_scale": args.run_scale,
            "topic_slope_scale": args.topic_slope_scale,
        },
        "rows": [],
    }
    for collection in args.collections:
        qrels, runs, level = _load(collection)
        tables: dict[str, np.ndarray] = {}
        errors, low, half, cover = [], [], [], []
        unpooled: list[tuple[float, ...]] = []
        per_seed: list[dict[str, float]] = []
        provenance = np.zeros((len(REFERENCE_LABELS), len(PROVENANCE_KEYS)))
        labels: dict[str, list[str]] = {}
        for seed in range(args.seeds):
            result = simulate(qrels, runs, strategy, [f"{args.budget:g}%"], seed=seed, level=level)
            pool, judged = result.pool, result.judgements
            truth = (pool.grades_from(qrels) >= level).astype(np.float64)
            model = fit_relevance(judged, level=level, settings=settings)
            expected = model.predict(pool.ranks, pool.item_topic)
            unjudged = ~judged.judged
            reference = _reference_strata(pool, qrels)
            averaged = np.zeros(pool.num_items)
            averaged[unjudged], draw_totals = _posterior_mean(
                model, pool, np.flatnonzero(unjudged), strategy.estimate_samples
            )
            strata = {
                **_strata(pool),
                **_fit_strata(pool, expected, ~unjudged, truth),
                "qrels judge, rank": _reference_depth(pool, reference),
            }
            for kind, (index, names) in strata.items():
                labels[kind] = names
                table = np.zeros((len(names), 6))
                for b in range(len(names)):
                    inside = index == b
                    table[b] = (
                        np.sum(inside & unjudged),
                        expected[inside & unjudged].sum(),
                        truth[inside & unjudged].sum(),
                        np.sum(inside & ~unjudged),
                        truth[inside & ~unjudged].sum(),
                        averaged[inside & unjudged].sum(),
                    )
                tables[kind] = tables.get(kind, 0.0) + table
            estimates = result.budgets[-1].estimates
            true_map = result.truth["map"]
            mean, lower, upper = (
                estimates.mean["map"],
                estimates.lower["map"],
                estimates.upper["map"],
            )
            split_totals, split_rows = _unpooled_split(
                qrels, level, result, model, strategy, seed, reference
            )
            unpooled.append(split_totals)
            provenance += split_rows
            errors.append(float(np.mean(mean - true_map)))
            low.append(float(np.mean(mean < true_map)))
            half.append(float(np.mean((upper - lower) / 2)))
            cover.append(float(np.mean((lower <= true_map) & (true_map <= upper))))
            per_seed.append(
                _seed_row(seed, result.budgets[-1], averaged, truth, unjudged, split_totals)
                | _count_check(expected[unjudged].sum(), draw_totals, model.mcmc_divergences)
                | {"map_error": errors[-1], "coverage": cover[-1]}
            )
        judged_count = result.budgets[-1].judgements
        print(
            f"{collection}: {args.budget:g}% of the pool judged ({judged_count} documents), "
            f"{args.seeds} seed(s), sums over seeds"
        )
        for kind, table in tables.items():
            print(
                f"  {kind:<16} {'unjudged':>9} {'expected':>9} {'relevant':>9} "
                f"{'exp/rel':>8} {'judged':>7} {'relevant':>9} {'post.':>9} {'post/rel':>8}"
            )
            rows = [*zip(labels[kind], table, strict=True), ("all", table.sum(axis=0))]
            for name, (n, exp, rel, n_judged, rel_judged, post) in rows:
                if n == 0 and n_judged == 0:
                    continue
                ratio = f"{exp / rel:8.2f}" if rel else f"{'-':>8}"
                post_ratio = f"{post / rel:8.2f}" if rel else f"{'-':>8}"
                print(
                    f"  {name:<16} {n:9.0f} {exp:9.1f} {rel:9.0f} {ratio} "
                    f"{n_judged:7.0f} {rel_judged:9.0f} {post:9.1f} {post_ratio}"
                )
        summary = {
            "mean_error": float(np.mean(errors)),
            "share_too_low": float(np.mean(low)),
            "mean_half_width": float(np.mean(half)),
            "coverage": float(np.mean(cover)),
        }
        print(
            f"  MAP: mean error (estimate - truth) {summary['mean_error']:+.4f}, estimated too "
            f"low for {summary['share_too_low']:.0%} of the runs, 90% interval half-width "
            f"{summary['mean_half_width']:.4f}, coverage {summary['coverage']:.2f}"
        )
        split = np.mean(np.asarray(unpooled), axis=0)
        summary["unpooled"] = dict(zip(SPLIT_KEYS, map(float, split), strict=True))
        print(
            f"  relevant outside the pool: estimated {split[0]:.1f} (mean of the draws), true "
            f"{split[1]:.0f}; the runs' MAP with each count outside the pool (mean over seeds):"
        )
        print(f"  {'count outside the pool':<40} {'error':>8} {'coverage':>8} {'half-width':>10}")
        for i, description in enumerate(SPLIT_VARIANTS.values()):
            error, coverage, width = split[2 + 3 * i : 5 + 3 * i]
            print(f"  {description:<40} {error:+8.4f} {coverage:8.2f} {width:10.4f}")
        provenance /= args.seeds
        summary["by_reference"] = {
            name: dict(zip(PROVENANCE_KEYS, map(float, row), strict=True))
            for name, row in zip(REFERENCE_LABELS, provenance, strict=True)
            if row[0]
        }
        print(
            "  by the share of the topic's pool the full qrels judge (mean over seeds): topics, "
            "unjudged relevant expected under the draws / true, outside the pool estimated / "
            "true, the topics' share of the MAP error with the estimate and with the true counts, "
            "and the K that fits the topics (true outside / true per doubling)"
        )
        for name, row in zip(REFERENCE_LABELS, provenance, strict=True):
            if row[0]:
                print(
                    f"  {name:<10} {row[0]:5.0f} {row[1]:9.1f} / {row[2]:6.0f} "
                    f"{row[3]:9.1f} / {row[4]:6.0f} {row[5]:+.4f} {row[6]:+.4f} {row[7]:5.2f}"
                )
        summary["explored_error_spearman"] = _print_seeds(per_seed)
        out["rows"].append(
            {
                "collection": collection,
                "judged": judged_count,
                "seeds": args.seeds,
                "per_seed": per_seed,
                "strata": {
                    kind: {
                        name: dict(
                            zip(
                                (
                                    "unjudged",
                                    "expected",
                                    "relevant",
                                    "judged",
                                    "judged_rel",
                                    "posterior",
                                ),
                                map(float, row),
                                strict=True,
                            )
                        )
                        for name, row in zip(labels[kind], tables[kind], strict=True)
                    }
                    for kind in tables
                },
                "map": summary,
            }
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
