"""The ``qlfusion_cv`` protocol: the paper's Tables 1 and 2 by 10-fold cross-validation.

Per fold ``f`` of ``F``: test topics fold ``f``, validation fold ``f + 1`` (mod ``F``), the
rest train. One quantifier per (fold, input run) predicts the proportion of relevant documents
in the run's top ``depth`` list of each test topic; hyperparameters (batch size, LR's ridge
penalty, RF's leaf size) are chosen on the validation fold only. Every topic is fused with the
quantifiers of the fold that held it out (QLFusion: CombSUM of min-max scores times
``p_hat``), and the fused run is evaluated once over all topics. CombSUM, CombMNZ and META need
no training.

The input runs are the ``top_runs`` runs with the highest MAP over all topics (the paper's
setup; this uses the judgements for run *selection* only, as the paper does).

What runs in parallel (``[experiment] executor = "ray"``, ``--executor ray``): one task per
(seed, training group), a group being every (fold, run, batch size, loss) member of one
vectorised SVI loop or one scikit-learn kind
(:meth:`~probrank.models.qlfusion.QLFusion.training_groups`; 6 per seed with every variant),
each trained by :meth:`~probrank.models.qlfusion.QLFusion.cross_fit_group` of the protocol's
model. Groups and seeds are independent (each seeds its own generators), so the results equal
the local executor's bit for bit on CPU; folds are not split, because the members of one loop
share its random streams and its length.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import Any

from probrank._threads import torch_threads
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError
from probrank.executors import ExecutorKind, Task, open_executor
from probrank.experiments.qlfusion_cv.config import DEFAULT_MEASURES, QLFusionExperimentSettings
from probrank.experiments.qlfusion_cv.data import load_selected
from probrank.experiments.results import ExperimentResult
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.models._settings import settings_to_json
from probrank.models.qlfusion import (
    PAPER_VARIANTS,
    VARIANTS,
    CrossFitData,
    QLFusion,
    QLFusionSettings,
    TrainingGroup,
)

__all__ = ["DEFAULT_MEASURES", "TABLE_1", "UNSUPERVISED", "run"]

UNSUPERVISED = (FusionMethod.COMBSUM, FusionMethod.COMBMNZ, FusionMethod.META)
"""The unsupervised baselines of Table 1 (they need no training)."""

TABLE_1 = ("combsum", "combmnz", "meta", "qlfusion_lr", "qlfusion_rf", "qlfusion", "qlfusion_det")
"""The rows of the paper's Table 1, in order (extensions follow them)."""

_TABLE_2 = {
    ("probabilistic", "proposed loss"): "qlfusion",
    ("probabilistic", "MSE"): "qlfusion_prob_mse",
    ("deterministic", "proposed loss"): "qlfusion_det_binomial",
    ("deterministic", "MSE"): "qlfusion_det",
}


def _strip_name(name: str) -> str:
    return name[len("input.") :] if name.startswith("input.") else name


