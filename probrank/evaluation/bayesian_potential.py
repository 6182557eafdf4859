"""The negative log posterior of :func:`~probrank.evaluation.bayesian_model.comparison_model`
as a function of one flat vector, with its gradient written out in NumPy, for NUTS.

Pyro's own potential (a trace of the model, differentiated by autograd) costs about 2 ms per
gradient on this small model, almost all of it in per-operation overhead; this one costs a
small fraction of that, which is what makes a Robust03 comparison take seconds rather than
minutes. It is the same function: the tests compare its value and gradient with Pyro's
potential of the model at random points.

The vector holds, measure by measure blocks in this order, the sampled ones of: ``level``
(`M`), ``log topic_scale`` (`M`), ``log noise`` (`M`), then ``z`` (`M x (S - 1)`) and
``topic`` (`M x T`): the unconstrained coordinates Pyro's NUTS would use (``exp`` maps the
scales to their support, with its log-Jacobian in the density).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from scipy.special import gammaln, log_ndtr

from probrank.evaluation.bayesian_model import (
    ComparisonPriors,
    Likelihood,
    effect_basis,
    hierarchical_likelihood,
)
from probrank.exceptions import InputDataError

__all__ = ["ComparisonPotential", "ScaledPotential"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SCALES = ("topic_scale", "noise")


def _log1mexp(x: np.ndarray) -> np.ndarray:
    near = x > -math.log(2.0)
    out = np.empty_like(x)
    out[near] = np.log(-np.expm1(x[near]))
    out[~near] = np.log1p(-np.exp(x[~near]))
    return out


def _log_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(Phi(b) - Phi(a))`` in whichever tail keeps the digits (as the torch version)."""
    upper = a > 0
    lo = np.where(upper, -b, a)
    hi = np.where(upper, -a, b)
    log_hi = log_ndtr(hi)
    return log_hi + _log1mexp(log_ndtr(lo) - log_hi)


