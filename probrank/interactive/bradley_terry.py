"""The closed-form Bradley-Terry / Thurstone Laplace preference model (re-exported).

It lives in :mod:`probrank.posteriors.bradley_terry` so that the posteriors that build on it
(the last-layer Laplace posterior of the Siamese ranker) sit below ``interactive`` in the
import direction; this module keeps the historical import path working.
"""

from probrank.posteriors.bradley_terry import BradleyTerryLaplace, Link, rbf_kernel

__all__ = ["BradleyTerryLaplace", "Link", "rbf_kernel"]
