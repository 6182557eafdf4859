"""probrank.acquisition: which pair of candidates to ask a user about next.

Every strategy reads one joint Gaussian posterior over a question's candidates (a gpytorch
``MultivariateNormal`` or a BoTorch ``GPyTorchPosterior``) and scores all pairs from its mean
vector and covariance matrix in closed form.

For loops written with BoTorch's own acquisition functions, :func:`optimize_acqf_pairs` and
:func:`optimize_acqf_challenger` (:mod:`probrank.acquisition.discrete`) run
``optimize_acqf_discrete`` over the candidates without ever re-asking a pair.
"""

from probrank.acquisition.discrete import (
    PairChoices,
    PendingExpectedUtilityOfBestOption,
    open_pairs,
    optimize_acqf_challenger,
    optimize_acqf_pairs,
)
from probrank.acquisition.ei import ExpectedImprovementPair, expected_improvement
from probrank.acquisition.eubo import (
    ExpectedUtilityOfBestOption,
    eubo_matrix,
    expected_utility_of_best_option,
)
from probrank.acquisition.pairs import (
    ExhaustedPairsError,
    JointGaussian,
    OpenPairStrategy,
    joint_gaussian,
)
from probrank.acquisition.positive_part import expected_positive_part, log_expected_positive_part
from probrank.acquisition.random_pair import RandomPair
from probrank.acquisition.select import (
    STRATEGIES,
    PairStrategy,
    Strategy,
    resolve_strategy,
    select_pair,
)
from probrank.acquisition.thompson import ThompsonPair, joint_draws
from probrank.acquisition.unc import UncertaintySampling, uncertainty

__all__ = [
    "STRATEGIES",
    "ExhaustedPairsError",
    "ExpectedImprovementPair",
    "ExpectedUtilityOfBestOption",
    "JointGaussian",
    "OpenPairStrategy",
    "PairChoices",
    "PairStrategy",
    "PendingExpectedUtilityOfBestOption",
    "RandomPair",
    "Strategy",
    "ThompsonPair",
    "UncertaintySampling",
    "eubo_matrix",
    "expected_improvement",
    "expected_positive_part",
    "expected_utility_of_best_option",
    "joint_draws",
    "joint_gaussian",
    "log_expected_positive_part",
    "open_pairs",
    "optimize_acqf_challenger",
    "optimize_acqf_pairs",
    "resolve_strategy",
    "select_pair",
    "uncertainty",
]
