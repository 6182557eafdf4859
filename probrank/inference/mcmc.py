"""NUTS through :class:`pyro.infer.MCMC`, chains run one after another with their own seeds.

Chains are run sequentially (no worker processes, which the 2-core machines and notebooks do
not like) and stacked, so the result has a chain dimension for R-hat and ESS. The result is a
:class:`NutsSamples`: a plain ``{site: chains x draws x *shape}`` dict that also carries the
sampler's per-draw divergences and per-chain acceptance rates, which
:func:`probrank.diagnostics.to_inference_data` turns into ArviZ's ``sample_stats`` group.

Defaults (2 chains of 1,000 draws after 500 warm-up steps, target acceptance 0.8) mix on the
models probrank ships because the mass matrix is **dense** whenever the model has at most
:data:`DENSE_MASS_MAX_DIM` (64) scalar latent values, and diagonal above (``full_mass``
overrides). ``benchmarks/nuts_defaults.py`` prints R-hat, bulk/tail ESS and divergences of
every shipped output layer under these defaults. With 500 draws, two of them (QLFusion's
output layer on 32 hidden units, the ordinal layer) reached R-hat 1.011-1.012 at one seed:
the rank-normalised split R-hat of two short chains is itself noisy, so the default keeps
1,000 draws per chain.

The draws go straight into :func:`probrank.inference.posterior_predictive`,
:func:`probrank.diagnostics.from_pyro` and :func:`probrank.diagnostics.to_inference_data`,
which all accept ``chains x draws x ...`` (and ``S x ...``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyro
import torch
from pyro import poutine
from pyro.infer import MCMC, NUTS
from pyro.poutine.util import site_is_subsample
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["DENSE_MASS_MAX_DIM", "NutsSamples", "divergence_mask", "fit_nuts", "latent_dimension"]

DENSE_MASS_MAX_DIM = 64
"""Largest latent dimension for which :func:`fit_nuts` adapts a dense mass matrix by default.

