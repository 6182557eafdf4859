"""Likelihoods of the number of relevant documents among the top ``n`` of a ranked list.

A likelihood here is a callable of latent logits `... x m` (one per list) returning a Pyro
distribution with batch shape `... x m` over the observed count of relevant documents among
the list's top ``total_count``. The built-ins' proportion is ``p_hat = sigmoid(logits)``.

**The likelihood's mean proportion.** What a model reports as a list's proportion of relevant
documents (QLFusion's predictions, fusion weights, the point beside every interval) is the
likelihood's own expected share given the logits, :func:`~probrank.likelihoods.mean_proportion`:

* a likelihood may declare it: a ``mean_proportion`` attribute on the callable, mapping
  logits `... x m` to proportions `... x m` (the built-ins declare ``sigmoid``);
* otherwise it is the distribution's ``.mean`` (the expected count) over ``total_count``
  (Pyro's ``Binomial``, ``BetaBinomial``, ``ZeroInflatedDistribution``, ... all have one); a
  distribution without a ``.mean`` is refused with a message saying how to declare it.

The QLFusion paper trains with ``KL(B(n, p) || B(n, p_hat))``, ``p = k / n`` the observed
proportion. Expanding both binomial pmfs, the ``log C(n, j)`` terms cancel and

    KL = n [p log(p / p_hat) + (1 - p) log((1 - p) / (1 - p_hat))]
       = -log B(k; n, p_hat) + const(p),

so the binomial negative log-likelihood of ``k`` successes out of ``n`` has the same gradient
in ``p_hat`` as the KL loss: :func:`binomial_proportion` *is* the paper's loss as a Pyro
likelihood. :func:`binomial_kl` gives the KL in closed form (for tests and reporting).
"""

from __future__ import annotations

from collections.abc import Callable

import pyro.distributions as dist
import torch
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = [
    "Likelihood",
    "beta_binomial_proportion",
    "binomial_kl",
    "binomial_proportion",
    "declare_mean_proportion",
    "gaussian_proportion",
    "likelihood_name",
    "mean_proportion",
    "mse_loss",
]

Likelihood = Callable[[Tensor], dist.TorchDistribution]
"""A callable of latent logits `... x m` returning a distribution with batch shape `... x m`."""


def declare_mean_proportion(likelihood: Likelihood, mean: Callable[[Tensor], Tensor]) -> Likelihood:
    """Declare the mean proportion of a likelihood (see the module docstring).

    Args:
        likelihood: A callable of logits `... x m` returning a distribution over counts.
        mean: Logits `... x m` to the expected share of relevant documents `... x m`.

    Returns:
        ``likelihood`` itself, with ``mean`` as its ``mean_proportion`` attribute.
    """
    setattr(likelihood, "mean_proportion", mean)  # noqa: B010 -- a function's attribute
    return likelihood


def likelihood_name(likelihood: object) -> str:
    """How messages name a likelihood: its ``name`` attribute (``"module:callable"`` of a
    config), else its qualified name."""
    name = getattr(likelihood, "name", None)
    if isinstance(name, str):
        return name
    module = getattr(likelihood, "__module__", None) or type(likelihood).__module__
    qualname = getattr(likelihood, "__qualname__", None) or type(likelihood).__qualname__
    return f"{module}:{qualname}"


def mean_proportion(likelihood: Likelihood, logits: Tensor, total_count: int | Tensor) -> Tensor:
    """The likelihood's expected share of relevant documents given the logits.

    The ``mean_proportion`` the likelihood declares (:func:`declare_mean_proportion`), else
    ``likelihood(logits).mean / total_count``.

    Args:
        likelihood: A callable of logits `... x m` returning a distribution over counts out
            of ``total_count``.
        logits: `... x m` latent logits.
        total_count: ``n``, an int or a tensor broadcastable to ``logits``.

    Returns:
        `... x m` proportions, in ``logits``' dtype.

    Raises:
        InputDataError: a distribution without a mean (and no declared one), a result of
            another shape, or values that are not finite; naming the likelihood.
    """
    name = likelihood_name(likelihood)
    declared = getattr(likelihood, "mean_proportion", None)
    if declared is not None:
        value = torch.as_tensor(declared(logits), dtype=logits.dtype)
        source = "its declared mean_proportion"
    else:
        distribution = likelihood(logits)
        try:
            mean = distribution.mean
        except NotImplementedError:
            raise InputDataError(
                f"the likelihood {name} returns a {type(distribution).__name__}, which has no "
                ".mean: give the distribution a mean (the expected count) or the likelihood a "
                "mean_proportion(logits) attribute (the expected share)"
            ) from None
        count = torch.as_tensor(total_count, dtype=logits.dtype, device=logits.device)
        value = mean.to(logits.dtype) / count
        source = f"the .mean of its {type(distribution).__name__} over total_count"
    if value.shape != logits.shape:
        try:
            value = value.expand(logits.shape)
        except RuntimeError:
            raise InputDataError(
                f"the likelihood {name}: {source} has shape {tuple(value.shape)} for logits "
                f"of shape {tuple(logits.shape)}"
            ) from None
    finite = torch.isfinite(value)
    if not bool(finite.all()):
        index = tuple((~finite).nonzero()[0].tolist())
        raise InputDataError(
            f"the likelihood {name}: {source} is {float(value[index])} at logit "
            f"{float(logits[index]):.4g} (index {index} of logits {tuple(logits.shape)})"
        )
    return value


def _check_count(total_count: int | Tensor) -> None:
    if isinstance(total_count, Tensor):
        if (total_count < 0).any():
            raise InputDataError("total_count must be non-negative")
    elif total_count < 1:
        raise InputDataError(f"total_count must be a positive integer, got {total_count}")


