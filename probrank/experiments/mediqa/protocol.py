"""MEDIQA 2019 Task 3 protocol: train on both training sets, select on validation, report on
test with the official metrics (:mod:`probrank.evaluation.mediqa`).

Systems:

* ``chiqa``: CHiQA's order (SystemRank), every answer labelled correct;
* ``chiqa_topk``: CHiQA's order, its top k answers labelled correct (k by validation accuracy);
* ``lr_filter``: logistic regression on the joint features (C by validation log-loss),
  p > 0.5, ranked by p (the paper's feature-engineered filter);
* ``svm_rank``: pairwise linear SVM ranker (C by validation pairwise accuracy), labels from the
  LR filter;
* ``multitask_det`` and ``multitask``: the deterministic and the Bayesian multi-task head, a
  :class:`~probrank.models.multitask.MultiTaskRanker` built from ``[model]``
  (:func:`~probrank.experiments.mediqa.config.multitask_settings`) and fitted on the
  features by its :meth:`~probrank.models.multitask.MultiTaskRanker.fit_features`. Per
  seed, one net per ranking weight lambda is fitted
  (early stopping on the validation loss); lambda, the P(correct) threshold and whether the
  top-ranked answer of each question is always kept (every validation question has a correct
  answer) are chosen together by validation accuracy, ties by validation MRR. Answers are
  ranked by posterior mean utility.

Data and features: :mod:`probrank.experiments.mediqa.data`. Test noise: the standard deviation
of each measure over bootstrap resamples of the test questions (seed 0's predictions). The
per-seed values, the extra tables and a reliability diagram of the test P(correct) are written
with the run's results (:mod:`probrank.experiments.provenance`).

What runs in parallel (``[experiment] executor = "ray"``): one task per seed (the LR filter, the
SVM ranker and both multi-task selections of that seed, on the features built once here); the
bootstrap tables use seed 0's predictions. Every model is seeded from the seed, so the results
equal the local executor's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from probrank._files import new_figure
from probrank.evaluation.calibration_plots import plot_reliability
from probrank.executors import Task, open_executor
from probrank.experiments.mediqa.baselines import (
    chiqa,
    chiqa_top_k,
    fit_lr_filter,
    fit_svm_rank,
    select_top_k,
)
from probrank.experiments.mediqa.config import THRESHOLDS, MediqaMultitaskExperimentSettings
from probrank.experiments.mediqa.data import MediqaData, build_mediqa_data
from probrank.experiments.mediqa.scoring import MEASURES, MediqaScorer, submission
from probrank.experiments.results import ExperimentResult
from probrank.models.multitask.mediqa_features import FeatureSet
from probrank.models.multitask.model import MultiTaskRanker, MultiTaskSettings
from probrank.models.multitask.selection import keep_labels

__all__ = ["SYSTEMS", "THRESHOLDS", "run", "select_multitask", "submission", "system_settings"]

SYSTEMS = ("chiqa", "chiqa_topk", "lr_filter", "svm_rank", "multitask_det", "multitask")
"""The systems of the results table, in order."""


def system_settings(
    model: MultiTaskSettings, *, bayesian: bool, smoke: bool = False
) -> MultiTaskSettings:
    """The settings of one multi-task system: ``[model]``'s
    (:func:`~probrank.experiments.mediqa.config.multitask_settings`) with or without the
    Bayesian output layer. A smoke run trains 20 steps at most (patience 5) with the first
    ranking weight."""
    settings = replace(model, bayesian=bayesian)
    if smoke:
        settings = replace(
            settings, max_epochs=20, patience=5, ranking_weights=settings.ranking_weights[:1]
        )
    return settings


def select_multitask(
    train: FeatureSet,
    val: FeatureSet,
    val_score: MediqaScorer,
    settings: MultiTaskSettings,
    *,
    seed: int,
) -> MultiTaskRanker:
    """The multi-task ranker of one seed, fitted on the features
    (:meth:`~probrank.models.multitask.MultiTaskRanker.fit_features`): one net per ranking
    weight, and (weight, threshold, keep-top rule) chosen by validation accuracy, ties by
    validation MRR, both by MEDIQA's official scorer."""

    def official(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
        got = val_score(scores, labels)
        return got["accuracy"], got["MRR"]

    return MultiTaskRanker(settings).fit_features(train, val, scorer=official, seed=seed)


def _hindsight(
    data: FeatureSet,
    scorer: MediqaScorer,
    probs: np.ndarray,
    prediction: tuple[np.ndarray, np.ndarray],
    keep_top: bool,
) -> dict[str, float]:
    """The test accuracy at the best P(correct) threshold in hindsight (with the system's own
    keep-top rule): how much of an accuracy gap is the threshold's, under label shift."""
    scores, labels = prediction
    best = (-1.0, math.nan)
    for threshold in THRESHOLDS:
        got = scorer(scores, keep_labels(data.groups, scores, probs, threshold, keep_top))
        best = max(best, (got["accuracy"], threshold))
    return {
        "accuracy": scorer(scores, labels)["accuracy"],
        "best accuracy": best[0],
        "at threshold": best[1],
        "labelled correct": float(np.mean(labels)),
    }


def _reliability(probs: dict[str, np.ndarray], labels: np.ndarray) -> Any:
    """Seed 0's reliability diagram of the test P(correct) of every system that has one."""
    figure, ax = new_figure(figsize=(4.5, 4.5))
    plot_reliability(
        probs,
        labels.astype(int),
        ax=ax,
        title="MEDIQA test: P(correct), seed 0",
        xlabel="predicted P(correct)",
        ylabel="fraction correct",
    )
    figure.tight_layout()
    return figure


@dataclass
class _SeedOutcome:
    """What one seed's task sends back, in the order the results table records it."""

    predictions: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)
    probs: dict[str, np.ndarray] = field(default_factory=dict)
    chosen: dict[str, dict[str, float]] = field(default_factory=dict)
    keep_top: dict[str, bool] = field(default_factory=dict)


