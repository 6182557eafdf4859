"""MEDIQA 2019 Task 3 protocol: train on both training sets, select on validation, report on
test with the official metrics (:mod:`probrank.evaluation.mediqa`).

Systems:

* ``chiqa``: CHiQA's order (SystemRank), every answer labelled correct;
* ``chiqa_topk``: CHiQA's order, its top k answers labelled correct (k by validation accuracy);
* ``lr_filter``: logistic regression on the joint features (C by validation log-loss),
  p > 0.5, ranked by p (the paper's feature-engineered filter);
* ``svm_rank``: pairwise linear SVM ranker (C by validation pairwise accuracy), labels from the
  LR filter;
* ``multitask_det`` and ``multitask``: the deterministic and the Bayesian multi-task head
  (:mod:`probrank.models.multitask`). Per seed, one net per ranking weight lambda is fitted
  (early stopping on the validation loss); lambda, the P(correct) threshold and whether the
  top-ranked answer of each question is always kept (every validation question has a correct
  answer) are chosen together by validation accuracy, ties by validation MRR. Answers are
  ranked by posterior mean utility.

Data and features: :mod:`.mediqa_data`. Test noise: the standard deviation of each measure
over bootstrap resamples of the test questions (seed 0's predictions). Unless ``smoke``, the
per-seed values, the extra tables and a reliability diagram of the test P(correct) are saved to
``<config folder>/<[output] folder>/<config stem>.json`` and ``..._reliability.png``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from probrank._files import new_figure, save_figure, write_text_atomically
from probrank.exceptions import InputDataError
from probrank.experiments.mediqa_baselines import (
    chiqa,
    chiqa_top_k,
    fit_lr_filter,
    fit_svm_rank,
    select_top_k,
)
from probrank.experiments.mediqa_data import MediqaData, build_mediqa_data
from probrank.experiments.mediqa_demo import demo_section
from probrank.experiments.mediqa_scoring import MEASURES, MediqaScorer, submission
from probrank.experiments.results import ExperimentResult
from probrank.models.mediqa_features import FeatureSet
from probrank.models.multitask import MultiTaskData, MultiTaskNet, fit_multitask, predict_multitask

__all__ = ["SYSTEMS", "MultiTaskChoice", "demo_section", "keep_top_one", "run", "submission"]

SYSTEMS = ("chiqa", "chiqa_topk", "lr_filter", "svm_rank", "multitask_det", "multitask")
"""The systems of the results table, in order."""

THRESHOLDS = tuple(float(t) for t in np.round(np.linspace(0.1, 0.9, 33), 3))
"""P(correct) thresholds tried on validation."""


def keep_top_one(data: FeatureSet, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``labels`` with the top-scored answer of every question set to 1 (a copy)."""
    out = np.array(labels, dtype=int, copy=True)
    for group in data.groups:
        if group:
            out[max(group, key=lambda i: scores[i])] = 1
    return out


class MultiTaskChoice:
    """A fitted multi-task net with the settings chosen on validation.

    Attributes:
        net: The network.
        ranking_weight: lambda.
        threshold: P(correct) threshold.
        keep_top: Whether the top-ranked answer of each question is always labelled correct.
    """

    def __init__(self, net: MultiTaskNet, ranking_weight: float, threshold: float, keep_top: bool):
        self.net = net
        self.ranking_weight = ranking_weight
        self.threshold = threshold
        self.keep_top = keep_top

    def predict(self, data: FeatureSet, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, labels, P(correct))`` of ``data``'s answers, each `n`."""
        probs, mean, _ = predict_multitask(self.net, data.features, seed=seed)
        scores, p = mean.numpy(), probs.numpy()
        labels = (p > self.threshold).astype(int)
        if self.keep_top:
            labels = keep_top_one(data, scores, labels)
        return scores, labels, p


def _as_data(data: FeatureSet) -> MultiTaskData:
    return MultiTaskData(
        data.features, data.labels, MultiTaskData.pairs_from_grades(data.groups, data.grades)
    )


def select_multitask(
    train: FeatureSet,
    val: FeatureSet,
    val_score: MediqaScorer,
    *,
    bayesian: bool,
    weights: Sequence[float],
    model_cfg: dict[str, Any],
    seed: int,
) -> MultiTaskChoice:
    """Fit one net per ranking weight; keep the (weight, threshold, keep-top rule) best on
    validation accuracy, ties by validation MRR."""
    if not weights:
        raise InputDataError("[model] ranking_weights must not be empty")
    best: tuple[tuple[float, float], MultiTaskChoice] | None = None
    for weight in weights:
        net = MultiTaskNet(
            train.features.shape[1],
            hidden=int(model_cfg.get("hidden", 64)),
            bayesian=bayesian,
            ranking_weight=weight,
            dropout=float(model_cfg.get("dropout", 0.1)),
            skip=bool(model_cfg.get("skip", False)),
            prior_scale=float(model_cfg.get("prior_scale", 1.0)),
            seed=seed,
        ).double()
        fit_multitask(
            net,
            _as_data(train),
            _as_data(val),
            lr=float(model_cfg.get("lr", 3e-3)),
            weight_decay=float(model_cfg.get("weight_decay", 1e-4)),
            max_epochs=int(model_cfg.get("max_epochs", 300)),
            patience=int(model_cfg.get("patience", 20)),
            seed=seed,
        )
        probs, mean, _ = predict_multitask(net, val.features, seed=seed)
        scores, p = mean.numpy(), probs.numpy()
        for threshold in THRESHOLDS:
            plain = (p > threshold).astype(int)
            for keep_top, labels in ((False, plain), (True, keep_top_one(val, scores, plain))):
                got = val_score(scores, labels)
                key = (got["accuracy"], got["MRR"])
                if best is None or key > best[0]:
                    best = (key, MultiTaskChoice(net, weight, threshold, keep_top))
    if best is None:  # unreachable: weights and THRESHOLDS are non-empty
        raise InputDataError("nothing to choose from")
    return best[1]


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
        plain = (probs > threshold).astype(int)
        got = scorer(scores, keep_top_one(data, scores, plain) if keep_top else plain)
        best = max(best, (got["accuracy"], threshold))
    return {
        "accuracy": scorer(scores, labels)["accuracy"],
        "best accuracy": best[0],
        "at threshold": best[1],
        "labelled correct": float(np.mean(labels)),
    }


