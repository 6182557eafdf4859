"""MEDIQA 2019 Task 3 protocol: train on both training sets, select on validation, report on
test with the official metrics (:mod:`probrank.evaluation.mediqa`).

Systems: ``chiqa`` (SystemRank order, every answer labelled correct), ``lr_filter`` (logistic
regression on the joint features, C by validation log-loss, p > 0.5, ranked by p),
``svm_rank`` (pairwise linear SVM ranker, C by validation pairwise accuracy, labels from the
LR filter), ``multitask_det`` and ``multitask`` (:mod:`probrank.models.multitask`; ranking
weight and P(correct) threshold chosen on validation accuracy). Test noise: the standard
deviation of each metric over 1,000 bootstrap resamples of the test questions.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.svm import LinearSVC
from tqdm.auto import tqdm

from probrank.data.datasets.mediqa import MediqaList, load_mediqa
from probrank.data.datasets.medquad import read_medquad
from probrank.data.datasets.rqe import read_rqe
from probrank.data.paths import shared_data_dir
from probrank.encoders.transformer import TransformerEncoder
from probrank.evaluation.mediqa import MediqaRow, mediqa_scores, read_mediqa_rows
from probrank.exceptions import InputDataError, NumericsWarning
from probrank.experiments.results import ExperimentResult
from probrank.models.entailment import EntailedQuestionFinder, EntailmentClassifier
from probrank.models.mediqa_features import FeatureSet, MediqaFeaturizer
from probrank.models.multitask import MultiTaskData, MultiTaskNet, fit_multitask, predict_multitask

__all__ = ["run", "submission"]

MEASURES = ("accuracy", "precision", "MRR", "spearman_official", "spearman")
CS = (1e-3, 1e-2, 1e-1, 1.0)


def _plain_qid(qid: str) -> str:
    return qid.split(":")[-1]


def submission(
    lists: Sequence[MediqaList], scores: np.ndarray, labels: np.ndarray
) -> dict[str, list[MediqaRow]]:
    """Rows per question in predicted rank order (score descending, ties by SystemRank)."""
    rows, start = {}, 0
    for item in lists:
        n = len(item)
        order = sorted(range(n), key=lambda i: (-scores[start + i], item.system_ranks[i]))
        qid = _plain_qid(item.qid)
        rows[qid] = [MediqaRow(qid, item.candidate_ids[i], int(labels[start + i])) for i in order]
        start += n
    return rows


class _Scorer:
    """Scores submissions of one split against its official key, or a bootstrap resample."""

    def __init__(self, lists: Sequence[MediqaList], key: Sequence[MediqaRow]):
        self.lists = list(lists)
        qids = {_plain_qid(item.qid) for item in lists}
        self.key: dict[str, list[MediqaRow]] = {}
        for row in key:
            if row.question_id in qids:
                self.key.setdefault(row.question_id, []).append(row)

    def __call__(
        self, scores: np.ndarray, labels: np.ndarray, sample: Sequence[str] | None = None
    ) -> dict[str, float]:
        rows = submission(self.lists, scores, labels)
        chosen = list(self.key) if sample is None else list(sample)
        key_rows, sub_rows = [], []
        for j, qid in enumerate(chosen):
            name = qid if sample is None else f"{j}:{qid}"  # a resampled question is new
            key_rows += [MediqaRow(name, r.answer_id, r.label) for r in self.key[qid]]
            sub_rows += [MediqaRow(name, r.answer_id, r.label) for r in rows.get(qid, [])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericsWarning)
            return mediqa_scores(key_rows, sub_rows)

    def bootstrap_sd(
        self, scores: np.ndarray, labels: np.ndarray, draws: int, seed: int
    ) -> dict[str, float]:
        """Standard deviation of each metric over resamples of the questions."""
        rng = np.random.default_rng(seed)
        qids = list(self.key)
        values: dict[str, list[float]] = {m: [] for m in MEASURES}
        for _ in range(draws):
            sample = [qids[i] for i in rng.integers(len(qids), size=len(qids))]
            got = self(scores, labels, sample)
            for m in MEASURES:
                values[m].append(got[m])
        return {m: float(np.nanstd(v)) for m, v in values.items()}


def _lr(train: FeatureSet, val: FeatureSet, seed: int) -> LogisticRegression:
    best: tuple[float, LogisticRegression] | None = None
    for c in CS:
        model = LogisticRegression(C=c, max_iter=3000, random_state=seed)
        model.fit(train.features.numpy(), train.labels.numpy())
        loss = log_loss(val.labels.numpy(), model.predict_proba(val.features.numpy())[:, 1])
        if best is None or loss < best[0]:
            best = (loss, model)
    return best[1] if best else LogisticRegression()


def _pair_differences(data: FeatureSet) -> tuple[np.ndarray, np.ndarray]:
    pairs = MultiTaskData.pairs_from_grades(data.groups, data.grades).numpy()
    x = data.features.numpy()
    diff = x[pairs[:, 0]] - x[pairs[:, 1]]
    # both orientations, so the classes are balanced and the SVM has no bias to learn
    return np.concatenate([diff, -diff]), np.concatenate([np.ones(len(diff)), -np.ones(len(diff))])


def _svm(train: FeatureSet, val: FeatureSet, seed: int) -> LinearSVC:
    x, y = _pair_differences(train)
    xv, yv = _pair_differences(val)
    best: tuple[float, LinearSVC] | None = None
    for c in CS:
        model = LinearSVC(C=c, max_iter=20000, random_state=seed).fit(x, y)
        accuracy = float(np.mean(model.predict(xv) == yv))
        if best is None or accuracy > best[0]:
            best = (accuracy, model)
    return best[1] if best else LinearSVC()


def _as_data(data: FeatureSet) -> MultiTaskData:
    return MultiTaskData(
        data.features, data.labels, MultiTaskData.pairs_from_grades(data.groups, data.grades)
    )


def _multitask(
    train: FeatureSet,
    val: FeatureSet,
    val_score: _Scorer,
    *,
    bayesian: bool,
    weights: Sequence[float],
    model_cfg: dict,
    seed: int,
) -> tuple[MultiTaskNet, float, float]:
    """Fit one net per ranking weight; keep the (weight, threshold) best on validation
    accuracy (ties: MRR). Returns the net, its threshold and its ranking weight."""
    best: tuple[tuple[float, float], MultiTaskNet, float, float] | None = None
    for weight in weights:
        net = MultiTaskNet(
            train.features.shape[1],
            hidden=int(model_cfg.get("hidden", 64)),
            bayesian=bayesian,
            ranking_weight=weight,
            dropout=float(model_cfg.get("dropout", 0.1)),
            seed=seed,
        ).double()
        fit_multitask(
            net,
            _as_data(train),
            _as_data(val),
            lr=float(model_cfg.get("lr", 3e-3)),
            max_epochs=int(model_cfg.get("max_epochs", 300)),
            patience=int(model_cfg.get("patience", 20)),
            seed=seed,
        )
        probs, mean, _ = predict_multitask(net, val.features, seed=seed)
        for threshold in np.linspace(0.05, 0.95, 19):
            got = val_score(mean.numpy(), (probs.numpy() > threshold).astype(int))
            key = (got["accuracy"], got["MRR"])
            if best is None or key > best[0]:
                best = (key, net, float(threshold), weight)
    if best is None:
        raise InputDataError("[model] ranking_weights must not be empty")
    return best[1], best[2], best[3]


def run(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """The MEDIQA protocol; see the module docstring. ``smoke`` uses a few questions."""
    data_cfg, model_cfg = config.get("data", {}), config.get("model", {})
    qe_cfg, enc_cfg = config.get("entailment", {}), config.get("encoder", {})
    folder = shared_data_dir(*Path(data_cfg.get("mediqa", "qa/mediqa2019-task3")).parts)
    train_lists = load_mediqa(folder, "train")
    val_lists = load_mediqa(folder, "validation")
    test_lists = load_mediqa(folder, "test")
    if smoke:
        train_lists, val_lists, test_lists = train_lists[:12], val_lists[:6], test_lists[:8]
    encoder = TransformerEncoder(
        enc_cfg.get("model"),
        mode="bi",
        pooling="mean",
        max_length=int(enc_cfg.get("max_length", 256)),
        batch_size=int(enc_cfg.get("batch_size", 32)),
        cache_dir=enc_cfg.get("cache_dir", ".probrank-cache"),
    )
    notes = [
        f"questions: train {len(train_lists)}, validation {len(val_lists)}, test {len(test_lists)}"
    ]
    extra: dict[str, dict[str, dict[str, float]]] = {}
    finder = None
    if qe_cfg.get("enabled", True):
        rqe_dir = shared_data_dir(*Path(data_cfg.get("rqe", "qa/mediqa2019-task2-rqe")).parts)
        rqe_train = read_rqe(rqe_dir / "MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml")
        rqe_val = read_rqe(rqe_dir / "MEDIQA2019-Task2-RQE-ValidationSet-AMIA2016.xml")
        rqe_test = read_rqe(rqe_dir / "MEDIQA2019-Task2-RQE-TestSet-wLabels.xml")
        if smoke:
            rqe_train, rqe_val, rqe_test = rqe_train[:200], rqe_val[:60], rqe_test[:60]
        classifier = EntailmentClassifier(encoder).fit(rqe_train, rqe_val)
        probs = classifier.predict_proba([p.chq for p in rqe_test], [p.faq for p in rqe_test])
        accuracy = float(np.mean((probs > 0.5) == np.array([p.entails for p in rqe_test])))
        extra["RQE classifier (MEDIQA 2019 Task 2 test)"] = {
            "logistic regression": {"accuracy": accuracy, "best_C": classifier.best_c}
        }
        medquad = read_medquad(
            shared_data_dir(*Path(data_cfg.get("medquad", "collections/medquad")).parts)
        )
        if smoke:
            medquad = medquad[:500]
        finder = EntailedQuestionFinder(
            medquad,
            classifier,
            first_stage=int(qe_cfg.get("first_stage", 20)),
            top_n=int(qe_cfg.get("top_n", 3)),
            threshold=float(qe_cfg.get("threshold", 0.7)),
        )
    featurizer = MediqaFeaturizer(encoder, finder).fit(train_lists)
    train, val, test = (featurizer.transform(x) for x in (train_lists, val_lists, test_lists))
    notes.append(f"features: {train.features.shape[1]}")
    weights = [float(w) for w in model_cfg.get("ranking_weights", [0.5, 0.7, 0.9])]
    if smoke:
        model_cfg = {**model_cfg, "max_epochs": 20, "patience": 5}
        weights = weights[:1]
    val_score = _Scorer(val_lists, read_mediqa_rows(folder / "validation-ground-truth.csv"))
    test_score = _Scorer(test_lists, read_mediqa_rows(folder / "test-ground-truth.csv"))
    values: dict[str, dict[str, list[float]]] = {}
    predictions: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def record(name: str, scores: np.ndarray, labels: np.ndarray) -> None:
        got = test_score(scores, labels)
        for m in MEASURES:
            values.setdefault(name, {}).setdefault(m, []).append(got[m])
        predictions.setdefault(name, (scores, labels))

    ranks = np.array(test.system_ranks, dtype=float)
    for seed in tqdm(range(seeds), desc="seeds", unit="seed"):
        record("chiqa", -ranks, np.ones(len(ranks), dtype=int))
        lr = _lr(train, val, seed)
        p_lr = lr.predict_proba(test.features.numpy())[:, 1]
        record("lr_filter", p_lr, (p_lr > 0.5).astype(int))
        svm = _svm(train, val, seed)
        record("svm_rank", svm.decision_function(test.features.numpy()), (p_lr > 0.5).astype(int))
        for name, bayesian in (("multitask_det", False), ("multitask", True)):
            net, threshold, weight = _multitask(
                train,
                val,
                val_score,
                bayesian=bayesian,
                weights=weights,
                model_cfg=model_cfg,
                seed=seed,
            )
            p_mt, mean, _ = predict_multitask(net, test.features, seed=seed)
            record(name, mean.numpy(), (p_mt.numpy() > threshold).astype(int))
            if seed == 0:
                notes.append(
                    f"{name}: ranking weight {weight}, threshold {threshold:.2f} (validation)"
                )
    draws = 50 if smoke else 1000
    extra["Bootstrap sd over test questions (seed 0)"] = {
        name: test_score.bootstrap_sd(s, lab, draws, seed=0)
        for name, (s, lab) in predictions.items()
    }
    return ExperimentResult(
        title="MEDIQA 2019 Task 3 test (official metrics; mean ± sd over seeds)",
        values=values,
        extra=extra,
        notes=notes,
    )
