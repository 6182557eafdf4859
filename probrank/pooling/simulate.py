"""Simulation of a pooling strategy against full qrels, and the ``probrank pool`` commands'
work (``simulate`` and ``next``).

The simulated assessor answers from the full qrels; a chosen document they do not judge counts
as judged not relevant (grade 0). At each budget the strategy's estimates of every run's MAP
and nDCG@10 are compared with the full qrels' values over the same topics, cut at the pool
depth (trec_eval ``-l level -M depth``, computed by :func:`probrank.evaluation.evaluate_many`):
Kendall's tau of the rankings, RMSE, relevant documents found, and the share of runs whose
90% interval covers the true MAP.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.pooling.checks import ExploredCheck
from probrank.pooling.estimates import PoolEstimates
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies import Strategy, make_strategy

__all__ = [
    "BudgetResult",
    "NextBatch",
    "SimulationResult",
    "next_documents",
    "parse_budget",
    "propose_next",
    "read_runs",
    "resolve_budgets",
    "simulate",
    "true_measures",
    "write_simulation",
]

_BUDGET = re.compile(r"^(?:(\d+)|(\d+(?:\.\d*)?|\.\d+)%)$")


def parse_budget(text: str) -> tuple[str, float]:
    """A budget as written on the command line: ``"500"`` (documents) or ``"2.5%"`` (of the
    pool). Returns ``("count", 500)`` or ``("share", 0.025)``.

    Raises:
        InputDataError: anything else, zero, or a share above 100%.
    """
    match = _BUDGET.match(text.strip())
    if not match:
        raise InputDataError(
            f"budget must be a count (500) or a share of the pool (5%), got {text!r}"
        )
    if match.group(1) is not None:
        count = int(match.group(1))
        if count < 1:
            raise InputDataError(f"budget must be at least one document, got {text!r}")
        return ("count", float(count))
    share = float(match.group(2)) / 100.0
    if not 0 < share <= 1:
        raise InputDataError(f"budget share must be in (0%, 100%], got {text!r}")
    return ("share", share)


def resolve_budgets(budgets: Sequence[str], pool_size: int) -> list[int]:
    """Budgets as numbers of documents, ascending and distinct.

    Raises:
        InputDataError: a malformed budget, or one above the pool's size.
    """
    out = set()
    for text in budgets:
        kind, value = parse_budget(text)
        count = int(value) if kind == "count" else max(1, math.floor(value * pool_size + 0.5))
        if count > pool_size:
            raise InputDataError(f"budget {text} is over the pool: {count} > {pool_size} documents")
        out.add(count)
    if not out:
        raise InputDataError("no budget given")
    return sorted(out)


def read_runs(paths: Sequence[str | os.PathLike[str]]) -> list[Run]:
    """Read run files (names: the file names without ``.gz``; a leading ``input.`` dropped)."""
    runs = []
    for path in paths:
        run = Run.read(path)
        name = run.name[len("input.") :] if run.name.startswith("input.") else run.name
        runs.append(Run(run.as_dict(), name=name, tag=run.tag))
    return runs


def true_measures(
    qrels: Qrels, runs: Sequence[Run], *, level: int, depth: int
) -> dict[str, np.ndarray]:
    """The runs' MAP and nDCG@10 on the full qrels (trec_eval ``-l level -M depth``)."""
    from probrank.evaluation.measures import evaluate_many

    values = evaluate_many(qrels, runs, ["map", "ndcg_cut_10"], relevance_level=level, depth=depth)
    return {m: np.array([v[m] for v in values]) for m in ("map", "ndcg_cut_10")}


@dataclass(frozen=True)
class BudgetResult:
    """The state of a simulation at one budget.

    Attributes:
        judgements: Documents judged.
        relevant_found: Of them, relevant.
        estimates: The strategy's estimates.
        seconds: Time since the simulation started.
        tau_map: Kendall's tau between the estimated and the true MAP ranking.
        tau_ndcg: The same for nDCG@10.
        rmse_map: Root mean squared error of the estimated MAP.
        coverage: Share of runs whose 90% interval holds the true MAP (NaN for points).
        explored: The strategy's check of its relevance model on the explored documents
            (:class:`~probrank.pooling.checks.ExploredCheck`; None for a strategy without
            one).
    """

    judgements: int
    relevant_found: int
    estimates: PoolEstimates
    seconds: float
    tau_map: float
    tau_ndcg: float
    rmse_map: float
    coverage: float
    explored: ExploredCheck | None = None

    def to_json(self) -> dict[str, Any]:
        """The budget's entry of ``estimates.json``."""
        return {
            "judgements": self.judgements,
            "relevant_found": self.relevant_found,
            "seconds": self.seconds,
            "tau_map": self.tau_map,
            "tau_ndcg_cut_10": self.tau_ndcg,
            "rmse_map": self.rmse_map,
            "coverage_map": None if math.isnan(self.coverage) else self.coverage,
            "runs": self.estimates.to_json(),
            "p_better_map": self.estimates.pairwise_json(),
            "explored": None if self.explored is None else self.explored.to_json(),
        }


