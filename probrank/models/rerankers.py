"""The candidate models as second stages of a retrieval cascade (and of PyTerrier pipelines).

:class:`GPFReranker` and :class:`MultiTaskReranker` give :class:`~probrank.models.GPFRanker` and
:class:`~probrank.models.MultiTaskRanker` the :class:`~probrank.retrieval.cascade.Reranker`
protocol: ``fit(train_lists, validation_lists=None, *, seed=None)`` and ``estimate(lists) ->
RelevanceEstimate`` with, per candidate, the posterior mean P(relevant) and the posterior mean and
variance of its logit (utility), and per list the joint posterior covariance (from the model's
BoTorch posterior over that list's candidates).

* GPF: P(relevant) is the ranker's calibrated probability ``sigmoid(m / (T sqrt(1 + lambda
  v)))``; the logit posterior is the Laplace GP posterior divided by the temperature ``T``.
* Multi-task: P(relevant) is the posterior mean P(keep) of the filtering likelihood; the
  utility posterior is exact for its mean-field output layer.

:data:`RERANKERS` maps a name to its class (the cascade config's ``[second_stage] model``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker.model import GPFRanker, GPFRankerSettings
from probrank.models.multitask.model import MultiTaskRanker, MultiTaskSettings
from probrank.retrieval.cascade import RelevanceEstimate

__all__ = ["RERANKERS", "GPFReranker", "MultiTaskReranker", "list_covariances"]


def list_covariances(
    botorch_model: Any, features: Tensor, lists: Sequence[CandidateList]
) -> tuple[Tensor, ...]:
    """Each list's `n_q x n_q` joint posterior covariance (float64).

    Args:
        botorch_model: A fitted model's ``botorch_model()``.
        features: `n x d` standardised features of all candidates, list by list.
        lists: The lists.
    """
    out, start = [], 0
    with torch.no_grad():
        for item in lists:
            x = features[start : start + len(item)].double()
            start += len(item)
            posterior = botorch_model.posterior(x)
            out.append(posterior.mvn.covariance_matrix.detach().double())
    return tuple(out)


def _joint_covariances(model: Any, lists: Sequence[CandidateList]) -> tuple[Tensor, ...]:
    """:func:`list_covariances` of a fitted ranker (its features and BoTorch model)."""
    return list_covariances(model.botorch_model(), model.features(lists), lists)


def _ids(lists: Sequence[CandidateList]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (
        tuple(item.qid for item in lists for _ in item.candidates),
        tuple(c for item in lists for c in item.candidate_ids),
    )


class GPFReranker:
    """:class:`~probrank.models.GPFRanker` as a cascade second stage.

    Args:
        settings: The ranker's settings.
        encoder: The frozen encoder (None: the packaged default, no cache).
        model: An already fitted ranker to wrap (``fit`` then refits it).
        joint: Also compute each list's joint covariance (for ERCE); False: marginals only.
    """

    def __init__(
        self,
        settings: GPFRankerSettings | None = None,
        encoder: TransformerEncoder | None = None,
        *,
        model: GPFRanker | None = None,
        joint: bool = True,
    ) -> None:
        self.model = model if model is not None else GPFRanker(settings, encoder)
        self.joint = joint

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> GPFReranker:
        """Fit the ranker (see :meth:`GPFRanker.fit`); returns ``self``."""
        self.model.fit(train_lists, validation_lists, seed=seed)
        return self

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate:
        """Posterior relevance of every candidate of ``lists`` (see the module docstring)."""
        predictions = self.model.predict(lists)
        covariances = _joint_covariances(self.model, lists) if self.joint else ()
        return RelevanceEstimate(
            qids=predictions.qids,
            candidate_ids=predictions.candidate_ids,
            probability=predictions.probability.double(),
            mean=predictions.mean.double(),
            variance=predictions.variance.double(),
            covariances=covariances,
        )


class MultiTaskReranker:
    """:class:`~probrank.models.MultiTaskRanker` as a cascade second stage.

    Args:
        settings: The ranker's settings.
        encoder: The frozen encoder (None: the packaged default, no cache).
        model: An already fitted ranker to wrap.
        joint: Also compute each list's joint covariance (for ERCE).
    """

    def __init__(
        self,
        settings: MultiTaskSettings | None = None,
        encoder: TransformerEncoder | None = None,
        *,
        model: MultiTaskRanker | None = None,
        joint: bool = True,
    ) -> None:
        self.model = model if model is not None else MultiTaskRanker(settings, encoder)
        self.joint = joint

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> MultiTaskReranker:
        """Fit the ranker (see :meth:`MultiTaskRanker.fit`); returns ``self``."""
        self.model.fit(train_lists, validation_lists, seed=seed)
        return self

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate:
        """Posterior relevance of every candidate of ``lists`` (see the module docstring)."""
        probability, mean, sd = self.model.predict(lists)
        covariances = _joint_covariances(self.model, lists) if self.joint else ()
        qids, candidate_ids = _ids(lists)
        return RelevanceEstimate(
            qids=qids,
            candidate_ids=candidate_ids,
            probability=probability.double(),
            mean=mean.double(),
            variance=sd.double() ** 2,
            covariances=covariances,
        )


RERANKERS: dict[str, type[GPFReranker] | type[MultiTaskReranker]] = {
    "gpf": GPFReranker,
    "multitask": MultiTaskReranker,
}
"""Second stages by name."""


def reranker_class(name: str) -> type[GPFReranker] | type[MultiTaskReranker]:
    """The class registered as ``name``.

    Raises:
        InputDataError: an unknown name.
    """
    if name not in RERANKERS:
        raise InputDataError(f"second stage must be one of {', '.join(RERANKERS)}, got {name!r}")
    return RERANKERS[name]
