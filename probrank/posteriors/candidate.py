"""Gaussian posteriors over the utilities of a set of candidates (one posterior currency).

Low-rank ``RootLinearOperator`` covariances for RFF/Laplace heads (root ``Phi L^{-T}``, `q x L`)
and sample covariances for MC dropout, ensembles and SWAG (root: centred samples, `q x S`);
the `q x q` matrix is never formed unless asked for.
"""

from __future__ import annotations

from probrank.nn.mvn import low_rank_mvn, sample_mvn

__all__ = ["low_rank_mvn", "sample_mvn"]
