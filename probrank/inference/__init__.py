"""Inference: SVI with early stopping, NUTS, posterior predictive summaries."""

from probrank.inference.mcmc import NutsSamples, fit_nuts
from probrank.inference.predictive import (
    PredictiveSummary,
    credible_interval,
    posterior_predictive,
)
from probrank.inference.svi import FitResult, fit_svi

__all__ = [
    "FitResult",
    "NutsSamples",
    "PredictiveSummary",
    "credible_interval",
    "fit_nuts",
    "fit_svi",
    "posterior_predictive",
]
