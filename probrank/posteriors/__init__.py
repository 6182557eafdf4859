"""probrank.posteriors: posteriors over a question's candidate utilities, and BoTorch adapters.

Every posterior here is a :class:`~probrank.interactive.model.PreferenceModel` (``posterior()``
over the question's `n` candidates, ``update(winner, loser)``) and offers ``botorch_model()``,
a BoTorch ``Model`` whose ``posterior(X)`` is a ``GPyTorchPosterior`` with the full joint
covariance.
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
from probrank.posteriors.swag import SWAGUtilityPosterior, swag_parameters

__all__ = [
    "BradleyTerryLaplace",
    "CandidatePosterior",
    "CandidateSetPosterior",
    "EnsemblePosterior",
    "GPPLPosterior",
    "IncrementalUpdate",
    "LastLayerLaplacePosterior",
    "Link",
    "MCDropoutPosterior",
    "PriorMeanPairwiseGP",
    "SWAGUtilityPosterior",
    "UtilityModel",
    "cosine_prior_mean",
    "dropout_passes",
    "jittered_sample_mvn",
    "laplace_log_evidence",
    "low_rank_mvn",
    "rbf_kernel",
    "sample_mvn",
    "swag_parameters",
    "with_jitter",
]