def _train_group(
    data: CrossFitData,
    group: TrainingGroup,
    seed: int,
    settings: QLFusionSettings,
    progress: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One task: a training group of one seed (the trained models are not sent back)."""
    model = QLFusion(dataclasses.replace(settings, seed=seed, progress=progress))
    preds, info = model.cross_fit_group(data, group)
    info.pop("quantifiers", None)
    return preds, info


def run(
    config: QLFusionExperimentSettings,
    *,
    config_path: Path,
    seeds: int = 3,
    smoke: bool = False,
    progress: bool = True,
) -> ExperimentResult:
    """Run the QLFusion cross-validation a config describes (see the module docstring).

    ``[protocol] variants`` lists the quantifier variants (default: every one in
    :data:`~probrank.models.qlfusion.VARIANTS`); ``[experiment] threads`` sets
    torch's threads for the run and for each task (restored afterwards); ``[experiment]
    executor`` and ``ray_address`` say where the tasks run.

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`; a
            smoke run's with the ``[smoke]`` tables merged, ``smoke=True``).
        config_path: The config file (``[data] path`` is relative to it).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: Whether this is a smoke run (its sizes come from the merged ``[smoke]``
            tables).
        progress: Show progress bars.
    """
    with torch_threads(config.experiment.threads):
        return _run(config, config_path=config_path, seeds=seeds, progress=progress)


def _run(
    config: QLFusionExperimentSettings, *, config_path: Path, seeds: int, progress: bool
) -> ExperimentResult:
    settings = config.quantifier
    if settings.names_plugins and settings.plugin_folder is None:
        # your own prior or likelihood beside the config imports in every worker process
        folder = str(Path(config_path).resolve().parent)
        settings = dataclasses.replace(settings, plugin_folder=folder)
        config = dataclasses.replace(config, quantifier=settings)
    model = QLFusion(settings)
    variants = list(config.protocol.variants)
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise InputDataError(f"unknown [protocol] variants {sorted(unknown)}", path=config_path)
    qrels, selected, data = load_selected(config, config_path, model, variants=variants)
    protocol = config.protocol
    depth = protocol.depth
    measures = list(protocol.measures)
    values: dict[str, dict[str, list[float]]] = {}
    for method in UNSUPERVISED:
        fused = fuse(selected, method, norm="minmax", depth=depth, name=method.value)
        scores = evaluate(qrels, fused, measures)
        values[method.value] = {m: [scores[m]] * seeds for m in measures}
    mae: dict[str, list[float]] = {}
    val_mae: dict[str, list[float]] = {}
    seconds: dict[str, list[float]] = {}
    chosen: dict[str, list[int]] = {}
    coverage: dict[str, dict[str, list[float]]] = {}
    loo: dict[str, dict[str, list[float]]] = {}
    concentration: dict[str, list[float]] = {}
    groups = model.training_groups(variants)
    executor_settings = config.experiment.executor_settings()
    local = executor_settings.kind is ExecutorKind.LOCAL
    with open_executor(executor_settings) as executor:
        shared = executor.share(data)
        tasks = [
            Task(
                f"seed {seed}, {group.key}",
                _train_group,
                (shared, group, seed, settings, progress and local),
                threads=config.experiment.threads,
            )
            for seed in range(seeds)
            for group in groups
        ]
        results = executor.map(tasks, desc="training groups", progress=progress)
    for seed in range(seeds):
        per_seed = results[seed * len(groups) : (seed + 1) * len(groups)]
        cross_fit = model.merge_cross_fit(data, variants, per_seed)
        for name in variants:
            scores = evaluate(qrels, cross_fit.fuse(selected, name), measures)
            for m in measures:
                values.setdefault(name, {}).setdefault(m, []).append(scores[m])
            mae.setdefault(name, []).append(cross_fit.test_mae[name])
            val_mae.setdefault(name, []).append(cross_fit.val_mae[name])
            for key, share in cross_fit.coverage.get(name, {}).items():
                coverage.setdefault(name, {}).setdefault(key, []).append(share)
            for key, value in cross_fit.loo.get(name, {}).items():
                loo.setdefault(name, {}).setdefault(key, []).append(value)
            if name in cross_fit.concentration:
                concentration.setdefault(name, []).extend(cross_fit.concentration[name])
        for group, s in cross_fit.seconds.items():
            seconds.setdefault(group, []).append(s)
        for name, sizes in cross_fit.batch_sizes.items():
            chosen.setdefault(name, []).extend(sizes)
    order = [m for m in TABLE_1 if m in values] + [m for m in values if m not in TABLE_1]
    table_2 = [m for m in _TABLE_2.values() if m in values]
    grid_only = set(_TABLE_2.values()) - set(TABLE_1)  # reported in Table 2 only
    extra: dict[str, dict[str, dict[str, float]]] = {}
    if len(table_2) == len(_TABLE_2):
        for measure in [m for m in ("P@5", "nDCG@5", "nDCG@10") if m in measures]:
            table: dict[str, dict[str, float]] = {}
            for (row, column), name in _TABLE_2.items():
                table.setdefault(row, {})[column] = statistics.fmean(values[name][measure])
            extra[f"Table 2 ({measure}, mean over seeds)"] = table
    extra["Quantifier MAE of p_hat (mean over seeds; validation: the chosen models')"] = {
        name: {"test": statistics.fmean(mae[name]), "validation": statistics.fmean(val_mae[name])}
        for name in mae
    }
    extra[
        "Posterior predictive coverage of held-out lists' proportions (share of test lists "
        "inside the 50% / 90% interval, mean over seeds)"
    ] = {
        name: {key: statistics.fmean(shares) for key, shares in by_level.items()}
        for name, by_level in coverage.items()
    }
    extra[
        "PSIS-LOO of the training lists under the counts' likelihood (per list, pooled over "
        "fold x run models, mean over seeds; pareto_k_bad: share of lists with k > 0.7)"
    ] = {
        name: {key: statistics.fmean(v) for key, v in by_key.items()}
        for name, by_key in loo.items()
    }
    if concentration:
        extra["Learned concentration c (median and range over fold x run models and seeds)"] = {
            name: {"median": statistics.median(c), "min": min(c), "max": max(c)}
            for name, c in concentration.items()
        }
    extra["Chosen batch sizes (share of fold x run models)"] = {
        name: {str(b): sizes.count(b) / len(sizes) for b in settings.batch_sizes}
        for name, sizes in chosen.items()
    }
    extra["Training wall time per seed (s)"] = {
        group: {f"seed {i}": s for i, s in enumerate(times)} for group, times in seconds.items()
    }
    paper = [v for v in PAPER_VARIANTS if v in variants]
    notes = [
        f"runs: {', '.join(_strip_name(r.name) for r in selected)} (top {len(selected)} by MAP)",
        f"topics: {len(data.topics)}; folds: {len(data.folds)}; depth: {depth}; seeds: {seeds}",
        f"paper variants: {', '.join(paper)}; extensions: "
        + (", ".join(v for v in variants if v not in PAPER_VARIANTS) or "none"),
        "settings: "
        + ", ".join(
            f"{k}={v}"
            for k, v in settings_to_json(settings).items()
            if k not in ("seed", "progress")  # seeds: --seeds; progress: --quiet
        ),
    ]
    resolved = {
        "folds": len(data.folds),
        "fold_seed": protocol.fold_seed,
        "depth": depth,
        "top_runs": len(selected),
        "measures": measures,
        "variants": variants,
    }
    return ExperimentResult(
        title=config.experiment.title or "QLFusion",
        values={k: values[k] for k in order if k not in grid_only},
        extra=extra,
        notes=notes,
        settings={"protocol": resolved, "quantifier": settings_to_json(settings)},
    )
