"""The settings of the pooling relevance model
(:class:`~probrank.models.pooling.model.PoolingRelevanceModel`)."""

from __future__ import annotations

from dataclasses import dataclass

from probrank.models._settings import check_positive, check_positive_int

__all__ = ["PoolingModelSettings"]


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
        num_samples: Posterior draws used by ``sample_probabilities`` by default.
    """

    run_scale: float = 50.0
    retrieved_scale: float = 50.0
    topic_scale: float = 1.5
    hyper_scale: float = 10.0
    topic_slope_scale: float = 0.5
    max_iterations: int = 50
    tolerance: float = 1e-7
    num_samples: int = 200

    def __post_init__(self) -> None:
        for name in (
            "run_scale",
            "retrieved_scale",
            "topic_scale",
            "hyper_scale",
            "topic_slope_scale",
            "tolerance",
        ):
            check_positive(name, getattr(self, name))
        check_positive_int("max_iterations", self.max_iterations)
        check_positive_int("num_samples", self.num_samples)
