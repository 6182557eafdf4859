"""probrank.posteriors: the one candidate posterior, and its BoTorch edge.

Every candidate model in probrank is a :class:`CandidateSetPosterior`
(:mod:`probrank.posteriors.base`): a joint Gaussian over one question's `n` candidates
(``posterior()``; ``posterior_at(X)`` at any `batch_shape x q x d` points) that conditions on
judgements (``update(winner, loser)``, ``conditioned(X, comparisons)``) and offers
``botorch_model()``: a :class:`PreferenceUtilityModel`, a BoTorch ``Model`` whose
``posterior(X)`` is a ``GPyTorchPosterior`` with the full joint covariance and which conditions
on judgements (``condition_on_observations(X, comparisons)``, ``fantasize(X,
pairwise_sampler)``). The implementations:

* closed-form Laplace (:mod:`probrank.posteriors.newton`, one Newton solver shared by all):
  :class:`BradleyTerryLaplace` (kernel prior over the candidates),
  :class:`LastLayerLaplacePosterior` (the Siamese network's last layer) and
  :class:`HeadLaplacePosterior` (any relevance head of :mod:`probrank.nn.heads`: the RFF GP
  heads, MC dropout, the ensemble, the deterministic head; also conditions on 0/1 relevance
  labels; :meth:`probrank.models.GPFRanker.botorch_model`);
* updated by SGD: :class:`MCDropoutPosterior`, :class:`SWAGUtilityPosterior`,
  :class:`EnsemblePosterior`;
* :class:`GPPLPosterior` (BoTorch's ``PairwiseGP`` with a prior mean).

:class:`PreferenceModel` (``posterior()`` + ``update``: what an interactive session drives) and
:class:`ConditionablePosterior` (``posterior_at`` + ``conditioned``: what the BoTorch adapter needs)
are the structural parts of :class:`CandidateSetPosterior`, so a user's own model with those methods
plugs in. :class:`UtilityModel` adapts a head's ``posterior(features)``
(:class:`~probrank.posteriors.HeadPosterior`) directly, keeping its lazy covariance, and hands
conditioning over to :class:`HeadLaplacePosterior`. All take float32 or float64 ``X`` (BoTorch's
default) and answer in the dtype of ``X``.

BoTorch acquisition functions that work on these models (each is run, and checked against a
closed form where one exists, by ``tests/posteriors/test_preference.py`` and
``tests/posteriors/test_model.py``):

* analytic: ``LogExpectedImprovement``, ``ExpectedImprovement``, ``UpperConfidenceBound``,
  ``PosteriorMean``, ``AnalyticExpectedUtilityOfBestOption`` (EUBO over pairs);
* Monte Carlo: ``qExpectedImprovement``, ``qLogExpectedImprovement``,
  ``qNoisyExpectedImprovement`` and ``qLogNoisyExpectedImprovement`` (with ``X_baseline`` the
  candidates and ``cache_root=False``: the models are not GPyTorch ``ExactGP`` models),
  ``qUpperConfidenceBound``, ``qSimpleRegret``, ``qExpectedUtilityOfBestOption`` (qEUBO);
* look-ahead, fantasizing judgements with a pairwise sampler
  (``botorch.sampling.pairwise_samplers.PairwiseSobolQMCNormalSampler``):
  ``qKnowledgeGradient`` (``sampler=`` the pairwise sampler) and
  ``qNegIntegratedPosteriorVariance`` (likewise).

The candidates are a finite set: optimise over them with ``optimize_acqf_discrete`` (without
re-asking a pair: :func:`probrank.acquisition.optimize_acqf_pairs` and
:func:`probrank.acquisition.optimize_acqf_challenger`), not with the continuous
``optimize_acqf``;
:class:`BradleyTerryLaplace` accepts only its candidates' rows as points, the others also
score (and condition on) new feature rows.
"""

from probrank.posteriors.base import CandidateSetPosterior
from probrank.posteriors.bradley_terry import BradleyTerryLaplace, Link, rbf_kernel
from probrank.posteriors.candidate import (
    jittered_sample_mvn,
    low_rank_mvn,
    sample_mvn,
    with_jitter,
)
from probrank.posteriors.gppl import (
    GPPLPosterior,
    PriorMeanPairwiseGP,
    cosine_prior_mean,
    laplace_log_evidence,
)
from probrank.posteriors.head import HeadLaplacePosterior
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.model import CandidatePosterior, HeadPosterior, UtilityModel
from probrank.posteriors.neural import (
    EnsemblePosterior,
    IncrementalUpdate,
    MCDropoutPosterior,
    dropout_passes,
)
from probrank.posteriors.newton import LaplaceFit, laplace_fit
from probrank.posteriors.preference import (
    PreferenceUtilityModel,
    cast_mvn,
    comparison_pairs,
    match_rows,
)
from probrank.posteriors.protocol import ConditionablePosterior, PreferenceModel
from probrank.posteriors.swag import SWAGUtilityPosterior, swag_parameters

__all__ = [
    "BradleyTerryLaplace",
    "CandidatePosterior",
    "CandidateSetPosterior",
    "ConditionablePosterior",
    "EnsemblePosterior",
    "GPPLPosterior",
    "HeadLaplacePosterior",
    "HeadPosterior",
    "IncrementalUpdate",
    "LaplaceFit",
    "LastLayerLaplacePosterior",
    "Link",
    "MCDropoutPosterior",
    "PreferenceModel",
    "PreferenceUtilityModel",
    "PriorMeanPairwiseGP",
    "SWAGUtilityPosterior",
    "UtilityModel",
    "cast_mvn",
    "comparison_pairs",
    "cosine_prior_mean",
    "dropout_passes",
    "jittered_sample_mvn",
    "laplace_fit",
    "laplace_log_evidence",
    "low_rank_mvn",
    "match_rows",
    "rbf_kernel",
    "sample_mvn",
    "swag_parameters",
    "with_jitter",
]
