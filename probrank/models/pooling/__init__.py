"""The Bayesian relevance model of test-collection pooling (:mod:`probrank.pooling`'s
``bayesian`` strategy): rank-relevance curves of runs, partially pooled across runs and topics.

* :mod:`~probrank.models.pooling.model`: :class:`PoolingRelevanceModel` (``fit -> self``,
  ``predict``, ``posterior``);
* :mod:`~probrank.models.pooling.settings`: :class:`PoolingModelSettings` and
  :class:`PoolingPosterior` (the Laplace, or the Laplace corrected by importance sampling).
"""

from probrank.models.pooling.model import PoolingRelevanceModel
from probrank.models.pooling.settings import PoolingModelSettings, PoolingPosterior

__all__ = ["PoolingModelSettings", "PoolingPosterior", "PoolingRelevanceModel"]