A dense mass matrix costs ``O(d^2)`` memory and ``O(d^3)`` per adaptation window, negligible for
the output layers probrank ships (QLFusion's 32 weights and a bias, graded or pairwise heads),
and it is what makes NUTS mix when their weights are correlated (collinear hidden units): with
a diagonal one, a 4-weight layer gave R-hat 1.19 and ESS 9. Above this size the default is
diagonal (pass ``full_mass=True`` to force dense).
"""


class NutsSamples(dict[str, Tensor]):
    """``{site: chains x draws x *site_shape}`` draws plus the sampler's diagnostics.

    A ``dict`` subclass, so code that expects the plain samples keeps working. Like
    :class:`pyro.infer.MCMC`, :meth:`get_samples` gives the flat draws (chain-major) for
    ``pyro.infer.Predictive`` and ``group_by_chain=True`` the chains.

    Args:
        samples: The draws by site.
        diverging: `chains x draws` bool, True where the transition diverged.
        acceptance_rate: `chains` mean acceptance rate of each chain after warm-up.
    """

    def __init__(
        self, samples: dict[str, Tensor], diverging: Tensor, acceptance_rate: Tensor
    ) -> None:
        super().__init__(samples)
        self.diverging = diverging
        self.acceptance_rate = acceptance_rate

    @property
    def num_divergences(self) -> int:
        """Divergent transitions over all chains (after warm-up)."""
        return int(self.diverging.sum())

    def get_samples(self, group_by_chain: bool = False) -> dict[str, Tensor]:
        """The draws as :meth:`pyro.infer.MCMC.get_samples` returns them.

        Args:
            group_by_chain: Keep the chain dimension (`chains x draws x *site_shape`).

        Returns:
            ``{site: (chains * draws) x *site_shape}`` (chain-major) by default, the layout
            ``pyro.infer.Predictive(model, posterior_samples=...)`` takes; the dict itself holds
            `chains x draws x *site_shape`.
        """
        if group_by_chain:
            return {site: value for site, value in self.items()}
        return {site: value.reshape(-1, *value.shape[2:]) for site, value in self.items()}

    @property
    def sample_stats(self) -> dict[str, Tensor]:
        """ArviZ ``sample_stats`` variables: ``{"diverging": chains x draws}``."""
        return {"diverging": self.diverging}


def divergence_mask(mcmc: MCMC, num_samples: int) -> tuple[Tensor, Tensor]:
    """Per-draw divergences and per-chain acceptance rates of a finished Pyro MCMC run.

    Pyro records, per chain, the indices of divergent transitions counted from the end of
    warm-up (negative during warm-up; those are dropped).

    Args:
        mcmc: A :class:`pyro.infer.MCMC` after ``run``.
        num_samples: Draws per chain.

    Returns:
        ``(diverging, acceptance_rate)``: `chains x draws` bool and `chains` float (NaN where
        the kernel reports none).
    """
    stats = mcmc.diagnostics()
    chains = int(mcmc.num_chains)
    diverging = torch.zeros(chains, num_samples, dtype=torch.bool)
    rates = torch.full((chains,), float("nan"), dtype=torch.float64)
    for chain in range(chains):
        key = f"chain {chain}"
        for index in stats.get("divergences", {}).get(key, []):
            if 0 <= int(index) < num_samples:
                diverging[chain, int(index)] = True
        rate = stats.get("acceptance rate", {}).get(key)
        if rate is not None:
            rates[chain] = float(rate)
    return diverging, rates


def latent_dimension(model: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Number of scalar latent values of ``model(*args, **kwargs)`` (one prior trace).

    Runs in a scoped param store and a forked RNG: no global state changes.

    Args:
        model: A Pyro model.
        *args: Its positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        The summed size of every unobserved ``pyro.sample`` site.
    """
    store = pyro.get_param_store()
    state: Any = dict(store.get_state())
    with store.scope(state=state), torch.random.fork_rng(devices=[]), torch.no_grad():
        trace = poutine.trace(model).get_trace(*args, **kwargs)
    return sum(
        int(torch.as_tensor(site["value"]).numel())
        for site in trace.nodes.values()
        if site["type"] == "sample" and not site["is_observed"] and not site_is_subsample(site)
    )


def fit_nuts(
    model: Callable[..., Any],
    *args: Any,
    num_samples: int = 1000,
    warmup_steps: int = 500,
    num_chains: int = 2,
    seed: int = 0,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 8,
    full_mass: bool | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> NutsSamples:
    """Sample the latent sites of ``model(*args, **kwargs)`` with NUTS.

    Parameters the model reads with ``pyro.param`` (or a PyroModule's ``nn.Parameter``) are
    held at their current values; only ``pyro.sample`` sites without ``obs`` are sampled.
    Runs inside a fresh param-store scope and a forked RNG: no global state changes.

    Args:
        model: A Pyro model.
        *args: Its positional arguments.
        num_samples: Draws kept per chain.
        warmup_steps: Adaptation steps per chain (discarded).
        num_chains: Chains, each seeded with ``seed + chain``.
        seed: Base seed.
        target_accept_prob: NUTS step-size adaptation target.
        max_tree_depth: NUTS tree depth limit.
        full_mass: Adapt a dense mass matrix during warm-up (True) or a diagonal one
            (False). Default (None): dense when the model has at most
            :data:`DENSE_MASS_MAX_DIM` scalar latent values (every output layer probrank
            ships), diagonal above; correlated weights (collinear hidden units) need the
            dense one to mix.
        progress: Show Pyro's progress bar.
        **kwargs: Its keyword arguments.

    Returns:
        ``{site: chains x draws x *site_shape}`` samples (a :class:`NutsSamples`, which also
        holds the `chains x draws` divergences and the acceptance rates).
    """
    if num_samples < 1 or warmup_steps < 0 or num_chains < 1:
        raise InputDataError(
            f"need num_samples >= 1, warmup_steps >= 0, num_chains >= 1; got {num_samples}, "
            f"{warmup_steps}, {num_chains}"
        )
    if full_mass is None:
        full_mass = latent_dimension(model, *args, **kwargs) <= DENSE_MASS_MAX_DIM
    chains: list[dict[str, Tensor]] = []
    diverging: list[Tensor] = []
    rates: list[Tensor] = []
    store = pyro.get_param_store()
    for chain in range(num_chains):
        with store.scope(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + chain)
            kernel = NUTS(
                model,
                target_accept_prob=target_accept_prob,
                max_tree_depth=max_tree_depth,
                full_mass=full_mass,
                jit_compile=False,
            )
            mcmc = MCMC(
                kernel,
                num_samples=num_samples,
                warmup_steps=warmup_steps,
                num_chains=1,
                disable_progbar=not progress,
            )
            mcmc.run(*args, **kwargs)
            chains.append({k: v.detach() for k, v in mcmc.get_samples().items()})
            mask, rate = divergence_mask(mcmc, num_samples)
            diverging.append(mask[0])
            rates.append(rate[0])
    samples = {k: torch.stack([c[k] for c in chains]) for k in chains[0]}
    return NutsSamples(samples, torch.stack(diverging), torch.stack(rates))
