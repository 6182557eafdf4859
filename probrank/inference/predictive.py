"""Posterior predictive draws with equal-tailed credible intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyro
import torch
from pyro.infer import Predictive
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["PredictiveSummary", "credible_interval", "posterior_predictive"]


@dataclass(frozen=True)
class PredictiveSummary:
    """Draws of one site and their summary.

    Attributes:
        draws: `S x *shape` posterior predictive draws.
        mean: `*shape` mean over draws.
        lower: `*shape` lower end of the equal-tailed credible interval.
        upper: `*shape` upper end.
        level: The interval's probability mass (e.g. 0.9).
    """

    draws: Tensor
    mean: Tensor
    lower: Tensor
    upper: Tensor
    level: float


def credible_interval(draws: Tensor, level: float = 0.9) -> PredictiveSummary:
    """Summarise `S x *shape` draws by their mean and equal-tailed ``level`` interval."""
    if not 0 < level < 1:
        raise InputDataError(f"level must be in (0, 1), got {level}")
    if draws.shape[0] < 1:
        raise InputDataError("need at least one draw")
    tail = (1 - level) / 2
    q = torch.tensor([tail, 1 - tail], dtype=draws.dtype)
    lower, upper = torch.quantile(draws, q, dim=0)
    return PredictiveSummary(draws, draws.mean(0), lower, upper, level)


def posterior_predictive(
    model: Callable[..., Any],
    guide: Callable[..., Any] | None,
    *args: Any,
    sites: Sequence[str],
    num_samples: int = 100,
    level: float = 0.9,
    seed: int = 0,
    param_state: dict[str, Any] | None = None,
    posterior_samples: dict[str, Tensor] | None = None,
    **kwargs: Any,
) -> dict[str, PredictiveSummary]:
    """Posterior predictive draws of ``sites`` from a guide or from posterior samples.

    Args:
        model: The Pyro model, called as ``model(*args, **kwargs)`` (pass no observations).
        guide: The fitted guide, or None with ``posterior_samples`` (e.g. MCMC draws).
        *args: Model arguments.
        sites: Site names to return (e.g. ``["p_hat"]``).
        num_samples: Draws from the guide (ignored with ``posterior_samples``).
        level: Credible interval mass.
        seed: Seeds the draws.
        param_state: A :attr:`~probrank.inference.svi.FitResult.param_state` to load
            (scoped; the caller's param store is restored).
        posterior_samples: ``{site: S x ...}`` latent draws to condition on instead.
        **kwargs: Model keyword arguments.

    Returns:
        ``{site: PredictiveSummary}``.
    """
    store = pyro.get_param_store()
    state = param_state if param_state is not None else store.get_state()
    scoped: Any = dict(state)
    with store.scope(state=scoped), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        predictive = Predictive(
            model,
            guide=guide,
            posterior_samples=posterior_samples,
            num_samples=None if posterior_samples is not None else num_samples,
            return_sites=list(sites),
        )
        draws = predictive(*args, **kwargs)
    missing = [s for s in sites if s not in draws]
    if missing:
        raise InputDataError(f"the model has no site(s) {missing}")
    return {s: credible_interval(draws[s].detach(), level) for s in sites}
