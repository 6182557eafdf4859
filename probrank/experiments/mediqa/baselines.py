"""Baselines of the MEDIQA 2019 Task 3 protocol: CHiQA's own output, the paper's
feature-engineered logistic-regression filter and a pairwise linear SVM ranker.

Every system returns ``(scores, labels)`` for the answers of a :class:`FeatureSet` (rows in the
set's order): scores rank the answers of a question (higher first), labels are 0/1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.svm import LinearSVC

from probrank.exceptions import InputDataError
from probrank.experiments.mediqa.scoring import MediqaScorer
from probrank.models.multitask import MultiTaskData
from probrank.models.multitask.mediqa_features import FeatureSet

__all__ = ["CS", "chiqa", "chiqa_top_k", "fit_lr_filter", "fit_svm_rank", "select_top_k"]

CS = (1e-3, 1e-2, 1e-1, 1.0)
"""Inverse regularisation strengths tried for the logistic regression and the SVM."""


def chiqa(data: FeatureSet) -> tuple[np.ndarray, np.ndarray]:
    """CHiQA's order (SystemRank) with every answer labelled correct."""
    ranks = np.asarray(data.system_ranks, dtype=float)
    return -ranks, np.ones(len(ranks), dtype=int)


def chiqa_top_k(data: FeatureSet, k: int) -> tuple[np.ndarray, np.ndarray]:
    """CHiQA's order with its top ``k`` answers of each question labelled correct."""
    if k < 0:
        raise InputDataError(f"k must be non-negative, got {k}")
    ranks = np.asarray(data.system_ranks, dtype=float)
    labels = np.zeros(len(ranks), dtype=int)
    for group in data.groups:
        for position, i in enumerate(sorted(group, key=lambda i: ranks[i])):
            labels[i] = int(position < k)
    return -ranks, labels


def select_top_k(
    data: FeatureSet, scorer: MediqaScorer, ks: Sequence[int] = tuple(range(1, 11))
) -> int:
    """The k of :func:`chiqa_top_k` with the best accuracy on ``data`` (ties: higher MRR,
    then the smaller k)."""
    if not ks:
        raise InputDataError("ks must not be empty")
    scored = []
    for k in ks:
        got = scorer(*chiqa_top_k(data, k))
        scored.append((-got["accuracy"], -got["MRR"], k))
    return min(scored)[2]


def fit_lr_filter(train: FeatureSet, val: FeatureSet, seed: int = 0) -> LogisticRegression:
    """Logistic regression on the joint features, C by validation log-loss (the anchor)."""
    best: tuple[float, LogisticRegression] | None = None
    for c in CS:
        model = LogisticRegression(C=c, max_iter=3000, random_state=seed)
        model.fit(train.features.numpy(), train.labels.numpy())
        loss = log_loss(
            val.labels.numpy(), model.predict_proba(val.features.numpy())[:, 1], labels=[0, 1]
        )
        if best is None or loss < best[0]:
            best = (float(loss), model)
    if best is None:  # unreachable: CS is not empty
        raise InputDataError("no regularisation strength to try")
    return best[1]


def _pair_differences(data: FeatureSet) -> tuple[np.ndarray, np.ndarray]:
    pairs = MultiTaskData.pairs_from_grades(data.groups, data.grades).numpy()
    x = data.features.numpy()
    diff = x[pairs[:, 0]] - x[pairs[:, 1]]
    # both orientations, so the classes are balanced and the SVM has no bias to learn
    return np.concatenate([diff, -diff]), np.concatenate([np.ones(len(diff)), -np.ones(len(diff))])


def fit_svm_rank(train: FeatureSet, val: FeatureSet, seed: int = 0) -> LinearSVC:
    """Pairwise linear SVM (RankSVM) on feature differences of answers with different
    ReferenceScores, C by validation pairwise accuracy."""
    x, y = _pair_differences(train)
    xv, yv = _pair_differences(val)
    best: tuple[float, LinearSVC] | None = None
    for c in CS:
        model = LinearSVC(C=c, max_iter=20000, random_state=seed).fit(x, y)
        accuracy = float(np.mean(model.predict(xv) == yv))
        if best is None or accuracy > best[0]:
            best = (accuracy, model)
    if best is None:  # unreachable: CS is not empty
        raise InputDataError("no regularisation strength to try")
    return best[1]
