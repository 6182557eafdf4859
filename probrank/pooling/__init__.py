"""Test-collection pooling: which documents to judge, and what the judgements say of the runs.

* :mod:`~probrank.pooling.pool`: :class:`Pool` (the depth-k pool of runs as arrays) and
  :class:`Judgements` (the judgements so far, in order);
* :mod:`~probrank.pooling.strategies`: ``depth-k``, ``mtf``, ``mm-ns``, ``active-sampling``,
  ``bayesian`` (a registry of strategy objects, :data:`STRATEGIES`);
* :mod:`~probrank.pooling.measures`: MAP and nDCG@10 of every run, vectorised over draws;
* :mod:`~probrank.pooling.estimates`: :class:`PoolEstimates` (means, 90% intervals,
  P(A > B));
* :mod:`~probrank.pooling.checks`: :class:`ExploredCheck`, the ``bayesian`` strategy's
  held-out check of its relevance model on the documents it explored uniformly;
* :mod:`~probrank.pooling.predictions`: those documents' predictions kept between calls of
  ``probrank pool next`` (``--predictions``) and the check from them (``pool check``);
* :mod:`~probrank.pooling.simulate`: simulation against full qrels, ``probrank pool``'s work.
"""

from probrank.pooling.checks import ExploredCheck
from probrank.pooling.estimates import PoolEstimates, point_estimates
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.simulate import next_documents, simulate, write_simulation
from probrank.pooling.strategies import STRATEGIES, Strategy, StrategyName, make_strategy
from probrank.pooling.strategies.bayesian import bayesian_estimates

__all__ = [
    "STRATEGIES",
    "ExploredCheck",
    "Judgements",
    "Pool",
    "PoolEstimates",
    "Strategy",
    "StrategyName",
    "bayesian_estimates",
    "make_strategy",
    "next_documents",
    "point_estimates",
    "simulate",
    "write_simulation",
]