@dataclass
class SimulationResult:
    """A simulation: its judgements (in order) and one :class:`BudgetResult` per budget."""

    strategy: str
    pool: Pool
    judgements: Judgements
    budgets: list[BudgetResult] = field(default_factory=list)
    truth: dict[str, np.ndarray] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"strategy", "pool_size", "budgets": [...], "true": {"RUN": {"map", ...}}}``."""
        return {
            "strategy": self.strategy,
            "pool_size": self.pool.num_items,
            "budgets": [b.to_json() for b in self.budgets],
            "true": {
                name: {m: float(v[r]) for m, v in self.truth.items()}
                for r, name in enumerate(self.pool.run_names)
            },
        }


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import kendalltau

    if len(a) < 2:
        return float("nan")
    value = kendalltau(a, b).statistic
    return float(value) if value is not None and np.isfinite(value) else 0.0


def simulate(
    qrels: Qrels,
    runs: Sequence[Run],
    strategy: Strategy | str,
    budgets: Sequence[str],
    *,
    seed: int = 0,
    pool_depth: int = 100,
    level: int = 1,
    progress: bool | None = False,
) -> SimulationResult:
    """Simulate ``strategy`` judging the pool of ``runs`` from ``qrels``.

    Args:
        qrels: The full judgements (the simulated assessor). The pool keeps their topics.
        runs: The runs.
        strategy: A strategy or its name.
        budgets: Budgets (``"500"``, ``"5%"`` of the depth-``pool_depth`` pool).
        seed: Seed of the strategy and of the estimates.
        pool_depth: Documents per run and topic in the pool.
        level: Grades >= ``level`` are relevant.
        progress: Show a progress bar of the judgements (None: on a terminal only).

    Raises:
        InputDataError: empty qrels, no run sharing a topic with them, a bad budget.
    """
    if not any(len(docs) for docs in qrels.values()):
        raise InputDataError(f"{qrels.name}: the qrels judge no document")
    strategy = make_strategy(strategy) if isinstance(strategy, str) else strategy
    ranked = {q for run in runs for q in run}
    topics = [q for q in qrels if q in ranked]
    if not topics:
        raise InputDataError(f"no run ranks documents for a topic of {qrels.name}")
    pool = Pool.from_runs(runs, depth=pool_depth, topics=sorted(topics, key=_key))
    counts = resolve_budgets(budgets, pool.num_items)
    truth = true_measures(
        qrels, [r.restrict(pool.topics) for r in runs], level=level, depth=pool_depth
    )
    grades = pool.grades_from(qrels)
    judgements = Judgements(pool)
    selector = strategy.start(pool, judgements, level=level, seed=seed)
    result = SimulationResult(str(strategy.name.value), pool, judgements, truth=truth)
    from probrank._progress import progress_bar

    bar = progress_bar(
        total=counts[-1],
        disable=None if progress is None else not progress,
        desc=f"pool {result.strategy}",
        unit="doc",
    )
    started = time.perf_counter()
    for target in counts:
        while len(judgements) < target:
            items = selector.propose(min(selector.batch_size, target - len(judgements)))
            if len(items) == 0:
                break
            judgements.add(items, grades[items])
            selector.observe(items, grades[items])
            bar.update(len(items))
        estimates = selector.estimate(seed=seed)
        mean, lower, upper = estimates.mean["map"], estimates.lower["map"], estimates.upper["map"]
        interval = bool(np.any(upper > lower))
        result.budgets.append(
            BudgetResult(
                judgements=len(judgements),
                relevant_found=int(np.sum(judgements.grades >= level)),
                estimates=estimates,
                seconds=time.perf_counter() - started,
                tau_map=_tau(mean, truth["map"]),
                tau_ndcg=_tau(estimates.mean["ndcg_cut_10"], truth["ndcg_cut_10"]),
                rmse_map=float(np.sqrt(np.mean((mean - truth["map"]) ** 2))),
                coverage=float(np.mean((lower <= truth["map"]) & (truth["map"] <= upper)))
                if interval
                else float("nan"),
                explored=selector.explored_check(seed=seed),
            )
        )
    bar.close()
    return result


def _key(qid: str) -> tuple[int, int | str]:
    return (0, int(qid)) if qid.isdigit() else (1, qid)


def plot_simulation(result: SimulationResult, path: str | os.PathLike[str]) -> Path:
    """A PNG of Kendall's tau (MAP, nDCG@10) and the RMSE of MAP against judgements."""
    from probrank._files import new_figure, save_figure

    figure, (left, right) = new_figure(1, 2, figsize=(9.0, 3.5))
    x = [b.judgements for b in result.budgets]
    left.plot(x, [b.tau_map for b in result.budgets], "o-", label="MAP")
    left.plot(x, [b.tau_ndcg for b in result.budgets], "s--", label="nDCG@10")
    left.set_xlabel("judgements")
    left.set_ylabel("Kendall tau vs full qrels")
    left.legend()
    right.plot(x, [b.rmse_map for b in result.budgets], "o-")
    right.set_xlabel("judgements")
    right.set_ylabel("RMSE of MAP")
    figure.suptitle(f"{result.strategy}: pool of {result.pool.num_items} documents")
    figure.subplots_adjust(wspace=0.35)
    return save_figure(figure, path)