class ComparisonPotential:
    """``U(theta) = -log p(theta | scores)`` and ``dU/dtheta`` of the comparison model.

    Args:
        scores: `M x S x T` per-topic values.
        likelihood: :class:`~probrank.evaluation.bayesian_model.Likelihood`.
        priors: :class:`~probrank.evaluation.bayesian_model.ComparisonPriors`.
    """

    def __init__(
        self, scores: np.ndarray, likelihood: Likelihood | str, priors: ComparisonPriors
    ) -> None:
        self.scores = np.asarray(scores, dtype=np.float64)
        if self.scores.ndim != 3 or self.scores.shape[1] < 2:
            raise InputDataError(f"scores must be M x S x T with S >= 2, got {self.scores.shape}")
        self.likelihood = hierarchical_likelihood(likelihood)
        self.priors = priors
        num_measures, num_systems, num_topics = self.scores.shape
        self.basis = effect_basis(num_systems).numpy()  # S x (S - 1)
        self.shapes: dict[str, tuple[int, ...]] = {
            **{name: (num_measures,) for name in priors.sampled},
            "z": (num_measures, num_systems - 1),
            "topic": (num_measures, num_topics),
        }
        self.slices: dict[str, slice] = {}
        start = 0
        for name, shape in self.shapes.items():
            size = int(np.prod(shape))
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        """Length of the flat vector."""

    # -- flat vector <-> named values ------------------------------------------------------

    def pack(self, values: Mapping[str, np.ndarray | torch.Tensor]) -> np.ndarray:
        """The flat unconstrained vector of constrained ``values`` (scales > 0).

        Args:
            values: ``{site: array}`` for every sampled site, shapes as in ``self.shapes``.

        Returns:
            `P` float64.
        """
        theta = np.empty(self.size)
        for name, part in self.slices.items():
            value = np.asarray(values[name], dtype=np.float64).reshape(-1)
            theta[part] = np.log(value) if name in _SCALES else value
        return theta

    def unpack(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """Constrained values of every site from flat vectors.

        Args:
            theta: `... x P`.

        Returns:
            ``{site: ... x *shape}``, the known sites filled in.
        """
        theta = np.asarray(theta, dtype=np.float64)
        lead = theta.shape[:-1]
        out: dict[str, np.ndarray] = {}
        for name, part in self.slices.items():
            value = theta[..., part].reshape(*lead, *self.shapes[name])
            out[name] = np.exp(value) if name in _SCALES else value
        known = {
            "level": self.priors.known_level,
            "topic_scale": self.priors.known_topic_scale,
            "noise": self.priors.known_noise,
        }
        for name, number in known.items():
            if number is not None:
                out[name] = np.full((*lead, self.scores.shape[0]), float(number))
        return out

    # -- the potential ---------------------------------------------------------------------

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """``U(theta)`` and its gradient.

        Args:
            theta: `P` unconstrained coordinates.

        Returns:
            ``(U, dU/dtheta)``; ``U`` is ``inf`` (and the gradient 0) where it is not finite.
        """
        with np.errstate(all="ignore"):
            value, grad = self._log_posterior(np.asarray(theta, dtype=np.float64))
        if not np.isfinite(value) or not np.all(np.isfinite(grad)):
            return math.inf, np.zeros(self.size)
        return -value, -grad

    def _log_posterior(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        p = self.priors
        v = self.unpack(theta)
        level, ts, sigma, z, topic = v["level"], v["topic_scale"], v["noise"], v["z"], v["topic"]
        y = self.scores
        num_topics = y.shape[2]
        sig = sigma[:, None, None]
        loc = (z @ self.basis.T)[:, :, None] + topic[:, None, :]  # M x S x T
        r = y - loc
        logp = np.sum(-0.5 * (r / sig) ** 2 - np.log(sig) - _LOG_SQRT_2PI)
        g_loc = r / sig**2
        g_sigma = np.sum(r**2 / sig**3 - 1.0 / sig, axis=(1, 2))
        if self.likelihood is Likelihood.TRUNCATED_NORMAL:
            a, b = -loc / sig, (1.0 - loc) / sig
            log_mass = _log_mass(a, b)
            pa = np.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_mass)
            pb = np.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_mass)
            logp -= np.sum(log_mass)
            g_loc = g_loc - (pa - pb) / sig
            g_sigma = g_sigma - np.sum((a * pa - b * pb) / sig, axis=(1, 2))
        # system effects: z ~ Normal(0, effect_scale)
        e = p.effect_scale
        logp += np.sum(-0.5 * (z / e) ** 2 - math.log(e) - _LOG_SQRT_2PI)
        grads: dict[str, np.ndarray] = {"z": -z / e**2 + g_loc.sum(-1) @ self.basis}
        # topics: topic ~ Normal(level, topic_scale)
        d = topic - level[:, None]
        scale = ts[:, None]
        logp += np.sum(-0.5 * (d / scale) ** 2 - np.log(scale) - _LOG_SQRT_2PI)
        grads["topic"] = g_loc.sum(1) - d / scale**2
        if "level" in self.slices:  # level ~ Normal(level_loc, level_scale)
            u = (level - p.level_loc) / p.level_scale
            logp += np.sum(-0.5 * u * u - math.log(p.level_scale) - _LOG_SQRT_2PI)
            grads["level"] = -u / p.level_scale + np.sum(d, axis=1) / ts**2
        if "topic_scale" in self.slices:  # HalfNormal(topic_scale), in log coordinates
            h = p.topic_scale
            logp += np.sum(
                math.log(2.0) - _LOG_SQRT_2PI - math.log(h) - 0.5 * (ts / h) ** 2 + np.log(ts)
            )
            from_topics = np.sum(d**2, axis=1) / ts**3 - num_topics / ts
            grads["topic_scale"] = ts * (-ts / h**2 + from_topics) + 1.0
        if "noise" in self.slices:  # InverseGamma(concentration, rate), in log coordinates
            alpha, beta = p.noise_concentration, p.noise_rate
            logp += np.sum(
                alpha * math.log(beta)
                - gammaln(alpha)
                - (alpha + 1.0) * np.log(sigma)
                - beta / sigma
                + np.log(sigma)
            )
            grads["noise"] = -(alpha + 1.0) + beta / sigma + sigma * g_sigma + 1.0
        grad = np.empty(self.size)
        for name, part in self.slices.items():
            grad[part] = grads[name].reshape(-1)
        return float(logp), grad

    def __call__(self, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Pyro's ``potential_fn``: ``params = {"theta": P}`` -> scalar, differentiable."""
        return _Potential.apply(params["theta"], self)


class ScaledPotential:
    """``U(scale * psi)``: the potential in coordinates divided by rough posterior standard
    deviations, so that NUTS starts its warm-up with a sensible mass matrix (a constant
    Jacobian: the same posterior).

    Args:
        potential: The :class:`ComparisonPotential`.
        scale: `P` positive scales.
    """

    def __init__(self, potential: ComparisonPotential, scale: np.ndarray) -> None:
        self.potential = potential
        self.scale = np.asarray(scale, dtype=np.float64)

    def value_and_grad(self, psi: np.ndarray) -> tuple[float, np.ndarray]:
        """``U(scale * psi)`` and its gradient in ``psi``."""
        value, grad = self.potential.value_and_grad(self.scale * psi)
        return value, grad * self.scale

    def __call__(self, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Pyro's ``potential_fn``: ``params = {"theta": P}`` (scaled) -> scalar."""
        return _Potential.apply(params["theta"], self)


class _Potential(torch.autograd.Function):
    """Autograd wrapper: the value from NumPy, the gradient stored for ``backward``."""

    @staticmethod
    def forward(
        ctx: Any, theta: torch.Tensor, potential: ComparisonPotential | ScaledPotential
    ) -> torch.Tensor:
        value, grad = potential.value_and_grad(theta.detach().cpu().numpy())
        ctx.save_for_backward(torch.from_numpy(grad).to(theta.dtype))
        return theta.new_tensor(value)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (grad,) = ctx.saved_tensors
        return grad_output * grad, None
