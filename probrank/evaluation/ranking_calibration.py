"""Ranking calibration: ERCE, the expected ranking calibration error (Cohen et al., SIGIR 2021).

ECE asks whether a model's P(relevant) matches how often documents are relevant. ERCE asks
the ranking question: when the model believes document ``i`` belongs above document ``j``
with probability ``P(s_i > s_j)``, is ``i`` more relevant than ``j`` that often?

Per topic, every unordered pair of ranked documents ``{i, j}`` (``i`` before ``j`` in the
input order) whose grades differ is one item: its probability is ``P_ij = P(s_i > s_j) +
0.5 P(s_i = s_j)`` under the model and its outcome ``1[g_i > g_j]``. The items of all topics
are pooled and binned exactly as top-label ECE bins binary predictions
(:func:`~probrank.evaluation.calibration.expected_calibration_error`: confidence
``max(P_ij, 1 - P_ij)`` of the predicted order, the order predicted being ``i`` above ``j``
when ``P_ij > 0.5``; ``M`` equal-width bins)::

    ERCE = sum_b |B_b| / N |acc(B_b) - conf(B_b)|

A deterministic ranker is sure of every order (confidence 1), so its ERCE is the share of
pairs it puts in the wrong order; a Bayesian ranker that knows where it is unsure lowers its
confidence exactly on those pairs. Pairs of equal grade carry no ordering to check and are
left out.

Order probabilities come from posterior draws (:func:`order_probabilities_from_draws`),
from a Gaussian posterior in closed form (:func:`gaussian_order_probabilities`: ``P(f_i >
f_j) = Phi((m_i - m_j) / sqrt(v_i + v_j - 2 c_ij))``) or from fixed scores
(:func:`score_order_probabilities`: 1, 0.5 or 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from probrank.evaluation.calibration import expected_calibration_error
from probrank.exceptions import InputDataError

__all__ = [
    "expected_ranking_calibration_error",
    "gaussian_order_probabilities",
    "order_probabilities_from_draws",
    "ranking_calibration_pairs",
    "score_order_probabilities",
]


def order_probabilities_from_draws(draws: Tensor) -> Tensor:
    """``P[i, j] = P(s_i > s_j) + 0.5 P(s_i = s_j)`` estimated from joint posterior draws.

    Args:
        draws: `S x n` joint draws of the `n` documents' scores.

    Returns:
        `n x n` float64 matrix with ``P + P^T = 1`` (diagonal 0.5).
    """
    if draws.dim() != 2 or draws.shape[0] < 1:
        raise InputDataError(f"draws must be `S x n` with S >= 1, got shape {tuple(draws.shape)}")
    x = draws.detach().double()
    above = (x.unsqueeze(2) > x.unsqueeze(1)).double().mean(0)
    ties = (x.unsqueeze(2) == x.unsqueeze(1)).double().mean(0)
    return above + 0.5 * ties


def gaussian_order_probabilities(mean: Tensor, covariance: Tensor) -> Tensor:
    """``P(f_i > f_j)`` for ``f ~ N(mean, covariance)`` in closed form.

    Args:
        mean: `n` means.
        covariance: `n x n` covariance (or `n` variances: independent marginals).

    Returns:
        `n x n` float64 order probabilities; a pair whose difference has no variance gets 1,
        0.5 or 0 by its means.
    """
    m = mean.detach().double().reshape(-1)
    c = covariance.detach().double()
    if c.dim() == 1:
        c = torch.diag(c)
    if c.shape != (m.shape[0], m.shape[0]):
        raise InputDataError(f"covariance {tuple(c.shape)} does not match {m.shape[0]} means")
    d = c.diagonal()
    variance = (d.unsqueeze(1) + d.unsqueeze(0) - c - c.T).clamp_min(0.0)
    difference = m.unsqueeze(1) - m.unsqueeze(0)
    sure = variance <= 1e-300
    z = difference / variance.clamp_min(1e-300).sqrt()
    normal = 0.5 * torch.erfc(-z / math.sqrt(2.0))
    step = (difference > 0).double() + 0.5 * (difference == 0).double()
    return torch.where(sure, step, normal)


def score_order_probabilities(scores: Tensor) -> Tensor:
    """Order probabilities of fixed scores: 1 if ``s_i > s_j``, 0.5 if equal, else 0.

    Args:
        scores: `n` scores.

    Returns:
        `n x n` float64 matrix.
    """
    s = scores.detach().double().reshape(-1)
    return (s.unsqueeze(1) > s.unsqueeze(0)).double() + 0.5 * (
        s.unsqueeze(1) == s.unsqueeze(0)
    ).double()


def ranking_calibration_pairs(
    order_probabilities: Sequence[Tensor] | Tensor, grades: Sequence[Sequence[int]] | Tensor
) -> tuple[np.ndarray, np.ndarray]:
    """The ERCE items of one or several topics (see the module docstring).

    Args:
        order_probabilities: One `n x n` matrix per topic (or one matrix for one topic).
        grades: One sequence of `n` grades per topic (or `n` grades for one topic).

    Returns:
        ``(probabilities, outcomes)``: `N` values ``P_ij`` and `N` outcomes ``1[g_i > g_j]``
        over the pairs ``i < j`` with different grades, topic by topic.
    """
    if isinstance(order_probabilities, Tensor):
        matrices: list[Tensor] = [order_probabilities]
        grade_lists = [grades]
    else:
        matrices = list(order_probabilities)
        grade_lists = list(grades)  # type: ignore[arg-type]
    if len(matrices) != len(grade_lists):
        raise InputDataError(
            f"{len(matrices)} topics of probabilities, {len(grade_lists)} of grades"
        )
    probs, outcomes = [], []
    for matrix, topic_grades in zip(matrices, grade_lists, strict=True):
        g = torch.as_tensor(np.asarray(topic_grades, dtype=np.float64))
        p = matrix.detach().double()
        if p.shape != (g.shape[0], g.shape[0]):
            raise InputDataError(
                f"order probabilities {tuple(p.shape)} do not match {g.shape[0]} grades"
            )
        i, j = torch.triu_indices(g.shape[0], g.shape[0], offset=1)
        keep = g[i] != g[j]
        i, j = i[keep], j[keep]
        probs.append(p[i, j].numpy())
        outcomes.append((g[i] > g[j]).double().numpy())
    if not probs:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(probs), np.concatenate(outcomes)


def expected_ranking_calibration_error(
    order_probabilities: Sequence[Tensor] | Tensor,
    grades: Sequence[Sequence[int]] | Tensor,
    n_bins: int = 10,
) -> float:
    """ERCE over the document pairs of one or several topics (see the module docstring).

    Args:
        order_probabilities: One `n x n` order-probability matrix per topic.
        grades: One sequence of `n` grades per topic.
        n_bins: Equal-width confidence bins.

    Returns:
        ERCE in ``[0, 1]``; NaN when no pair has different grades.
    """
    probs, outcomes = ranking_calibration_pairs(order_probabilities, grades)
    if probs.size == 0:
        return math.nan
    return expected_calibration_error(probs, outcomes.astype(np.int64), n_bins=n_bins)
