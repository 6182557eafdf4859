"""Diagnostics: posteriors to ArviZ, summaries (R-hat, ESS, divergences), convergence checks,
posterior predictive checks, PSIS-LOO comparison, SVI-vs-NUTS comparison and plots.

From a fitted model to a summary table in one call::

    from probrank.diagnostics import summarize
    summarize(net)                      # a QLFusion net's Bayesian output layer (SVI)
    summarize(fit_nuts(model, x, y))    # NUTS: R-hat, bulk/tail ESS, divergences

Tables follow the installed ArviZ (0.x on Python 3.11, 1.x on 3.12+; :mod:`probrank._arviz`
is the one module that knows which): ``summary`` is ``arviz.summary`` (0.x: ``hdi_3%``/
``hdi_97%``; 1.x: ``eti89_lb``/``eti89_ub``; ``mcse_*``, ``ess_bulk``, ``ess_tail``,
``r_hat``), ``compare_models`` is ``arviz.compare`` plus its checks, and every converter
returns the line's container (``InferenceData`` / ``xarray.DataTree``). "Converged" and
"reliable" are earned: R-hat <= 1.01, bulk and tail ESS >= 400, no divergences (and Pareto
k <= 0.7 for LOO), each named when it fails.
"""

from probrank.diagnostics.arviz import (
    from_draws,
    layer_draws,
    output_layer_dims,
    summarize,
    to_inference_data,
)
from probrank.diagnostics.compare import compare_posteriors
from probrank.diagnostics.convergence import (
    ESS_MIN,
    RHAT_MAX,
    ConvergenceReport,
    check_convergence,
)
from probrank.diagnostics.loo import (
    PARETO_K_THRESHOLD,
    LooResult,
    compare_models,
    convergence_problems,
    loo,
    loo_verdict,
)
from probrank.diagnostics.plots import (
    plot_forest,
    plot_posterior_comparison,
    plot_ppc,
    plot_reliability,
    plot_sbc,
    plot_trace,
    save_posterior_summary,
)
from probrank.diagnostics.ppc import (
    PPCResult,
    Statistic,
    posterior_predictive_pvalue,
    ppc_bernoulli,
    ppc_binomial,
    ppc_bradley_terry,
    ppc_from_inference_data,
    predictive_check,
)
from probrank.diagnostics.pyro_model import from_pyro
from probrank.diagnostics.summary import divergences, eti, hdi, summary

__all__ = [
    "ESS_MIN",
    "PARETO_K_THRESHOLD",
    "RHAT_MAX",
    "ConvergenceReport",
    "LooResult",
    "PPCResult",
    "Statistic",
    "check_convergence",
    "compare_models",
    "compare_posteriors",
    "convergence_problems",
    "divergences",
    "eti",
    "from_draws",
    "from_pyro",
    "hdi",
    "layer_draws",
    "loo",
    "loo_verdict",
    "output_layer_dims",
    "plot_forest",
    "plot_posterior_comparison",
    "plot_ppc",
    "plot_reliability",
    "plot_sbc",
    "plot_trace",
    "posterior_predictive_pvalue",
    "ppc_bernoulli",
    "ppc_binomial",
    "ppc_bradley_terry",
    "ppc_from_inference_data",
    "predictive_check",
    "save_posterior_summary",
    "summarize",
    "summary",
    "to_inference_data",
]
