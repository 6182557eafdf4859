"""Likelihoods: callables of latent values returning Pyro distributions."""

from probrank.likelihoods.proportion import (
    Likelihood,
    beta_binomial_proportion,
    binomial_kl,
    binomial_proportion,
    gaussian_proportion,
    mse_loss,
)

__all__ = [
    "Likelihood",
    "beta_binomial_proportion",
    "binomial_kl",
    "binomial_proportion",
    "gaussian_proportion",
    "mse_loss",
]