def binomial_proportion(total_count: int | Tensor) -> Likelihood:
    """Binomial likelihood of relevant counts: ``k ~ Binomial(n, sigmoid(logits))``.

    Its negative log-likelihood equals the paper's ``KL(B(n, p) || B(n, p_hat))`` up to a
    constant in ``p_hat`` (see the module docstring).

    Args:
        total_count: ``n``, an int or a tensor broadcastable to the logits' shape.

    Returns:
        A callable mapping logits `... x m` to ``Binomial`` with batch shape `... x m`.
    """
    _check_count(total_count)

    def likelihood(logits: Tensor) -> dist.TorchDistribution:
        count = torch.as_tensor(total_count, dtype=logits.dtype, device=logits.device)
        return dist.Binomial(total_count=count.expand(logits.shape), logits=logits)

    return declare_mean_proportion(likelihood, torch.sigmoid)


def beta_binomial_proportion(
    total_count: int | Tensor, concentration: float | Tensor
) -> Likelihood:
    """Over-dispersed counts: ``k ~ BetaBinomial(c p_hat, c (1 - p_hat), n)``.

    The mean is ``n p_hat`` as under :func:`binomial_proportion`; the variance is larger by
    the factor ``(n + c) / (1 + c)``, and the binomial is recovered as ``c -> inf``.

    Args:
        total_count: ``n``, an int or a tensor broadcastable to the logits' shape.
        concentration: ``c > 0``; smaller means more over-dispersion. A tensor (e.g. one
            ``c`` per member, `M x 1`) is broadcast against the logits.

    Returns:
        A callable mapping logits `... x m` to ``BetaBinomial`` with batch shape `... x m`
        (broadcast with ``concentration``'s shape).
    """
    _check_count(total_count)
    positive = (
        bool((concentration > 0).all())
        if isinstance(concentration, Tensor)
        else (concentration > 0)
    )
    if not positive:
        raise InputDataError(f"concentration must be positive, got {concentration}")

    def likelihood(logits: Tensor) -> dist.TorchDistribution:
        c = torch.as_tensor(concentration, dtype=logits.dtype, device=logits.device)
        p_hat = torch.sigmoid(logits)
        shape = torch.broadcast_shapes(p_hat.shape, c.shape)
        count = torch.as_tensor(total_count, dtype=logits.dtype, device=logits.device)
        return dist.BetaBinomial(
            (c * p_hat).expand(shape),
            (c * (1 - p_hat)).expand(shape),
            total_count=count.expand(shape),
        )

    return declare_mean_proportion(likelihood, _broadcast_sigmoid(concentration))


def gaussian_proportion(total_count: int | Tensor, scale: float | None = None) -> Likelihood:
    """The squared-error ablation as a likelihood: ``k ~ Normal(n p_hat, n scale)``.

    ``-log p(k) = (k / n - p_hat)^2 / (2 scale^2) + const``: the MSE on proportions divided
    by ``2 scale^2``. The default ``scale = 0.5 / sqrt(n)`` is the binomial's largest standard
    deviation of a proportion, so the curvature matches the binomial's at ``p_hat = 0.5``.

    Args:
        total_count: ``n`` (int).
        scale: Standard deviation on the proportion scale.

    Returns:
        A callable mapping logits `... x m` to ``Normal`` with batch shape `... x m`.
    """
    _check_count(total_count)
    n = float(total_count) if not isinstance(total_count, Tensor) else None
    if scale is None:
        if n is None:
            raise InputDataError("give scale when total_count is a tensor")
        scale = 0.5 / n**0.5
    if not scale > 0:
        raise InputDataError(f"scale must be positive, got {scale}")
    noise = scale

    def likelihood(logits: Tensor) -> dist.TorchDistribution:
        count = torch.as_tensor(total_count, dtype=logits.dtype, device=logits.device)
        mean = count * torch.sigmoid(logits)
        return dist.Normal(mean, (count * noise).expand_as(mean))

    return declare_mean_proportion(likelihood, torch.sigmoid)


def _broadcast_sigmoid(other: float | Tensor) -> Callable[[Tensor], Tensor]:
    """``sigmoid(logits)`` broadcast against ``other``'s shape (a beta-binomial's batch shape
    is the logits' broadcast with its concentration's)."""

    def mean(logits: Tensor) -> Tensor:
        p_hat = torch.sigmoid(logits)
        if isinstance(other, Tensor):
            return p_hat.expand(torch.broadcast_shapes(p_hat.shape, other.shape))
        return p_hat

    return mean


def binomial_kl(p: Tensor, p_hat: Tensor, total_count: int | Tensor) -> Tensor:
    """``KL(B(n, p) || B(n, p_hat)) = n [p log(p/p_hat) + (1-p) log((1-p)/(1-p_hat))]``.

    Uses ``0 log 0 = 0``, so ``p`` may be 0 or 1.

    Args:
        p: `...` true proportions in ``[0, 1]``.
        p_hat: `...` predicted proportions in ``(0, 1)``.
        total_count: ``n``.

    Returns:
        `...` the KL divergences.
    """
    q = 1 - p
    entropy_part = torch.xlogy(p, p) + torch.xlogy(q, q)
    return total_count * (entropy_part - torch.xlogy(p, p_hat) - torch.xlogy(q, 1 - p_hat))


def mse_loss(p_hat: Tensor, p: Tensor) -> Tensor:
    """Mean squared error between predicted and true proportions (the ablation's loss).

    Args:
        p_hat: `...` predicted proportions.
        p: `...` true proportions.

    Returns:
        A scalar: the mean of ``(p_hat - p)^2``.
    """
    return (p_hat - p).square().mean()
