"""NUTS through :class:`pyro.infer.MCMC`, chains run one after another with their own seeds.

Chains are run sequentially (no worker processes, which the 2-core machines and notebooks do
not like) and stacked, so the result has a chain dimension for R-hat and ESS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyro
import torch
from pyro.infer import MCMC, NUTS
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["fit_nuts"]


def fit_nuts(
    model: Callable[..., Any],
    *args: Any,
    num_samples: int = 500,
    warmup_steps: int = 500,
    num_chains: int = 2,
    seed: int = 0,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 8,
    progress: bool = False,
    **kwargs: Any,
) -> dict[str, Tensor]:
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
        progress: Show Pyro's progress bar.
        **kwargs: Its keyword arguments.

    Returns:
        ``{site: chains x draws x *site_shape}`` samples.
    """
    if num_samples < 1 or warmup_steps < 0 or num_chains < 1:
        raise InputDataError(
            f"need num_samples >= 1, warmup_steps >= 0, num_chains >= 1; got {num_samples}, "
            f"{warmup_steps}, {num_chains}"
        )
    chains: list[dict[str, Tensor]] = []
    store = pyro.get_param_store()
    for chain in range(num_chains):
        with store.scope(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + chain)
            kernel = NUTS(
                model,
                target_accept_prob=target_accept_prob,
                max_tree_depth=max_tree_depth,
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
    return {k: torch.stack([c[k] for c in chains]) for k in chains[0]}
