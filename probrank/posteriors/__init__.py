"""probrank.posteriors: posteriors over a question's candidate utilities, and BoTorch adapters.

Every posterior here (:class:`BradleyTerryLaplace`, :class:`LastLayerLaplacePosterior`,
:class:`MCDropoutPosterior`, :class:`SWAGUtilityPosterior`, :class:`EnsemblePosterior`,
:class:`GPPLPosterior`) is a :class:`PreferenceModel` (``posterior()`` over the question's `n`
candidates, ``update(winner, loser)``; :mod:`probrank.posteriors.protocol`) and offers
``botorch_model()``: a :class:`PreferenceUtilityModel`, a BoTorch ``Model`` whose
``posterior(X)`` is a ``GPyTorchPosterior`` with the full joint covariance and which
conditions on judgements (``condition_on_observations(X, comparisons)``, ``fantasize(X,
pairwise_sampler)``). :class:`UtilityModel` does the same (without conditioning) for any head
with ``posterior(features)`` (:mod:`probrank.nn.heads`). Both take float32 or float64 ``X``
(BoTorch's default) and answer in the dtype of ``X``.

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

The candidates are a finite set: optimise over them with ``optimize_acqf_discrete`` (or by
evaluating every pair), not with the continuous ``optimize_acqf``;
:class:`BradleyTerryLaplace` accepts only its candidates' rows as points, the others also
score (and condition on) new feature rows.
"""

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
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.model import CandidatePosterior, UtilityModel
from probrank.posteriors.neural import (
    CandidateSetPosterior,
    EnsemblePosterior,
    IncrementalUpdate,
    MCDropoutPosterior,
    dropout_passes,
)
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
    "IncrementalUpdate",
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
    "laplace_log_evidence",
    "low_rank_mvn",
    "match_rows",
    "rbf_kernel",
    "sample_mvn",
    "swag_parameters",
    "with_jitter",
]
