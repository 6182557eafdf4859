"""The retrieval cascade: a first stage, then a Bayesian second stage fitted by k-fold
cross-validation over topics, ranked by the probability ranking principle or a risk-aware
criterion.

1. The first stage (:mod:`probrank.retrieval.first_stage`) ranks each topic's documents.
2. Each topic's top ``depth`` documents become a
   :class:`~probrank.data.candidates.CandidateList` with the first-stage score as side features
   (:data:`~probrank.data.candidates.FIRST_STAGE_FEATURES`) and labels from the qrels.
3. The topics are split into ``folds`` folds at random (seeded;
   :func:`probrank.data.folds.split_folds`, each fold in the permutation's order). For each
   fold a fresh second stage (any :class:`Reranker`) is fitted on the other folds' lists (the
   model chooses its own hyperparameters on a held-out share of them) and scores the fold's
   lists, so every topic's ranking comes from a model that never saw its judgements.
4. Each topic's candidates are ordered by the posterior mean P(relevant) (``rerank``) and by
   the configured risk-aware criterion (``risk``; :mod:`probrank.retrieval.risk`). Below them
   the first stage's documents ranked after ``depth`` keep their order (scores below every
   reranked one: ``min - (r - depth) / k`` for rank ``r``), so the runs stay as deep as the
   first stage's.

The second stage is any object with the :class:`Reranker` protocol;
:mod:`probrank.models.rerankers` adapts :class:`~probrank.models.GPFRanker` and
:class:`~probrank.models.MultiTaskRanker` to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor
from tqdm.auto import tqdm

from probrank.data.candidates import CandidateList, Documents
from probrank.data.folds import cross_validate, split_folds
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.retrieval.risk import RankingCriterion, criterion_scores

__all__ = [
    "CascadeResult",
    "CascadeSettings",
    "RelevanceEstimate",
    "Reranker",
    "held_out_estimate",
    "run_cascade",
    "scores_to_run",
]


@dataclass(frozen=True)
class RelevanceEstimate:
    """A second stage's posterior over the relevance of every candidate of some lists.

    Attributes:
        qids: `n` query ids (list by list).
        candidate_ids: `n` candidate ids.
        probability: `n` posterior mean P(relevant) (the model's calibrated probability).
        mean: `n` posterior means of the relevance logits (or utilities).
        variance: `n` posterior variances of the logits.
        covariances: Per list, the `n_q x n_q` joint posterior covariance of its logits (for
            order probabilities, e.g. ERCE); empty when the model gives marginals only.
    """

    qids: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    probability: Tensor
    mean: Tensor
    variance: Tensor
    covariances: tuple[Tensor, ...] = ()

    @staticmethod
    def concatenate(parts: Sequence[RelevanceEstimate]) -> RelevanceEstimate:
        """The estimates of several calls, in the given order."""
        if not parts:
            raise InputDataError("no estimates to concatenate")
        return RelevanceEstimate(
            qids=tuple(q for p in parts for q in p.qids),
            candidate_ids=tuple(c for p in parts for c in p.candidate_ids),
            probability=torch.cat([p.probability.double() for p in parts]),
            mean=torch.cat([p.mean.double() for p in parts]),
            variance=torch.cat([p.variance.double() for p in parts]),
            covariances=tuple(c for p in parts for c in p.covariances),
        )


@runtime_checkable
class Reranker(Protocol):
    """A second stage: fitted on labelled lists, it estimates every candidate's relevance."""

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> Reranker: ...

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate: ...


@dataclass(frozen=True)
class CascadeSettings:
    """Settings of :func:`run_cascade`.

    Attributes:
        depth: Documents per topic the second stage rescores.
        folds: Cross-validation folds over topics (``>= 2``).
        criterion: Risk-aware :class:`~probrank.retrieval.risk.RankingCriterion` of the
            ``risk`` run.
        risk_aversion: ``lambda`` of ``mean_sd``.
        alpha: Level of ``cvar``.
        num_draws: Posterior draws of the risk-aware criteria.
        relevance_level: Lowest grade labelled relevant.
        seed: Seeds the folds, the models and the draws.
    """

    depth: int = 100
    folds: int = 5
    criterion: RankingCriterion = RankingCriterion.CVAR
    risk_aversion: float = 1.0
    alpha: float = 0.1
    num_draws: int = 1000
    relevance_level: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        from probrank._options import parse_enum

        object.__setattr__(
            self, "criterion", parse_enum(RankingCriterion, self.criterion, "criterion")
        )
        for name, low in (("depth", 1), ("folds", 2), ("num_draws", 1), ("relevance_level", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputDataError(f"{name} must be an integer >= {low}, got {value!r}")


@dataclass
class CascadeResult:
    """Everything a cascade produced.

    Attributes:
        first_stage: The first-stage run (all topics, full depth).
        rerank: Ranked by posterior mean P(relevant), first-stage tail below.
        risk: Ranked by the risk-aware criterion, first-stage tail below.
        lists: The reranked candidate lists (labelled), one per topic.
        estimate: The held-out relevance estimate of every candidate of ``lists``.
        risk_scores: `n` risk-aware scores of those candidates.
        folds: The topics of each fold.
    """

    first_stage: Run
    rerank: Run
    risk: Run
    lists: list[CandidateList]
    estimate: RelevanceEstimate
    risk_scores: Tensor
    folds: list[list[str]] = field(default_factory=list)


def held_out_estimate(
    lists: Sequence[CandidateList],
    make_reranker: Callable[[], Reranker],
    folds: list[list[str]],
    *,
    seed: int = 0,
    progress: bool = True,
) -> RelevanceEstimate:
    """Held-out estimates of every list: each fold scored by a model fitted on the others
    (the loop of :func:`probrank.data.folds.cross_validate`).

    Args:
        lists: Labelled lists, one per topic.
        make_reranker: Returns a fresh, unfitted :class:`Reranker`.
        folds: Topics of each fold (every list's qid in exactly one; e.g.
            :func:`probrank.data.folds.split_folds`).
        seed: Seeds each fold's model (``seed + fold``).
        progress: Show a progress bar over folds.

    Returns:
        The estimate of every candidate, in the order of ``lists``.
    """
    by_qid = {item.qid: item for item in lists}

    def fit(train: list[str], fold: int) -> Reranker:
        return make_reranker().fit([by_qid[q] for q in train], seed=seed + fold)

    def predict(model: Reranker, test: list[str]) -> dict[str, RelevanceEstimate]:
        items = [by_qid[q] for q in test]
        estimate = model.estimate(items)
        if estimate.covariances and len(estimate.covariances) != len(items):
            raise InputDataError(
                f"the reranker gave {len(estimate.covariances)} covariances for {len(items)} lists"
            )
        parts: dict[str, RelevanceEstimate] = {}
        offset = 0
        for i, item in enumerate(items):
            parts[item.qid] = _slice(estimate, offset, len(item), i)
            offset += len(item)
        return parts

    with tqdm(total=len(folds), desc="cross-validation", unit="fold", disable=not progress) as bar:

        def advance(_fold: int) -> None:
            bar.update(1)

        result = cross_validate(
            folds, fit, predict, keys=[item.qid for item in lists], progress=advance
        )
    parts: dict[str, RelevanceEstimate] = {}
    for part in result.predictions:
        parts.update(part or {})
    return RelevanceEstimate.concatenate([parts[item.qid] for item in lists])


def _slice(estimate: RelevanceEstimate, start: int, n: int, index: int) -> RelevanceEstimate:
    """List ``index`` of an estimate: its `n` candidates from ``start``."""
    stop = start + n
    covariances = (estimate.covariances[index],) if estimate.covariances else ()
    return RelevanceEstimate(
        qids=estimate.qids[start:stop],
        candidate_ids=estimate.candidate_ids[start:stop],
        probability=estimate.probability[start:stop],
        mean=estimate.mean[start:stop],
        variance=estimate.variance[start:stop],
        covariances=covariances,
    )


def scores_to_run(
    lists: Sequence[CandidateList],
    scores: Tensor,
    first_stage: Run,
    *,
    name: str,
) -> Run:
    """A run: each list's candidates scored by ``scores``, the first stage's later documents
    below them in its order (see the module docstring).

    Args:
        lists: The reranked lists (their candidates are each topic's top documents).
        scores: `n` scores of the lists' candidates, list by list.
        first_stage: The first-stage run.
        name: The run's name and tag.
    """
    values = scores.detach().double().tolist()
    out: dict[str, dict[str, float]] = {}
    offset = 0
    for item in lists:
        top = dict(zip(item.candidate_ids, values[offset : offset + len(item)], strict=True))
        offset += len(item)
        ranking = first_stage.ranking(item.qid)
        low = min(top.values())
        total = max(len(ranking), 1)
        rest = [doc for doc, _ in ranking if doc not in top]
        out[item.qid] = {**top, **{doc: low - (r + 1) / total for r, doc in enumerate(rest)}}
    return Run(out, name=name, tag=name)


def run_cascade(
    first_stage: Run,
    topics: Mapping[str, str],
    documents: Documents,
    qrels: Qrels,
    make_reranker: Callable[[], Reranker],
    settings: CascadeSettings | None = None,
    *,
    progress: bool = True,
) -> CascadeResult:
    """Rerank a first-stage run by cross-validated P(relevant) and a risk-aware criterion.

    Args:
        first_stage: The first stage's run (topics without judgements are left out).
        topics: ``{qid: query}``.
        documents: Document texts (a :class:`~probrank.retrieval.Collection` or a mapping).
        qrels: Judgements (unjudged documents count as grade 0).
        make_reranker: Returns a fresh, unfitted :class:`Reranker` per fold.
        settings: :class:`CascadeSettings`.
        progress: Show progress bars.

    Returns:
        :class:`CascadeResult`.
    """
    settings = settings or CascadeSettings()
    judged = Run(
        {q: first_stage[q] for q in first_stage if q in qrels and len(first_stage[q])},
        name=first_stage.name,
        tag=first_stage.tag,
    )
    if len(judged) < settings.folds:
        raise InputDataError(
            f"{len(judged)} judged topics with retrieved documents; "
            f"{settings.folds} folds need more"
        )
    lists = CandidateList.from_trec(
        dict(topics),
        judged,
        documents,
        qrels,
        depth=settings.depth,
        relevance_level=settings.relevance_level,
        first_stage_features=True,
    )
    # the folds in the permutation's order, as the cascade's results have always reported them
    folds = split_folds(
        [item.qid for item in lists], settings.folds, seed=settings.seed, sort=False
    )
    estimate = held_out_estimate(lists, make_reranker, folds, seed=settings.seed, progress=progress)
    risk = criterion_scores(
        settings.criterion,
        probability=estimate.probability,
        mean=estimate.mean,
        variance=estimate.variance,
        risk_aversion=settings.risk_aversion,
        alpha=settings.alpha,
        num_draws=settings.num_draws,
        seed=settings.seed,
    )
    return CascadeResult(
        first_stage=judged,
        rerank=scores_to_run(lists, estimate.probability, judged, name="rerank"),
        risk=scores_to_run(lists, risk, judged, name="risk"),
        lists=lists,
        estimate=estimate,
        risk_scores=risk,
        folds=folds,
    )
