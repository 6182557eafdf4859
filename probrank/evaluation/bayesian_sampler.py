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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from pyro.infer import MCMC, NUTS

from probrank._progress import progress_bar
from probrank.evaluation.bayesian_model import ComparisonPriors, effect_basis
from probrank.evaluation.bayesian_potential import ComparisonPotential, ScaledPotential

__all__ = ["ESS_MIN", "RHAT_MAX", "Convergence", "check_draws", "sample_posterior"]

RHAT_MAX = 1.01
"""Largest rank-normalised split R-hat (``check_convergence``'s default)."""
ESS_MIN = 400.0
"""Smallest bulk and tail ESS (``check_convergence``'s default)."""


@dataclass(frozen=True)
class Convergence:
    """R-hat, ESS and divergences of a fit (thresholds as ``check_convergence``'s defaults).

    Attributes:
        converged: Every criterion met.
        max_rhat: Largest R-hat over all checked quantities.
        min_ess: Smallest bulk or tail ESS.
        divergences: Divergent transitions after warm-up, all chains.
        messages: One line per failed criterion.
    """

    converged: bool
    max_rhat: float
    min_ess: float
    divergences: int
    messages: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Strict JSON: ``{"converged", "max_rhat", "min_ess", "divergences", "messages"}``,
        undefined statistics (one chain, draws that never moved) as ``None``, never NaN."""
        return {
            "converged": self.converged,
            "max_rhat": self.max_rhat if math.isfinite(self.max_rhat) else None,
            "min_ess": self.min_ess if math.isfinite(self.min_ess) else None,
            "divergences": self.divergences,
            "messages": list(self.messages),
        }


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


def check_draws(arrays: Mapping[str, np.ndarray], divergences: int) -> Convergence:
    """R-hat, bulk and tail ESS of every component of every array, and the divergences.

    Args:
        arrays: ``{name: chains x draws x ...}``.
        divergences: Divergent transitions after warm-up.

    Returns:
        A :class:`Convergence`: converged only if R-hat <= 1.01 (undefined, and so failed, with
        one chain), bulk and tail ESS >= 400 and no divergences; each failed criterion is one
        message.
    """
    import arviz as az

    dataset = az.convert_to_dataset(dict(arrays))
    chains = next(iter(arrays.values())).shape[0]
    bulk = _flat(az.ess(dataset, method="bulk"))
    tail = _flat(az.ess(dataset, method="tail"))
    ess = np.minimum(bulk, tail)
    min_ess = float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan")
    messages = []
    max_rhat = float("nan")
    if chains > 1:  # R-hat compares chains
        with np.errstate(invalid="ignore", divide="ignore"):  # draws that never moved
            rhat = _flat(az.rhat(dataset, method="rank"))
        high = ~(rhat <= RHAT_MAX)
        max_rhat = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else float("nan")
        if high.any():
            messages.append(
                f"R-hat above {RHAT_MAX} (or undefined) for {int(high.sum())} quantities "
                f"(max {max_rhat:.3f})"
            )
    else:
        messages.append("R-hat undefined with one chain (needs >= 2)")
    for name, values in (("bulk", bulk), ("tail", tail)):
        low = ~(values >= ESS_MIN)  # NaN (draws that never moved) fails too
        if low.any():
            least = float(np.nanmin(values)) if np.isfinite(values).any() else float("nan")
            messages.append(
                f"{name} ESS below {ESS_MIN:g} (or undefined) for {int(low.sum())} "
                f"quantities (min {least:.0f})"
            )
    if divergences:
        messages.append(f"{divergences} divergent transitions")
    return Convergence(
        converged=not messages,
        max_rhat=max_rhat,
        min_ess=min_ess,
        divergences=divergences,
        messages=messages,
    )


def _flat(dataset: Any) -> np.ndarray:
    """Every value of every variable of an ArviZ result dataset, as one array."""
    return np.concatenate([np.ravel(dataset[name].values) for name in dataset.data_vars])
