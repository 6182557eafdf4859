"""Likelihoods: callables of latent values returning Pyro distributions.

:mod:`~probrank.likelihoods.proportion`: counts of relevant documents in a list's top ``n``
(QLFusion). :mod:`~probrank.likelihoods.relevance`: binary relevance, pairwise preferences
(Bradley-Terry, Thurstone) and graded labels (cumulative logits). Focal loss lives in
:mod:`probrank.nn.losses`.
"""

from probrank.likelihoods.proportion import (
    Likelihood,
    beta_binomial_proportion,
    binomial_kl,
    binomial_proportion,
    declare_mean_proportion,
    gaussian_proportion,
    likelihood_name,
    mean_proportion,
    mse_loss,
)
from probrank.likelihoods.relevance import bernoulli_relevance, bradley_terry, ordinal, thurstone

__all__ = [
    "Likelihood",
    "bernoulli_relevance",
    "beta_binomial_proportion",
    "binomial_kl",
    "binomial_proportion",
    "bradley_terry",
    "declare_mean_proportion",
    "gaussian_proportion",
    "likelihood_name",
    "mean_proportion",
    "mse_loss",
    "ordinal",
    "thurstone",
]
