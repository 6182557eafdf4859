"""Richer quantifier inputs for ``qlfusion_plus`` (an extension, not the paper's model).

The paper's quantifier sees only a list's min-max normalised top-``k`` scores. That curve's
shape says little about how many of the documents are relevant (see the model card), and it
hides two things a user would look at: the raw score level, and whether the other runs agree
with this list. :func:`plus_features` describes each (run, topic) list by a few numbers that
need no judgements:

* ``retrieved``: the list's length over ``k``;
* ``raw@1``, ``raw@10``, ``raw_last`` (at rank ``k`` or the list's end), ``raw_mean``,
  ``raw_sd``: raw score statistics of the top ``k`` (runs are standardised member by
  member, so their scales need not be comparable);
* ``norm_mean``, ``norm@10``, ``norm@50``: the min-max normalised curve's mean and two points;
* ``overlap@c`` for ``c`` in 10, 20, 50, 100 (up to ``k``): the mean share of this list's top
  ``c`` found in each other run's top ``c`` for the topic (0 with a single run);
* ``support@10``: for each of the list's top 10 documents, the share of other runs that
  retrieve it in their top ``k``, averaged (a judgement-free precision estimate in the spirit
  of Soboroff et al., 2001).

The network is the paper's (:class:`~probrank.models.qlfusion.QLFusionNet`, Bayesian output
layer, binomial likelihood), fed standardised features (:func:`standardize`) instead of the
layer-normalised score curve.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch
from torch import Tensor

from probrank.data.trec import Run
from probrank.exceptions import InputDataError
from probrank.fusion.normalize import normalize_scores

__all__ = ["OVERLAP_CUTS", "plus_feature_names", "plus_features", "standardize"]

OVERLAP_CUTS = (10, 20, 50, 100)


def plus_feature_names(depth: int = 100) -> list[str]:
    """Names of :func:`plus_features`' columns for lists of length ``depth``."""
    cuts = [c for c in OVERLAP_CUTS if c <= depth]
    return [
        "retrieved", "raw@1", "raw@10", "raw_last", "raw_mean", "raw_sd",
        "norm_mean", "norm@10", "norm@50",
        *(f"overlap@{c}" for c in cuts), "support@10",
    ]  # fmt: skip


def _at(values: list[float], rank: int) -> float:
    """The value at 1-based ``rank``, or the last one for shorter lists."""
    return values[min(rank, len(values)) - 1]


def plus_features(
    runs: Sequence[Run], query_ids: Sequence[str], depth: int = 100
) -> tuple[Tensor, list[str]]:
    """Judgement-free descriptors of every (run, topic) list (see the module docstring).

    Args:
        runs: The `R` runs fused together (agreement is measured among them); not modified.
        query_ids: `n` topics, in output order.
        depth: `k`, the list length.

    Returns:
        ``(features, names)``: `R x n x F` float32 features (a row of zeros for a topic a run
        lacks or an empty list) and the `F` column names.
    """
    if depth < 1:
        raise InputDataError(f"depth must be positive, got {depth}")
    if not runs:
        raise InputDataError("plus_features needs at least one run")
    names = plus_feature_names(depth)
    cuts = [c for c in OVERLAP_CUTS if c <= depth]
    out = torch.zeros(len(runs), len(query_ids), len(names))
    for t, qid in enumerate(query_ids):
        lists = [run.ranking(qid, depth) if qid in run.as_dict() else [] for run in runs]
        docs = [[d for d, _ in top] for top in lists]
        tops = {c: [set(d[:c]) for d in docs] for c in cuts}
        everything = [set(d) for d in docs]
        for r, top in enumerate(lists):
            if not top:
                continue
            raw = [s for _, s in top]
            norm = normalize_scores(raw, "minmax")
            others = [o for o in range(len(runs)) if o != r]
            overlaps = [
                statistics.fmean(len(tops[c][r] & tops[c][o]) / c for o in others) if others
                else 0.0
                for c in cuts
            ]  # fmt: skip
            support = (
                statistics.fmean(
                    sum(d in everything[o] for o in others) / len(others) for d in docs[r][:10]
                )
                if others
                else 0.0
            )
            out[r, t] = torch.tensor(
                [
                    len(top) / depth,
                    raw[0],
                    _at(raw, 10),
                    raw[-1],
                    statistics.fmean(raw),
                    statistics.pstdev(raw),
                    statistics.fmean(norm),
                    _at(norm, 10),
                    _at(norm, 50),
                    *overlaps,
                    support,
                ]
            )
    return out, names


def standardize(
    train: Tensor, mask: Tensor, *others: Tensor, eps: float = 1e-6, clip: float = 5.0
) -> tuple[Tensor, ...]:
    """Standardise features per member with its training lists' mean and sd, then clip.

    Args:
        train: `M x n x F` training features.
        mask: `M x n` bool, True on real training rows (padding rows come out as zeros).
        *others: Further `M x n' x F` tensors (validation, test) scaled the same way (zero
            their padding rows yourself).
        eps: Floor of the standard deviation (a constant column maps to 0).
        clip: Standardised values are clipped to ``[-clip, clip]`` (raw scores have heavy
            tails).

    Returns:
        The standardised ``train`` and ``others``, in order (inputs are not modified).
    """
    weight = mask.to(train.dtype).unsqueeze(-1)
    count = weight.sum(1, keepdim=True).clamp_min(1.0)
    mean = (train * weight).sum(1, keepdim=True) / count
    var = ((train - mean).square() * weight).sum(1, keepdim=True) / count
    sd = var.sqrt()
    constant = sd <= eps

    def scale(t: Tensor) -> Tensor:
        z = ((t - mean) / sd.clamp_min(eps)).clamp(-clip, clip)
        return z.masked_fill(constant.expand_as(z), 0.0)

    return (scale(train) * weight, *(scale(t) for t in others))
