"""Posterior predictive draws with equal-tailed credible intervals.

Draws are accepted in either of Pyro's layouts: ``{site: S x *shape}`` (a guide's or
:class:`pyro.infer.Predictive`'s samples) or ``{site: chains x draws x *shape}`` (what
:func:`~probrank.inference.mcmc.fit_nuts` and ``MCMC.get_samples(group_by_chain=True)``
return). :func:`draws_layout` tells the two apart by tracing the model once, so a site's own
shape is known, and **flattens** chains into ``S = chains * draws`` (chain-major: chain 0's
draws first); the returned :class:`DrawsLayout` keeps ``chains`` and ``draws`` so callers can
restore the chain dimension (``draws.reshape(chains, draws, ...)``).

Integer-valued sites (Pyro's ``Binomial``, ``Categorical``, ``OrderedLogistic``,
probrank's :func:`~probrank.likelihoods.ordinal`) keep their draws' dtype; only the summary
(mean and interval) is computed in floating point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyro
import torch
from pyro import poutine
from pyro.infer import Predictive
from pyro.poutine.util import site_is_subsample
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = [
    "DrawsLayout",
    "PredictiveSummary",
    "credible_interval",
    "draws_layout",
    "posterior_predictive",
]


@dataclass(frozen=True)
class PredictiveSummary:
    """Draws of one site and their summary.

    Attributes:
        draws: `S x *shape` posterior predictive draws (the site's own dtype; for NUTS draws
            `S = chains * draws`, chain-major).
        mean: `*shape` mean over draws (floating point, also for integer-valued sites).
        lower: `*shape` lower end of the equal-tailed credible interval.
        upper: `*shape` upper end.
        level: The interval's probability mass (e.g. 0.9).
    """

    draws: Tensor
    mean: Tensor
    lower: Tensor
    upper: Tensor
    level: float


def _floating(draws: Tensor) -> Tensor:
    """``draws`` in floating point (integer and bool draws in the default dtype)."""
    return draws if draws.is_floating_point() else draws.to(torch.get_default_dtype())


def credible_interval(draws: Tensor, level: float = 0.9) -> PredictiveSummary:
    """Summarise `S x *shape` draws by their mean and equal-tailed ``level`` interval.

    Args:
        draws: `S x *shape` draws of any real or integer dtype (integer draws are cast to
            ``torch.get_default_dtype()`` for the summary only).
        level: Interval mass in ``(0, 1)``.

    Returns:
        A :class:`PredictiveSummary` holding ``draws`` unchanged.
    """
    if not 0 < level < 1:
        raise InputDataError(f"level must be in (0, 1), got {level}")
    if draws.dim() < 1 or draws.shape[0] < 1:
        raise InputDataError("need at least one draw")
    values = _floating(draws)
    tail = (1 - level) / 2
    q = torch.tensor([tail, 1 - tail], dtype=values.dtype)
    lower, upper = torch.quantile(values, q, dim=0)
    return PredictiveSummary(draws, values.mean(0), lower, upper, level)


@dataclass(frozen=True)
class DrawsLayout:
    """Latent draws flattened to `S x *shape`, with the chain layout they came in.

    Attributes:
        flat: ``{site: S x *shape}`` with ``S = chains * draws`` (chain-major).
        chains: Chains (1 for `S x ...` input).
        draws: Draws per chain.
    """

    flat: dict[str, Tensor]
    chains: int
    draws: int


def _site_shapes(model: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, torch.Size]:
    """Shapes of the latent (and deterministic) sites of one prior draw of ``model(...)``."""
    store = pyro.get_param_store()
    state: Any = dict(store.get_state())
    with store.scope(state=state), torch.random.fork_rng(devices=[]), torch.no_grad():
        # a prior draw may reach parameters a distribution refuses (a heavy-tailed prior
        # saturating a sigmoid): only the shapes matter here, so skip argument validation
        with pyro.validation_enabled(False):
            try:
                trace = poutine.trace(model).get_trace(*args, **kwargs)
            except Exception as error:
                raise InputDataError(
                    f"cannot trace the model to check the draws' shapes: {error}".splitlines()[0]
                ) from error
    return {  # latent sites, and deterministic ones (which draws may carry along)
        name: torch.as_tensor(site["value"]).shape
        for name, site in trace.nodes.items()
        if site["type"] == "sample"
        and not site_is_subsample(site)
        and (not site["is_observed"] or (site["infer"] or {}).get("_deterministic"))
    }


def draws_layout(
    model: Callable[..., Any] | None,
    samples: Mapping[str, Tensor],
    *args: Any,
    chains: bool | None = None,
    **kwargs: Any,
) -> DrawsLayout:
    """Check latent draws against ``model`` and flatten a chain dimension if there is one.

    Args:
        model: The Pyro model, traced once under its prior with ``*args, **kwargs`` to learn
            each site's shape (None: trust ``chains``).
        samples: ``{site: S x *shape}`` or ``{site: chains x draws x *shape}``.
        *args: Model arguments.
        chains: Force the layout (True: chains x draws; False: `S`); default: inferred from
            the model's site shapes.
        **kwargs: Model keyword arguments.

    Returns:
        A :class:`DrawsLayout`.

    Raises:
        InputDataError: no draws, a site the model does not have, a site whose trailing
            shape is not the model's, or sites whose leading (draw) dims disagree.
    """
    if not samples:
        raise InputDataError("no posterior draws")
    shapes = _site_shapes(model, *args, **kwargs) if model is not None else {}
    leads: dict[str, tuple[int, ...]] = {}
    for name, raw in samples.items():
        value = torch.as_tensor(raw)
        own = shapes.get(name)
        if model is not None and own is None:
            raise InputDataError(
                f"posterior sample site {name!r} is not a latent site of the model; its latent "
                f"sites are {sorted(shapes)}"
            )
        width = (2 if chains else 1) if chains is not None else None
        if width is None and own is not None:
            width = value.dim() - len(own)
        layout = "`chains x draws x ...`" if chains else "`S x ...` or `chains x draws x ...`"
        wrong = width is None or width not in (1, 2) or value.dim() < width
        if not wrong and own is not None:
            wrong = tuple(value.shape[width:]) != tuple(own)  # type: ignore[misc]
        if wrong:
            expected = f"; the model's site is {tuple(own)}" if own is not None else ""
            raise InputDataError(
                f"posterior sample site {name!r} has shape {tuple(value.shape)}{expected}, so "
                f"its draws must be {layout}"
            )
        leads[name] = tuple(value.shape[:width])
    if len(set(leads.values())) != 1:
        raise InputDataError(f"posterior sample sites disagree on their leading dims: {leads}")
    lead = next(iter(leads.values()))
    n_chains, per_chain = (1, lead[0]) if len(lead) == 1 else (lead[0], lead[1])
    if n_chains < 1 or per_chain < 1:
        raise InputDataError("need at least one draw")
    flat = {
        name: torch.as_tensor(v).detach().reshape(n_chains * per_chain, *v.shape[len(lead) :])
        for name, v in samples.items()
    }
    return DrawsLayout(flat, n_chains, per_chain)


def _conditioned_draws(
    model: Callable[..., Any],
    flat: Mapping[str, Tensor],
    sites: list[str],
    *args: Any,
    **kwargs: Any,
) -> dict[str, Tensor]:
    """`S x *shape` values of ``sites``: the model run once per latent draw, conditioned on it
    (as :class:`pyro.infer.Predictive` with ``parallel=False``, without its prior trace)."""
    total = next(iter(flat.values())).shape[0]
    out: dict[str, list[Tensor]] = {}
    for s in range(total):
        point = {name: value[s] for name, value in flat.items()}
        trace = poutine.trace(poutine.condition(model, data=point)).get_trace(*args, **kwargs)
        for name in sites:
            if name in trace.nodes:
                out.setdefault(name, []).append(torch.as_tensor(trace.nodes[name]["value"]))
    return {name: torch.stack(values) for name, values in out.items()}


def posterior_predictive(
    model: Callable[..., Any],
    guide: Callable[..., Any] | None,
    *args: Any,
    sites: Sequence[str],
    num_samples: int = 100,
    level: float = 0.9,
    seed: int = 0,
    param_state: dict[str, Any] | None = None,
    posterior_samples: Mapping[str, Tensor] | None = None,
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
        param_state: A :attr:`~probrank.inference.FitResult.param_state` to load
            (scoped; the caller's param store is restored).
        posterior_samples: Latent draws to condition on instead, ``{site: S x ...}`` or
            ``{site: chains x draws x ...}`` (e.g. :func:`~probrank.inference.fit_nuts`'s
            result); chains are flattened (see :func:`draws_layout`).
        **kwargs: Model keyword arguments.

    Returns:
        ``{site: PredictiveSummary}`` with `S x *shape` draws (`S = chains * draws` for
        chained input, chain-major).

    Raises:
        InputDataError: a requested site the model does not have, or posterior samples whose
            sites or shapes do not fit the model (the message names the site).
    """
    store = pyro.get_param_store()
    state = param_state if param_state is not None else store.get_state()
    scoped: Any = dict(state)
    with store.scope(state=scoped), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        if posterior_samples is not None:
            flat = draws_layout(model, posterior_samples, *args, **kwargs).flat
            draws = _conditioned_draws(model, flat, list(sites), *args, **kwargs)
        else:
            predictive = Predictive(
                model, guide=guide, num_samples=num_samples, return_sites=list(sites)
            )
            draws = predictive(*args, **kwargs)
    missing = [s for s in sites if s not in draws]
    if missing:
        raise InputDataError(f"the model has no site(s) {missing}")
    return {s: credible_interval(draws[s].detach(), level) for s in sites}