def _seed_task(
    features: tuple[FeatureSet, FeatureSet, FeatureSet, MediqaScorer],
    seed: int,
    k: int,
    models: dict[str, MultiTaskSettings],
) -> _SeedOutcome:
    """One task: every system of one seed on the test set (predictions, not scores)."""
    train, val, test, val_score = features
    out = _SeedOutcome()
    out.predictions.append(("chiqa", *chiqa(test)))
    out.predictions.append(("chiqa_topk", *chiqa_top_k(test, k)))
    lr = fit_lr_filter(train, val, seed)
    p_lr = lr.predict_proba(test.features.numpy())[:, 1]
    out.predictions.append(("lr_filter", p_lr, (p_lr > 0.5).astype(int)))
    out.probs["lr_filter"] = p_lr
    out.chosen[f"lr_filter, seed {seed}"] = {"C": float(lr.C)}
    svm = fit_svm_rank(train, val, seed)
    svm_scores = svm.decision_function(test.features.numpy())
    out.predictions.append(("svm_rank", svm_scores, (p_lr > 0.5).astype(int)))
    for name, settings in models.items():
        ranker = select_multitask(train, val, val_score, settings, seed=seed)
        scores, labels, p = ranker.predict_features(test.features, test.groups, seed=seed)
        choice = ranker.choice
        out.predictions.append((name, scores, labels))
        out.probs[name] = p
        out.keep_top[name] = bool(choice["keep_top"])
        out.chosen[f"{name}, seed {seed}"] = {
            "lambda": float(choice["ranking_weight"]),
            "threshold": float(choice["threshold"]),
            "keep top": float(choice["keep_top"]),
        }
    return out


