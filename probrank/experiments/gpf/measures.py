"""What the GPF protocols report: the heads they compare and the measures of a head's P(relevant).

Ranking measures (``R10@1``, ``MAP``, ``MRR``) over the candidate lists with at least one
relevant candidate; ``accuracy`` (threshold 0.5), ``ECE`` (10 bins, top-label), ``Brier`` and
``NLL`` over all (query, candidate) pairs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList
from probrank.evaluation.calibration import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from probrank.evaluation.tensor_metrics import average_precision, recall_n_at_k, reciprocal_rank
from probrank.models.gpf_ranker import HeadKind

__all__ = ["FINE_TUNED_HEADS", "HEADS", "MEASURES", "evaluate_head"]

HEADS = tuple(kind.value for kind in HeadKind)
"""Head names (:class:`~probrank.models.gpf_ranker.HeadKind`), in table order."""

FINE_TUNED_HEADS = tuple(k.value for k in (HeadKind.DETERMINISTIC, HeadKind.SNGP, HeadKind.GPF))
"""Heads ``gpf_finetune`` fine-tunes (one encoder run each; MC dropout and the ensemble would
need T passes or M fine-tunes)."""

MEASURES = ("R10@1", "MAP", "MRR", "accuracy", "ECE", "Brier", "NLL")
"""Every measure the protocols can report."""


def _padded(lists: list[CandidateList], values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    width = max(len(item) for item in lists)
    scores = torch.zeros(len(lists), width, dtype=torch.float64)
    relevant = torch.zeros(len(lists), width, dtype=torch.float64)
    mask = torch.zeros(len(lists), width, dtype=torch.bool)
    start = 0
    for row, item in enumerate(lists):
        n = len(item)
        scores[row, :n] = values[start : start + n].double()
        relevant[row, :n] = torch.tensor(item.labels, dtype=torch.float64)
        mask[row, :n] = True
        start += n
    return scores, relevant, mask


def evaluate_head(
    probs: Tensor, labels: Tensor, lists: list[CandidateList], measures: list[str]
) -> dict[str, float]:
    """The requested measures of `n` probabilities of the pairs of ``lists``."""
    scores, relevant, mask = _padded(lists, probs)
    keep = relevant.sum(-1) > 0
    scores, relevant, mask = scores[keep], relevant[keep], mask[keep]
    values: dict[str, Callable[[], float]] = {
        "R10@1": lambda: float(recall_n_at_k(scores, relevant, 1, mask).mean()),
        "MAP": lambda: float(average_precision(scores, relevant, relevant.sum(-1), mask).mean()),
        "MRR": lambda: float(reciprocal_rank(scores, relevant, mask).mean()),
        "accuracy": lambda: float(((probs > 0.5).float() == labels).float().mean()),
        "ECE": lambda: expected_calibration_error(probs, labels.long(), n_bins=10),
        "Brier": lambda: brier_score(probs, labels.long()),
        "NLL": lambda: negative_log_likelihood(probs, labels.long()),
    }
    return {m: values[m]() for m in measures}
