"""The sampler behind :func:`probrank.evaluation.bayesian_compare`: NUTS chains on the
comparison model's potential, one after another, and the convergence check of what is reported.

Chains run sequentially (no worker processes, which 2-core machines and notebooks do not like),
each seeded with ``seed + chain``, on the potential in coordinates divided by rough posterior
standard deviations (:class:`~probrank.evaluation.bayesian_potential.ScaledPotential`): with
that start of the mass matrix a short warm-up suffices, also when the runs agree on every topic
and the noise is far smaller than the spread of the topics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from pyro.infer import MCMC, NUTS

from probrank._progress import progress_bar
from probrank.evaluation.bayesian_convergence import ESS_MIN, RHAT_MAX, Convergence, check_draws
from probrank.evaluation.bayesian_model import ComparisonPriors, effect_basis
from probrank.evaluation.bayesian_potential import ComparisonPotential, ScaledPotential

__all__ = ["ESS_MIN", "RHAT_MAX", "Convergence", "check_draws", "sample_posterior"]


def _start(
    scores: np.ndarray, priors: ComparisonPriors
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A data-based start and rough posterior standard deviations (unconstrained coordinates)
    of every site: topic locations at the topic means, effects at the centred system means,
    scales at their sample values."""
    num_measures, num_systems, num_topics = scores.shape
    basis = effect_basis(num_systems).numpy()
    system_means = scores.mean(-1)  # M x S
    topic = scores.mean(1)  # M x T
    effects = system_means - system_means.mean(-1, keepdims=True)
    residual = scores - topic[:, None, :] - effects[:, :, None]
    # where the runs agree on every topic the residuals vanish and the posterior of the noise
    # sits near the prior's floor: about rate / (concentration + 1 + (S - 1) T)
    floor = priors.noise_rate / (priors.noise_concentration + 1 + (num_systems - 1) * num_topics)
    noise = np.maximum(residual.std(axis=(1, 2)), floor)
    topic_scale = np.maximum(topic.std(-1), 0.05)
    values = {
        "z": effects @ basis,
        "topic": topic,
        "level": topic.mean(-1),
        "topic_scale": topic_scale,
        "noise": noise,
    }
    shape = (num_measures, 1)
    spread = {
        "z": np.broadcast_to(
            (noise * math.sqrt(2 / num_topics)).reshape(shape), (num_measures, num_systems - 1)
        ),
        "topic": np.broadcast_to(
            (noise / math.sqrt(num_systems)).reshape(shape), (num_measures, num_topics)
        ),
        "level": topic_scale / math.sqrt(num_topics),
        "topic_scale": np.full(num_measures, 1 / math.sqrt(2 * num_topics)),
        "noise": np.full(num_measures, 1 / math.sqrt(2 * (num_systems - 1) * num_topics)),
    }
    return values, spread


def sample_posterior(
    potential: ComparisonPotential,
    *,
    num_chains: int,
    warmup_steps: int,
    num_samples: int,
    seed: int,
    progress: bool,
) -> tuple[dict[str, np.ndarray], int]:
    """Run the chains one after another (NUTS on ``potential``, in coordinates scaled by rough
    posterior standard deviations); stack their draws.

    Each chain starts from the data-based start moved by one rough standard deviation in
    random directions (its own generator, ``seed + chain``).

    Args:
        potential: The comparison model's potential (its scores and priors give the start).
        num_chains: Chains.
        warmup_steps: Adaptation steps per chain (discarded).
        num_samples: Draws kept per chain.
        seed: Chain ``c`` is seeded with ``seed + c`` (torch's generator, forked).
        progress: Show one progress bar over all chains.

    Returns:
        ``({site: chains x draws x *shape}, divergent transitions after warm-up)``.
    """
    values, spread = _start(potential.scores, potential.priors)
    centre = potential.pack(values)
    scale = np.empty(potential.size)
    for name, part in potential.slices.items():
        scale[part] = np.ravel(spread[name])
    scaled = ScaledPotential(potential, scale)
    chains: list[np.ndarray] = []
    divergences = 0
    bar = progress_bar(
        total=num_chains * (warmup_steps + num_samples),
        desc="NUTS",
        unit="it",
        disable=not progress,
        leave=False,
    )
    with bar:
        for chain in range(num_chains):
            bar.set_description(f"NUTS chain {chain + 1}/{num_chains}")
            jitter = np.random.default_rng(seed + chain).normal(size=potential.size)
            found: list[int] = []

            def hook(kernel: Any, _: Any, stage: str, i: int, found: list[int] = found) -> None:
                bar.update()
                if stage == "Sample" and i == num_samples - 1:  # before the kernel's cleanup
                    found.extend(j for j in kernel.diagnostics()["divergences"] if j >= 0)

            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed + chain)
                mcmc = MCMC(
                    NUTS(potential_fn=scaled, max_tree_depth=8),
                    num_samples=num_samples,
                    warmup_steps=warmup_steps,
                    initial_params={"theta": torch.from_numpy(centre / scale + jitter)},
                    disable_progbar=True,
                    hook_fn=hook,
                )
                mcmc.run()
            chains.append(mcmc.get_samples()["theta"].detach().numpy() * scale)
            divergences += len(found)
    return potential.unpack(np.stack(chains)), divergences