def write_simulation(result: SimulationResult, folder: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``judged.qrels`` (judging order), ``estimates.json`` and ``simulation.png``."""
    from probrank._files import check_output_folder, write_text_atomically

    out = check_output_folder(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "qrels": out / "judged.qrels",
        "estimates": out / "estimates.json",
        "plot": out / "simulation.png",
    }
    result.judgements.write(paths["qrels"])
    write_text_atomically(paths["estimates"], json.dumps(result.to_json(), indent=2) + "\n")
    plot_simulation(result, paths["plot"])
    return paths


@dataclass(frozen=True)
class NextBatch:
    """What to judge next (:func:`propose_next`).

    Attributes:
        documents: The (topic, document) pairs to judge, in the strategy's order.
        explored: Those drawn uniformly (explored; ``bayesian`` only), each with its posterior
            predictive P(relevant) per draw of the fit that drew them, `s`: what
            :mod:`probrank.pooling.predictions` keeps for the held-out check.
    """

    documents: list[tuple[str, str]]
    explored: dict[tuple[str, str], np.ndarray]


def next_documents(
    runs: Sequence[Run],
    judged: Qrels | None,
    strategy: Strategy | str,
    k: int,
    *,
    seed: int = 0,
    pool_depth: int = 100,
    level: int = 1,
) -> list[tuple[str, str]]:
    """The next ``k`` (topic, document) pairs to judge: :func:`propose_next`'s documents."""
    return propose_next(
        runs, judged, strategy, k, seed=seed, pool_depth=pool_depth, level=level
    ).documents


def propose_next(
    runs: Sequence[Run],
    judged: Qrels | None,
    strategy: Strategy | str,
    k: int,
    *,
    seed: int = 0,
    pool_depth: int = 100,
    level: int = 1,
) -> NextBatch:
    """The next ``k`` (topic, document) pairs to judge, given the judgements so far, with the
    predictions of those the strategy explored.

    Args:
        runs: The runs whose pool is judged.
        judged: The partial qrels (None: nothing judged yet); lines outside the pool are
            ignored.
        strategy: A strategy or its name, used as started afresh for each call
            (:meth:`~probrank.pooling.strategies.base.Strategy.for_fresh_starts`: a
            ``bayesian`` one explores by each topic's count of judgements, since a batch of
            ``k`` may give a topic one or two documents, whose per-batch share of exploration
            rounds to none).
        k: Documents to propose.
        seed: Seed of the strategy.
        pool_depth: Documents per run and topic in the pool.
        level: Grades >= ``level`` are relevant.
    """
    strategy = make_strategy(strategy) if isinstance(strategy, str) else strategy
    strategy = strategy.for_fresh_starts()
    pool = Pool.from_runs(runs, depth=pool_depth)
    judgements = Judgements.from_qrels(pool, judged) if judged is not None else Judgements(pool)
    selector = strategy.start(pool, judgements, level=level, seed=seed)
    items = selector.propose(k)

    def pair(item: int) -> tuple[str, str]:
        return pool.topics[pool.item_topic[item]], str(pool.docs[item])

    explored = selector.explored_predictions()
    return NextBatch(
        documents=[pair(i) for i in items.tolist()],
        explored={pair(i): explored[i] for i in items.tolist() if i in explored},
    )