def run(
    config: MediqaMultitaskExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """The MEDIQA protocol; see the module docstring. ``smoke`` uses a few questions.

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (resolves a relative encoder ``cache_dir``).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: A few questions, a short training.
    """
    data: MediqaData = build_mediqa_data(config, smoke=smoke, config_path=config_path)
    train, val, test = (data.features[s] for s in ("train", "validation", "test"))
    models = {
        "multitask_det": system_settings(config.model, bayesian=False, smoke=smoke),
        "multitask": system_settings(config.model, bayesian=True, smoke=smoke),
    }
    model = models["multitask"]
    weights = list(model.ranking_weights)
    val_score = MediqaScorer(data.lists["validation"], data.keys["validation"])
    test_score = MediqaScorer(data.lists["test"], data.keys["test"])
    values: dict[str, dict[str, list[float]]] = {name: {} for name in SYSTEMS}
    predictions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    test_probs: dict[str, np.ndarray] = {}
    chosen: dict[str, dict[str, float]] = {}
    keep_top = {"lr_filter": False}  # seed 0's keep-top rule per system with P(correct)

    def record(name: str, scores: np.ndarray, labels: np.ndarray) -> None:
        got = test_score(scores, labels)
        for m in MEASURES:
            values[name].setdefault(m, []).append(got[m])
        predictions.setdefault(name, (scores, labels))

    k = select_top_k(val, val_score, range(1, config.baselines.max_k + 1))
    chosen["chiqa_topk"] = {"k": float(k)}
    import torch

    # every task runs with this process's torch threads (or [experiment] threads), here or on Ray
    threads = config.experiment.threads or torch.get_num_threads()
    with open_executor(config.experiment.executor_settings()) as executor:
        shared = executor.share((train, val, test, val_score))
        tasks = [
            Task(f"seed {seed}", _seed_task, (shared, seed, k, models), threads=threads)
            for seed in range(seeds)
        ]
        outcomes = executor.map(tasks, desc="seeds")
    for outcome in outcomes:
        for name, scores, labels in outcome.predictions:
            record(name, scores, labels)
        for name, p in outcome.probs.items():
            test_probs.setdefault(name, p)
        for name, keep in outcome.keep_top.items():
            keep_top.setdefault(name, keep)
        chosen.update(outcome.chosen)
    draws = 50 if smoke else config.evaluation.bootstrap
    extra: dict[str, dict[str, dict[str, float]]] = {
        f"Bootstrap sd over test questions ({draws} resamples, seed 0)": {
            name: test_score.bootstrap_sd(s, lab, draws=draws, seed=0)
            for name, (s, lab) in predictions.items()
        },
        "Chosen on validation": chosen,
        f"Paired bootstrap over test questions ({draws} resamples, seed 0)": {
            f"multitask - {other}": test_score.paired_bootstrap(
                predictions["multitask"], predictions[other], draws=draws, seed=0
            )
            for other in ("chiqa", "lr_filter", "multitask_det")
        },
        "Hindsight diagnostic, NOT a result (threshold picked on test labels, seed 0)": {
            name: _hindsight(test, test_score, test_probs[name], predictions[name], keep)
            for name, keep in keep_top.items()
        },
    }
    if data.rqe_accuracy is not None:
        extra["RQE classifier (MEDIQA 2019 Task 2 test)"] = {
            "logistic regression": {
                "accuracy": data.rqe_accuracy,
                "C": float(data.rqe_best_c or math.nan),
            }
        }
    settings = {
        "model": {
            "hidden": model.hidden,
            "dropout": float(model.dropout),
            "skip": model.skip,
            "prior_scale": float(model.prior_scale),
            "weight_decay": float(model.weight_decay),
            "lr": float(model.lr),
            "max_epochs": model.max_epochs,
            "patience": model.patience,
            "ranking_weights": weights,
            "thresholds": list(model.thresholds),
        },
        "baselines": {"max_k": config.baselines.max_k},
        "evaluation": {"bootstrap": draws},
    }
    return ExperimentResult(
        title="MEDIQA 2019 Task 3 test (official metrics; mean ± sd over seeds)",
        values=values,
        extra=extra,
        notes=[*data.notes, f"ranking weights tried: {weights}; seeds: {seeds}"],
        figures={"reliability": _reliability(test_probs, test.labels.numpy())},
        settings=settings,
    )
