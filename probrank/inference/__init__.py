"""Inference: SVI with early stopping, NUTS, posterior predictive summaries."""

from probrank.inference.mcmc import DENSE_MASS_MAX_DIM, NutsSamples, fit_nuts, latent_dimension
from probrank.inference.predictive import (
    DrawsLayout,
    PredictiveSummary,
    credible_interval,
    draws_layout,
    posterior_predictive,
)
from probrank.inference.svi import FitResult, fit_svi

__all__ = [
    "DENSE_MASS_MAX_DIM",
    "DrawsLayout",
    "FitResult",
    "NutsSamples",
    "PredictiveSummary",
    "credible_interval",
    "draws_layout",
    "fit_nuts",
    "fit_svi",
    "latent_dimension",
    "posterior_predictive",
]
