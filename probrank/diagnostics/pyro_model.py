"""A fitted Pyro model (SVI guide or NUTS draws) to ArviZ, with predictions and log-likelihoods.

:func:`from_pyro` draws the latent sites (from a fitted guide, or takes NUTS draws), then
replays the model once per draw, conditioned on it, and reads every observed site's
distribution in that trace: its value is the observation, a sample from it is a posterior
predictive draw, and its pointwise ``log_prob`` of the observation is the log-likelihood that
PSIS-LOO needs. Deterministic sites (``pyro.deterministic``) join the posterior group.

The replay conditions the model on the latent values, so layers that use a variance-reduced
estimator only under their own guide (flipout, local reparameterisation in
:class:`~probrank.nn.bayesian_linear.BayesianLinear`) fall back to the plain, exact forward
pass. Log-likelihoods are unscaled (``poutine.scale`` is ignored) and masked entries
(``.mask(False)``) contribute 0: pass unpadded data for LOO.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyro
import torch
from pyro import poutine
from torch import Tensor

from probrank._progress import progress_bar
from probrank.diagnostics.arviz import from_draws, guide_draws
from probrank.exceptions import InputDataError
from probrank.inference.mcmc import NutsSamples
from probrank.inference.predictive import draws_layout

__all__ = ["from_pyro", "guide_draws", "replay"]


def _is_plate(site: Mapping[str, Any]) -> bool:
    """Whether a trace site is a ``pyro.plate``'s index (a ``sample`` site of Pyro's internal
    ``_Subsample`` distribution: the plate's int64 indices, not a variable of the model)."""
    return type(site["fn"]).__name__ == "_Subsample"


def replay(
    model: Callable[..., Any],
    draws: Mapping[str, Tensor],
    *args: Any,
    observed: Sequence[str] | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]:
    """Replay ``model`` conditioned on each of `S` latent draws (call inside a seeded scope).

    Args:
        model: The Pyro model.
        draws: ``{site: S x *shape}`` latent draws.
        *args: Model arguments (with the observations).
        observed: Observed (or predicted) sites to keep (default: every one).
        progress: Show a progress bar over draws.
        **kwargs: Model keyword arguments.

    Returns:
        ``(predictive, log_likelihood, observations, deterministic)``: `S x *shape` draws of
        each observed site and of each predicted site (a likelihood site called with
        ``obs=None``, e.g. on new inputs: its draw given the latent draw), the observed
        sites' pointwise log-likelihoods (`S x *batch`) and values (`*shape`), and
        `S x *shape` values of deterministic sites.
    """
    sizes = {v.shape[0] for v in draws.values()}
    if len(sizes) != 1:
        raise InputDataError(f"latent draws disagree on the number of draws: {sorted(sizes)}")
    total = sizes.pop()
    predictive: dict[str, list[Tensor]] = {}
    loglik: dict[str, list[Tensor]] = {}
    deterministic: dict[str, list[Tensor]] = {}
    values: dict[str, Tensor] = {}
    for s in progress_bar(range(total), desc="replaying draws", disable=not progress, leave=False):
        point = {name: value[s] for name, value in draws.items()}
        trace = poutine.trace(poutine.condition(model, data=point)).get_trace(*args, **kwargs)
        for name, site in trace.nodes.items():
            if site["type"] != "sample" or name in point or _is_plate(site):
                continue
            value: Tensor = site["value"].detach()  # type: ignore[union-attr]
            if (site["infer"] or {}).get("_deterministic"):
                deterministic.setdefault(name, []).append(value)
                continue
            if observed is not None and name not in observed:
                continue
            if not site["is_observed"]:  # no observation (obs=None): a predicted site
                predictive.setdefault(name, []).append(value)
                continue
            fn: Any = site["fn"]
            values.setdefault(name, value)
            predictive.setdefault(name, []).append(fn.sample().detach())
            loglik.setdefault(name, []).append(fn.log_prob(value).detach())
    missing = [n for n in (observed or []) if n not in predictive]
    if missing:
        raise InputDataError(f"the model has no observed or predicted site(s) {missing}")

    def stack(group: dict[str, list[Tensor]]) -> dict[str, Tensor]:
        return {k: torch.stack(v) for k, v in group.items()}

    return stack(predictive), stack(loglik), values, stack(deterministic)


def from_pyro(
    model: Callable[..., Any],
    *args: Any,
    guide: Callable[..., Any] | None = None,
    posterior_samples: Mapping[str, Tensor] | None = None,
    num_samples: int = 500,
    seed: int = 0,
    param_state: dict[str, Any] | None = None,
    observed: Sequence[str] | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> Any:
    """ArviZ data of a fitted Pyro model: posterior, posterior predictive, log-likelihood,
    observed data (and ``sample_stats`` for NUTS draws).

    Give either a fitted ``guide`` (SVI: ``num_samples`` draws, one chain) or
    ``posterior_samples`` (`chains x draws x *shape`, e.g. from
    :func:`~probrank.inference.mcmc.fit_nuts`, whose divergences are kept; or `S x *shape`,
    read as one chain).

    Predictions: call it with new inputs and no observations (``from_pyro(model, X_new,
    None, posterior_samples=s)``). A likelihood site whose ``obs`` is None is then *predicted*:
    its draws (one per posterior draw) appear in the ``posterior_predictive`` group, with no
    log-likelihood and no observed data for it.

    Args:
        model: The Pyro model, called as ``model(*args, **kwargs)`` with the observations.
        *args: Model arguments.
        guide: A fitted guide.
        posterior_samples: Latent draws, ``chains x draws x *shape`` or ``S x *shape``.
        num_samples: Guide draws.
        seed: Seeds the guide draws and the predictive draws.
        param_state: A :attr:`~probrank.inference.FitResult.param_state` to load
            (scoped; the caller's param store is restored), for guides that keep their
            parameters in the param store (autoguides).
        observed: Observed sites to keep (default: all).
        dims: Dims of each variable after ``chain``/``draw`` (e.g. ``{"k_rel": ["query"]}``).
        coords: Their coordinates.
        progress: Show a progress bar over draws.
        **kwargs: Model keyword arguments.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).

    Raises:
        InputDataError: neither or both of ``guide`` and ``posterior_samples``; a posterior
            sample site the model does not have or whose draws have the wrong leading shape
            (named); an ``observed`` site the model neither observes nor predicts.
    """
    if (guide is None) == (posterior_samples is None):
        raise InputDataError("give exactly one of guide and posterior_samples")
    store = pyro.get_param_store()
    state: Any = dict(param_state if param_state is not None else store.get_state())
    with store.scope(state=state), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        if posterior_samples is not None:
            known = True if isinstance(posterior_samples, NutsSamples) else None
            layout = draws_layout(model, posterior_samples, *args, chains=known, **kwargs)
            chains, per_chain, latent = layout.chains, layout.draws, layout.flat
        else:
            chains, per_chain = 1, num_samples
            latent = guide_draws(guide, *args, num_samples=num_samples, **kwargs)  # type: ignore[arg-type]
        predictive, loglik, values, deterministic = replay(
            model, latent, *args, observed=observed, progress=progress, **kwargs
        )

    def chained(group: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return {k: v.reshape(chains, per_chain, *v.shape[1:]) for k, v in group.items()}

    stats = posterior_samples.sample_stats if isinstance(posterior_samples, NutsSamples) else None
    return from_draws(
        chained({**latent, **deterministic}),
        chains=True,
        dims=dims,
        coords=coords,
        sample_stats=stats,
        posterior_predictive=chained(predictive),
        log_likelihood=chained(loglik),
        observed_data=values,
    )
