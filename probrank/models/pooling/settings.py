"""The settings of the pooling relevance model
(:class:`~probrank.models.pooling.model.PoolingRelevanceModel`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from probrank.exceptions import InputDataError
from probrank.models._settings import check_positive, check_positive_int, set_enum

__all__ = ["PoolingModelSettings", "PoolingPosterior"]


class PoolingPosterior(str, Enum):
    """How :meth:`~probrank.models.pooling.PoolingRelevanceModel.sample_parameters` draws."""

    LAPLACE = "laplace"
    """The Laplace approximation: a Gaussian at the MAP with the inverse Hessian."""
    LAPLACE_IS = "laplace-is"
    """The Laplace approximation corrected by importance sampling: ``importance_draws`` from a
    multivariate Student-t (``proposal_df`` degrees of freedom, the Laplace covariance times
    ``proposal_scale^2``), weighted by the exact posterior over the proposal density, the
    weights Pareto-smoothed (PSIS, by the installed ArviZ), and the requested draws resampled
    from them."""
    NUTS = "nuts"
    """Pyro's NUTS on the exact posterior, in coordinates whitened by the Laplace
    approximation (``theta = MAP + L^-T z``: near a standard normal, so a short warm-up
    suffices): ``mcmc_warmup`` steps, then ``mcmc_draws`` kept draws, one chain seeded with
    ``mcmc_seed``; run at the first draw after a fit (refits alone stay Laplace-cheap), and
    the requested draws resampled from the chain's."""


@dataclass(frozen=True)
class PoolingModelSettings:
    """Priors and fitting of the rank-relevance model.

    Each run ``r`` has a rank-relevance curve ``c_r + w_r * (log(depth + 1) - log(rank))``
    on the logit scale (averaged over the runs), and each topic an offset ``a_t`` and a
    deviation ``b1_t`` of the fused evidence's coefficient; the run effects are partially
    pooled (``w_r ~ N(mu_w, run_scale^2)``, ``c_r ~ N(mu_c, retrieved_scale^2)``), and so are
    the topics (``a_t ~ N(mu_a, topic_scale^2)``, ``b1_t ~ N(0, topic_slope_scale^2)``), with
    ``N(0, hyper_scale^2)`` on the three means and the fused evidence's coefficients.

    A run's terms enter a document's logit divided by the number of runs ``R``, so a run's
    own deviation moves the logit by about ``run_scale * log(depth + 1) / R`` at rank 1; the
    default 50 (about 3.7 on the logit with 63 runs at depth 100) leaves the runs' curves
    nearly free, which ranks the runs of TREC DL 2021 better than 2 did (models/pooling/README.md).

    Attributes:
        run_scale: Prior sd of a run's log-rank slope around the runs' mean slope.
        retrieved_scale: Prior sd of a run's "retrieved within the depth" effect.
        topic_scale: Prior sd of a topic's offset around the mean offset.
        hyper_scale: Prior sd of the three population means and of the fused evidence's
            coefficients.
        topic_slope_scale: Prior sd of a topic's deviation from the fused evidence's
            coefficient.
        max_iterations: Newton steps of the MAP fit at most.
        tolerance: Newton stops when the largest step is below this.
        num_samples: Posterior draws used by ``posterior`` by default.
        posterior: :class:`PoolingPosterior`: the Laplace Gaussian (``"laplace"``, the
            model's default) or the Laplace corrected by Pareto-smoothed importance sampling
            (``"laplace-is"``; not calibrated either where the run effects are weakly
            identified: its Pareto k exceeds 0.7 there, models/pooling/README.md), or NUTS
            on the exact posterior (``"nuts"``).
        importance_draws: With ``"laplace-is"``: proposal draws per fit.
        proposal_df: With ``"laplace-is"``: degrees of freedom of the Student-t proposal.
        proposal_scale: With ``"laplace-is"``: the proposal's scale as a multiple of the
            Laplace standard deviations.
        importance_seed: With ``"laplace-is"``: seed of the proposal draws of a fit (the
            same every fit, so a model's draws depend only on its data and the caller's seed).
        mcmc_warmup: With ``"nuts"``: adaptation steps of the chain (discarded).
        mcmc_draws: With ``"nuts"``: draws kept from the chain.
        mcmc_seed: With ``"nuts"``: seed of the chain (torch's generator, forked: the
            process's own generator is left as it was).
        cell_effects: Add a flexible table of cell effects over (best rank over the runs, by
            doubling of the depth) x (number of runs ranking the document, by doubling),
            shared by the topics (experimental, off by default; see
            :meth:`~probrank.models.pooling.PoolingRelevanceModel.cell_index`).
        cell_scale: Prior sd of each cell effect (``N(0, cell_scale^2)``).
        cell_smooth_scale: With ``cell_effects``: None (independent cells) or the prior sd of
            the difference of two adjacent cells (a first-order Gaussian Markov random field
            over the grid, on top of ``cell_scale``), so sparse cells borrow from their
            neighbours.
        cell_counts: With ``cell_effects``: the grid's columns by the number of runs ranking
            the document (True) or a single column (False: an effect of the best rank alone,
            by doubling of the depth, 8 cells at depth 100; models/pooling/README.md).
    """

    run_scale: float = 50.0
    retrieved_scale: float = 50.0
    topic_scale: float = 1.5
    hyper_scale: float = 10.0
    topic_slope_scale: float = 0.5
    max_iterations: int = 50
    tolerance: float = 1e-7
    num_samples: int = 200
    posterior: PoolingPosterior = PoolingPosterior.LAPLACE
    importance_draws: int = 2000
    proposal_df: float = 4.0
    proposal_scale: float = 1.0
    importance_seed: int = 0
    mcmc_warmup: int = 150
    mcmc_draws: int = 200
    mcmc_seed: int = 0
    cell_effects: bool = False
    cell_scale: float = 1.0
    cell_smooth_scale: float | None = None
    cell_counts: bool = True

    def __post_init__(self) -> None:
        set_enum(self, "posterior", PoolingPosterior)
        for name in (
            "run_scale",
            "retrieved_scale",
            "topic_scale",
            "hyper_scale",
            "topic_slope_scale",
            "tolerance",
            "proposal_df",
            "proposal_scale",
            "cell_scale",
        ):
            check_positive(name, getattr(self, name))
        if self.cell_smooth_scale is not None:
            check_positive("cell_smooth_scale", self.cell_smooth_scale)
        for name in ("cell_effects", "cell_counts"):
            if not isinstance(getattr(self, name), bool):
                raise InputDataError(f"{name} must be true or false, got {getattr(self, name)!r}")
        check_positive_int("max_iterations", self.max_iterations)
        check_positive_int("num_samples", self.num_samples)
        check_positive_int("importance_draws", self.importance_draws)
        check_positive_int("mcmc_warmup", self.mcmc_warmup)
        check_positive_int("mcmc_draws", self.mcmc_draws)
        for name in ("importance_seed", "mcmc_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputDataError(f"{name} must be an integer, got {value!r}")