def _json_ready(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def _save(
    result: ExperimentResult,
    probs: dict[str, np.ndarray],
    labels: np.ndarray,
    folder: Path,
    stem: str,
) -> list[Path]:
    from probrank.evaluation.calibration import plot_reliability_diagram, reliability_curve

    curves = {
        name: reliability_curve(p, labels.astype(int), n_bins=10, kind="positive")
        for name, p in probs.items()
    }
    figure, ax = new_figure(figsize=(4.5, 4.5))
    plot_reliability_diagram(curves, ax=ax, title="MEDIQA test: P(correct), seed 0")
    ax.set_xlabel("predicted P(correct)")
    ax.set_ylabel("fraction correct")
    figure.tight_layout()
    png = folder / f"{stem}_reliability.png"
    save_figure(figure, png, dpi=80, tight=False)
    payload = {
        "title": result.title,
        "means": result.means(),
        "values": result.values,
        "extra": result.extra,
        "notes": result.notes,
    }
    text = json.dumps(_json_ready(payload), indent=2, allow_nan=False) + "\n"
    out = folder / f"{stem}.json"
    write_text_atomically(out, text)
    return [out, png]


def run(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """The MEDIQA protocol; see the module docstring. ``smoke`` uses a few questions."""
    model_cfg = dict(config.get("model", {}))
    eval_cfg, out_cfg = config.get("evaluation", {}), config.get("output", {})
    data: MediqaData = build_mediqa_data(config, smoke=smoke, config_path=config_path)
    train, val, test = (data.features[s] for s in ("train", "validation", "test"))
    weights = [float(w) for w in model_cfg.get("ranking_weights", [0.6, 0.75, 0.9])]
    if smoke:
        model_cfg.update(max_epochs=20, patience=5)
        weights = weights[:1]
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

    k = select_top_k(
        val, val_score, range(1, int(config.get("baselines", {}).get("max_k", 10)) + 1)
    )
    chosen["chiqa_topk"] = {"k": float(k)}
    for seed in tqdm(range(seeds), desc="seeds", unit="seed"):
        record("chiqa", *chiqa(test))
        record("chiqa_topk", *chiqa_top_k(test, k))
        lr = fit_lr_filter(train, val, seed)
        p_lr = lr.predict_proba(test.features.numpy())[:, 1]
        record("lr_filter", p_lr, (p_lr > 0.5).astype(int))
        test_probs.setdefault("lr_filter", p_lr)
        chosen[f"lr_filter, seed {seed}"] = {"C": float(lr.C)}
        svm = fit_svm_rank(train, val, seed)
        record("svm_rank", svm.decision_function(test.features.numpy()), (p_lr > 0.5).astype(int))
        for name, bayesian in (("multitask_det", False), ("multitask", True)):
            choice = select_multitask(
                train,
                val,
                val_score,
                bayesian=bayesian,
                weights=weights,
                model_cfg=model_cfg,
                seed=seed,
            )
            scores, labels, p = choice.predict(test, seed)
            record(name, scores, labels)
            test_probs.setdefault(name, p)
            keep_top.setdefault(name, choice.keep_top)
            chosen[f"{name}, seed {seed}"] = {
                "lambda": choice.ranking_weight,
                "threshold": choice.threshold,
                "keep top": float(choice.keep_top),
            }
    draws = 50 if smoke else int(eval_cfg.get("bootstrap", 1000))
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
    result = ExperimentResult(
        title="MEDIQA 2019 Task 3 test (official metrics; mean ± sd over seeds)",
        values=values,
        extra=extra,
        notes=[*data.notes, f"ranking weights tried: {weights}; seeds: {seeds}"],
    )
    if not smoke and out_cfg.get("save", True):
        folder = config_path.parent / str(out_cfg.get("folder", "results"))
        folder.mkdir(parents=True, exist_ok=True)
        saved = _save(result, test_probs, test.labels.numpy(), folder, config_path.stem)
        result.notes.append("saved: " + ", ".join(str(p) for p in saved))
    return result
