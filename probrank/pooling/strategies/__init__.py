"""Pooling strategies: which documents to judge next.

:data:`~probrank.pooling.STRATEGIES` maps each :class:`StrategyName` to its strategy class;
:func:`make_strategy` builds one by name. Each strategy's module documents its variant.
"""

from __future__ import annotations

from collections.abc import Mapping

from probrank._options import parse_enum
from probrank.pooling.strategies.active import ActiveSampling
from probrank.pooling.strategies.bandit import MaxMeanBandit
from probrank.pooling.strategies.base import Selector, Strategy, StrategyName
from probrank.pooling.strategies.bayesian import Bayesian
from probrank.pooling.strategies.depth import DepthK
from probrank.pooling.strategies.mtf import MoveToFront

__all__ = [
    "STRATEGIES",
    "ActiveSampling",
    "Bayesian",
    "DepthK",
    "MaxMeanBandit",
    "MoveToFront",
    "Selector",
    "Strategy",
    "StrategyName",
    "make_strategy",
]

STRATEGIES: Mapping[StrategyName, type[Strategy]] = {
    StrategyName.DEPTH_K: DepthK,
    StrategyName.MTF: MoveToFront,
    StrategyName.MM_NS: MaxMeanBandit,
    StrategyName.ACTIVE_SAMPLING: ActiveSampling,
    StrategyName.BAYESIAN: Bayesian,
}
"""The strategies by name (their default settings)."""


def make_strategy(name: StrategyName | str) -> Strategy:
    """The strategy ``name`` with its default settings.

    Raises:
        InputDataError: an unknown name (the message lists the names).
    """
    return STRATEGIES[parse_enum(StrategyName, name, "strategy")]()
