"""Answer features for the multi-task ranker from any candidate lists: encoder + list context.

Two groups (the encoder and list-context groups of the MEDIQA protocol's features,
:mod:`probrank.models.multitask.mediqa_features`, which adds metadata and question entailment):

* **encoder**: frozen sentence vectors (L2-normalised) of the query q and the answer a, as
  ``(a, q * a, |q - a|)`` (the query alone carries no answer-specific signal);
* **list context**: how the answer compares with the other answers to the same query: the
  question-answer cosine, its inverse rank in the list, its gap to the list's best, and the
  log of the list's length. Correctness is judged within a query, and these let a per-answer
  model see it.

:class:`AnswerFeaturizer` standardises both with the training lists' means and standard
deviations (its only fitted state).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts, side_features
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError

__all__ = ["AnswerFeatures", "AnswerFeaturizer", "encoder_features", "list_context_features"]


def encoder_features(
    encoder: TransformerEncoder, lists: Sequence[CandidateList]
) -> tuple[Tensor, Tensor, Tensor, list[str]]:
    """The encoder group of every (query, answer) pair, list by list.

    Args:
        encoder: A frozen encoder (its ``encode_texts`` is used, each text once).
        lists: The candidate lists.

    Returns:
        ``(block, answers, cosine, names)``: `n x 3h` float64 features ``(a, q*a, |q-a|)``,
        `n x h` L2-normalised answer vectors, `n` query-answer cosines and the `3h` names.
    """
    questions, answers = pair_texts(lists)
    texts = list(dict.fromkeys([*questions, *answers]))
    encoded = encoder.encode_texts(texts).double().cpu()
    encoded = torch.nn.functional.normalize(encoded, dim=-1)
    index = {t: i for i, t in enumerate(texts)}
    q = encoded[[index[t] for t in questions]]
    a = encoded[[index[t] for t in answers]]
    h = a.shape[1]
    names = [f"a{i}" for i in range(h)] + [f"qa{i}" for i in range(h)]
    names += [f"dqa{i}" for i in range(h)]
    return torch.cat([a, q * a, (q - a).abs()], dim=1), a, (q * a).sum(-1), names


def list_context_features(
    lists: Sequence[CandidateList], columns: dict[str, Tensor]
) -> tuple[Tensor, list[str]]:
    """`n x k` list-context features: the question-answer cosine and its rank in the list,
    each column's gap to its list maximum, and the list's length.

    Args:
        lists: The candidate lists (their answers are the `n` rows, list by list).
        columns: ``{name: n values}``; must hold ``"qa_cos"``.

    Returns:
        ``(features, names)``.
    """
    if "qa_cos" not in columns:
        raise InputDataError("list-context features need the 'qa_cos' column")
    rows, start = [], 0
    for item in lists:
        n = len(item)
        parts = [columns["qa_cos"][start : start + n]]
        ranks = torch.argsort(torch.argsort(-parts[0], stable=True), stable=True) + 1
        parts.append(1.0 / ranks.to(torch.float64))
        for values in columns.values():
            chunk = values[start : start + n]
            parts.append(chunk - chunk.max())
        parts.append(torch.full((n,), math.log(n), dtype=torch.float64))
        rows.append(torch.stack(parts, dim=1))
        start += n
    names = ["qa_cos", "qa_cos_inv_rank", *(f"{c}_gap_to_best" for c in columns), "log_list_len"]
    return torch.cat(rows), names


@dataclass(frozen=True)
class AnswerFeatures:
    """Standardised features of many queries' answers.

    Attributes:
        features: `n x d` float64 features, list by list.
        groups: For each list, the row indices of its answers (in the list's order).
        labels: `n` float64 0/1 labels, or None for unlabelled lists.
        grades: `n` grades (empty for unlabelled lists).
        names: `d` feature names.
    """

    features: Tensor
    groups: list[list[int]]
    labels: Tensor | None
    grades: list[int]
    names: list[str]


class AnswerFeaturizer:
    """Encoder and list-context features, standardised on the training lists.

    Args:
        encoder: A frozen encoder.
        list_context: Include the list-context group.
    """

    def __init__(self, encoder: TransformerEncoder, *, list_context: bool = True) -> None:
        self.encoder = encoder
        self.list_context = list_context
        self.mean: Tensor | None = None
        self.std: Tensor | None = None

    def raw(self, lists: Sequence[CandidateList]) -> tuple[Tensor, list[str]]:
        """Unstandardised `n x d` float64 features and their names (the lists' side features,
        e.g. a first-stage score, last)."""
        block, _, cosine, names = encoder_features(self.encoder, lists)
        if self.list_context:
            context, context_names = list_context_features(lists, {"qa_cos": cosine})
            block, names = torch.cat([block, context], dim=1), names + context_names
        rows, side_names = side_features(lists)
        if rows:
            side = torch.tensor(rows, dtype=torch.float64)
            block, names = torch.cat([block, side], dim=1), names + list(side_names)
        return block, names

    def fit(self, lists: Sequence[CandidateList]) -> AnswerFeaturizer:
        """Learn the standardisation from training lists."""
        if not lists:
            raise InputDataError("no training lists")
        raw, _ = self.raw(lists)
        self.mean = raw.mean(0)
        self.std = raw.std(0, correction=0 if raw.shape[0] < 2 else 1).clamp_min(1e-8)
        return self

    def transform(self, lists: Sequence[CandidateList]) -> AnswerFeatures:
        """Standardised features of ``lists`` (call :meth:`fit` first)."""
        if self.mean is None or self.std is None:
            raise InputDataError("the featurizer is not fitted; call fit on training lists")
        raw, names = self.raw(lists)
        if raw.shape[1] != self.mean.shape[0]:
            raise InputDataError(
                f"{raw.shape[1]} features, the featurizer was fitted on {self.mean.shape[0]} "
                "(another encoder?)"
            )
        groups, start = [], 0
        for item in lists:
            groups.append(list(range(start, start + len(item))))
            start += len(item)
        labelled = all(item.has_labels for item in lists)
        labels = (
            torch.tensor([y for item in lists for y in item.labels], dtype=torch.float64)
            if labelled
            else None
        )
        grades = [g for item in lists for g in item.grades] if labelled else []
        return AnswerFeatures((raw - self.mean) / self.std, groups, labels, grades, names)
