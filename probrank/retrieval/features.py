"""Low-dimensional second-stage features from a bi-encoder: the query-document cosine.

The GPF second stage of the cascade sees, by default, the bi-encoder's pair features
``(u, v, u*v, |u-v|)`` (1,536 numbers for MiniLM) beside three first-stage score features.
With a few dozen training topics a head over 1,539 standardised inputs learns little of the
one number the bi-encoder was trained to make meaningful, the cosine of ``u`` and ``v`` (on
Vaswani that head did not beat BM25's nDCG@10; the head over BM25's and the cosine's features
did: ``models/cascade/README.md``). This module gives the second stage that number directly:

* :func:`with_dense_features` appends :data:`DENSE_FEATURES` to each list's side features: the
  cosine, the cosine min-max scaled within the topic's list (1 for the most similar document;
  1 for all when they tie) and ``log(rank)`` by cosine within the list (0 for the most
  similar), the same three forms as :data:`~probrank.data.candidates.FIRST_STAGE_FEATURES`.
* :class:`SideFeatureReranker` wraps any :class:`~probrank.retrieval.cascade.Reranker` so
  that the lists it is fitted on and estimates are augmented this way (the cascade's own
  lists, its BM25 calibration included, are left as they are).
* :class:`SideFeaturesOnly` is an encoder stand-in whose pair features are empty, so that a
  :class:`~probrank.models.GPFRanker` built on it sees the side features only.

Each feature of a candidate depends on its own topic's query and candidates only (no labels),
so the k-fold protocol over topics is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList
from probrank.retrieval.cascade import RelevanceEstimate, Reranker

__all__ = [
    "DENSE_FEATURES",
    "SideFeatureReranker",
    "SideFeaturesOnly",
    "TextEncoder",
    "cosine_similarities",
    "with_dense_features",
]

DENSE_FEATURES = ("dense_cosine", "dense_cosine_minmax", "dense_log_rank")
"""Names of the side features :func:`with_dense_features` appends."""


class TextEncoder(Protocol):
    """What the dense features need of an encoder: a vector per text."""

    def encode_texts(self, texts: Sequence[str]) -> Tensor: ...


def cosine_similarities(item: CandidateList, encoder: TextEncoder) -> Tensor:
    """`n` cosines of the list's query vector with each candidate's vector (float64)."""
    query = encoder.encode_texts([item.query]).double().cpu()
    documents = encoder.encode_texts(list(item.candidates)).double().cpu()
    query = torch.nn.functional.normalize(query, dim=-1)
    documents = torch.nn.functional.normalize(documents, dim=-1)
    return documents @ query[0]


def _dense_rows(cosine: Tensor) -> list[tuple[float, float, float]]:
    values = cosine.tolist()
    low, high = min(values), max(values)
    span = high - low
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    rank = [0] * len(values)
    for r, i in enumerate(order):
        rank[i] = r
    return [
        (v, (v - low) / span if span > 0 else 1.0, math.log(rank[i] + 1))
        for i, v in enumerate(values)
    ]


def with_dense_features(
    lists: Sequence[CandidateList], encoder: TextEncoder
) -> list[CandidateList]:
    """The lists with :data:`DENSE_FEATURES` appended to their side features.

    Args:
        lists: Candidate lists (labelled or not); not modified.
        encoder: Gives each text a vector (a frozen, cached bi-encoder).

    Returns:
        New lists, in order, with the same candidates, labels and grades.
    """
    out = []
    for item in lists:
        dense = _dense_rows(cosine_similarities(item, encoder))
        rows = (
            [(*row, *extra) for row, extra in zip(item.features, dense, strict=True)]
            if item.features
            else dense
        )
        out.append(
            CandidateList(
                item.qid,
                item.query,
                item.candidate_ids,
                item.candidates,
                item.labels or None,
                item.grades or None,
                features=rows,
                feature_names=(*item.feature_names, *DENSE_FEATURES),
            )
        )
    return out


class SideFeatureReranker:
    """A :class:`~probrank.retrieval.cascade.Reranker` fitted on and estimating lists
    augmented by :func:`with_dense_features`.

    Args:
        inner: The second stage (fitted and queried on the augmented lists).
        encoder: The encoder of the cosines.
    """

    def __init__(self, inner: Reranker, encoder: TextEncoder) -> None:
        self.inner = inner
        self.encoder = encoder

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> SideFeatureReranker:
        """Fit the inner reranker on the augmented lists; returns ``self``."""
        validation = None
        if validation_lists is not None:
            validation = with_dense_features(validation_lists, self.encoder)
        self.inner.fit(with_dense_features(train_lists, self.encoder), validation, seed=seed)
        return self

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate:
        """The inner reranker's estimate of the augmented lists."""
        return self.inner.estimate(with_dense_features(lists, self.encoder))


class SideFeaturesOnly:
    """An encoder stand-in with empty pair features: a :class:`~probrank.models.GPFRanker`
    built on it sees only its lists' side features (the first-stage and dense ones).

    Args:
        encoder: The real encoder (its vectors still give the dense features).
    """

    def __init__(self, encoder: TextEncoder) -> None:
        self.encoder = encoder

    def encode_texts(self, texts: Sequence[str]) -> Tensor:
        """The real encoder's vectors."""
        return self.encoder.encode_texts(texts)

    def encode_pairs(self, queries: Sequence[str], candidates: Sequence[str]) -> Tensor:
        """`n x 0` features (no pair features)."""
        return torch.zeros(len(list(queries)), 0)
