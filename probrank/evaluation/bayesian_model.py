"""The hierarchical model of ``bayesian_compare(likelihood="normal" | "truncated-normal")``.

Not the default: :func:`probrank.evaluation.bayesian_compare` uses the paired model of
:mod:`probrank.evaluation.bayesian_exact` unless told otherwise. In the simulation from real
per-topic values (``benchmarks/bayesian_compare_sim.py``) the truncated normal below diverged
in 3 of 4 NUTS fits, identical runs included (issue 24 also saw it pull an observed +0.132 to
+0.112 when one run sat at 1.0 on two topics); the arguments for it that follow are kept as the
record of why it was built.

Per measure, the per-topic values ``y[s, t]`` of ``S`` systems on ``T`` topics (trec_eval's
per-topic numbers) are modelled as::

    level       ~ Normal(0.5, 0.5)           mean location of the topics
    topic_scale ~ HalfNormal(0.5)            spread of topic difficulty
    noise       ~ InverseGamma(2, 0.1)       system x topic variation (prior mean 0.1)
    z           ~ Normal(0, 0.25), S - 1     system effects = Q z, Q an orthonormal basis of
                                             the vectors that sum to zero (exchangeable effects)
    topic[t]    ~ Normal(level, topic_scale)
    y[s, t]     ~ TruncatedNormal(topic[t] + effect[s], noise) on [0, 1]

and the quantity compared is each system's **expected measure over the evaluated topics**,
``mean_t E[y[s, t]]`` (the truncated normal's mean): what the mean of trec_eval's per-topic
values estimates. A difference ``B - A`` is that quantity's difference.

Why a truncated normal (and not a beta, a logit-normal or a Student-t on differences):

* It respects the bounds: scores, their predictive distribution and the expected measure stay in
  [0, 1], and values *at* the bounds (``P@10 = 0``, ``RR = 1``, common on real runs) are ordinary
  points of its density. A beta or logit-normal likelihood gives them density 0 or sends them to
  infinity and needs squeezing or zero/one inflation.
* With the noise fixed it is an exponential family whose sufficient statistic is ``y`` itself
  (natural parameter ``location / noise**2``), so the likelihood's score for ``effect[s]`` is
  ``sum_t (y[s, t] - E[y[s, t]]) / noise**2``: at the mode each system's fitted expected
  scores average to its observed mean, and the posterior mean difference agrees with the
  observed mean difference (the estimate of the paired t-test) up to the weak priors. A beta
  likelihood matches ``log y`` and ``log(1 - y)`` instead, and a Student-t on differences
  estimates a robust location rather than the mean a trec_eval table reports.
* The topic effects pair the systems, as the paired test does; modelling all systems jointly
  gives coherent pairwise probabilities and P(each system is best).

Relation to the literature: Carterette (ICTIR 2011, "Model-based inference about IR systems";
ICTIR 2015, "Bayesian inference for information retrieval evaluation") spells out the linear
model behind the t-test (per-topic score = system effect + topic effect + noise) and fits
Bayesian versions of it by MCMC, reading P(B > A) from posterior draws; with
:attr:`Likelihood.NORMAL` this model is that linear model. Benham, Carterette, Culpepper and
Moffat (SIGIR 2020, "Bayesian inferential risk evaluation on multiple IR systems") compare
several systems in one Bayesian model with credible intervals, and add risk weighting of losses
against gains; risk weighting is not implemented here.

This module imports torch and pyro; :mod:`probrank.evaluation` loads it on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import pyro
import pyro.distributions as dist
import torch
from pyro.distributions import constraints
from pyro.distributions.torch_distribution import TorchDistribution
from torch import Tensor

from probrank.evaluation.bayesian_likelihood import HIERARCHICAL, Likelihood
from probrank.exceptions import InputDataError

__all__ = [
    "ComparisonPriors",
    "Likelihood",
    "UnitTruncatedNormal",
    "comparison_model",
    "effect_basis",
    "expected_scores",
    "hierarchical_likelihood",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_Size = torch.Size | list[int] | tuple[int, ...]


def hierarchical_likelihood(likelihood: Likelihood | str) -> Likelihood:
    """``likelihood`` as a :class:`~probrank.evaluation.bayesian_likelihood.Likelihood` of the
    hierarchical model.

    Raises:
        InputDataError: Not one of :data:`HIERARCHICAL`.
    """
    kind = Likelihood(likelihood)
    if kind not in HIERARCHICAL:
        names = ", ".join(repr(k.value) for k in HIERARCHICAL)
        raise InputDataError(f"the hierarchical comparison model takes {names}, not {kind.value!r}")
    return kind


def _log1mexp(x: Tensor) -> Tensor:
    """``log(1 - exp(x))`` for ``x <= 0``, accurate on both sides of ``-log 2``."""
    near = x > -math.log(2.0)
    return torch.where(
        near,
        torch.log(-torch.expm1(torch.where(near, x, -1.0))),
        torch.log1p(-torch.exp(torch.where(near, -1.0, x))),
    )


def _log_phi(x: Tensor) -> Tensor:
    return -0.5 * x * x - _LOG_SQRT_2PI


def log_interval_mass(a: Tensor, b: Tensor) -> Tensor:
    """``log(Phi(b) - Phi(a))`` for ``a < b``, in whichever tail keeps the digits.

    Args:
        a: Standardised lower bounds, any shape.
        b: Standardised upper bounds, broadcastable with ``a``, ``b > a``.

    Returns:
        The log standard-normal mass of ``[a, b]``, the broadcast shape.
    """
    upper = a > 0  # both in the upper tail: use Phi(-a) - Phi(-b)
    lo = torch.where(upper, -b, a)
    hi = torch.where(upper, -a, b)
    log_hi = torch.special.log_ndtr(hi)
    return log_hi + _log1mexp(torch.special.log_ndtr(lo) - log_hi)


class UnitTruncatedNormal(TorchDistribution):
    """A normal distribution truncated to [0, 1].

    Args:
        loc: Location of the untruncated normal, any shape.
        scale: Its scale (> 0), broadcastable with ``loc``.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = False

    def __init__(self, loc: Tensor, scale: Tensor, validate_args: bool | None = None):
        self.loc, self.scale = torch.broadcast_tensors(torch.as_tensor(loc), torch.as_tensor(scale))
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: _Size, _instance: object = None) -> UnitTruncatedNormal:
        shape = torch.Size(batch_shape)
        return UnitTruncatedNormal(self.loc.expand(shape), self.scale.expand(shape))

    def _bounds(self) -> tuple[Tensor, Tensor, Tensor]:
        a = -self.loc / self.scale
        b = (1.0 - self.loc) / self.scale
        return a, b, log_interval_mass(a, b)

    def log_prob(self, value: Tensor) -> Tensor:
        """Log density at ``value`` in [0, 1], the broadcast shape."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return _log_phi(z) - torch.log(self.scale) - self._bounds()[2]

    @property
    def mean(self) -> Tensor:
        """``loc + scale (phi(a) - phi(b)) / Z``, clamped to [0, 1] against rounding."""
        a, b, log_mass = self._bounds()
        ratio = torch.exp(_log_phi(a) - log_mass) - torch.exp(_log_phi(b) - log_mass)
        return (self.loc + self.scale * ratio).clamp(0.0, 1.0)

    @property
    def variance(self) -> Tensor:
        """``scale^2 (1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)^2)``."""
        a, b, log_mass = self._bounds()
        pa, pb = torch.exp(_log_phi(a) - log_mass), torch.exp(_log_phi(b) - log_mass)
        inner = 1.0 + a * pa - b * pb - (pa - pb) ** 2
        return (self.scale**2 * inner).clamp(min=0.0)

    def icdf(self, value: Tensor) -> Tensor:
        """Quantile at probability ``value`` in [0, 1], by inversion in the lighter tail.

        Where the truncated mass lies far in the normal's upper tail the distribution is
        reflected (``Y -> 1 - Y``), so that the inversion always works with lower-tail
        probabilities, in log space (``_ndtri_log``).
        """
        flip = self.loc < 0.5  # reflect: 1 - Y ~ TN(1 - loc) puts the mass on the upper side
        loc = torch.where(flip, 1.0 - self.loc, self.loc)
        u = torch.where(flip, 1.0 - value, value)
        a, b = -loc / self.scale, (1.0 - loc) / self.scale  # a < 0 here
        log_a, log_b = torch.special.log_ndtr(a), torch.special.log_ndtr(b)
        # log(Phi(a) + u (Phi(b) - Phi(a))) = log_b + log(u + (1 - u) Phi(a) / Phi(b))
        ratio = torch.exp(log_a - log_b)
        log_p = log_b + torch.log(u + (1.0 - u) * ratio)
        x = (loc + self.scale * _ndtri_log(log_p)).clamp(0.0, 1.0)
        return torch.where(flip, 1.0 - x, x)

    def sample(self, sample_shape: _Size = ()) -> Tensor:
        """Draws by inversion of uniforms from torch's global generator."""
        shape = self._extended_shape(torch.Size(sample_shape))
        with torch.no_grad():
            u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
            return self.icdf(u)


def _ndtri_log(log_p: Tensor) -> Tensor:
    """The standard normal quantile of ``exp(log_p)``, also where ``exp`` underflows.

    ``ndtri(exp(log_p))`` where that is representable; below, a start from the asymptotic
    expansion of the lower tail refined by Newton steps on ``log_ndtr(x) = log_p``.
    """
    direct = torch.special.ndtri(torch.exp(log_p).clamp(max=1.0))
    deep = log_p < -700.0
    if not bool(deep.any()):
        return direct
    lp = torch.where(deep, log_p, -800.0)
    t = -2.0 * lp
    x = -torch.sqrt(t - torch.log(t) - math.log(2.0 * math.pi))
    for _ in range(4):  # Newton on f(x) = log_ndtr(x) - lp, f' = phi(x) / Phi(x)
        f = torch.special.log_ndtr(x) - lp
        x = x - f * torch.exp(torch.special.log_ndtr(x) - _log_phi(x))
    return torch.where(deep, x, direct)


def effect_basis(num_systems: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """An orthonormal basis of the vectors of length ``S`` that sum to zero.

    Args:
        num_systems: ``S >= 2``.
        dtype: Floating type.

    Returns:
        `S x (S - 1)`; with ``z ~ Normal(0, c^2 I)`` the effects ``Q z`` are exchangeable, sum
        to zero, and any two differ by ``Normal(0, 2 c^2)`` a priori.
    """
    if num_systems < 2:
        raise InputDataError(f"need at least two systems, got {num_systems}")
    centred = torch.eye(num_systems, dtype=dtype) - 1.0 / num_systems
    q, _ = torch.linalg.qr(centred)
    return q[:, : num_systems - 1]


@dataclass(frozen=True)
class ComparisonPriors:
    """Hyperparameters of the priors of :func:`comparison_model`, on the measure's scale.

    The families are fixed (the sampler's potential, :mod:`probrank.evaluation.bayesian_potential`,
    is written for them); their parameters are not. A ``known_*`` value holds that quantity
    fixed instead of sampling it. The defaults are weakly informative for measures in [0, 1]:
    no system is preferred and 100 topics dominate every prior.

    Attributes:
        level_loc: Mean of the ``Normal`` prior of the mean topic location (0.5).
        level_scale: Its standard deviation (0.5).
        topic_scale: Scale of the ``HalfNormal`` prior of the topic spread (0.5).
        noise_concentration: Shape of the ``InverseGamma`` prior of the noise (2).
        noise_rate: Its rate (0.1): prior mean 0.1 and P(noise < 0.01) about 5e-4. The prior
            keeps the posterior proper when every system scores the same on every topic (a run
            compared with itself), where a prior with mass near 0 would let the noise collapse.
        effect_scale: Standard deviation of each coordinate ``z`` of the system effects (0.25):
            two systems differ by ``Normal(0, 2 effect_scale^2)`` a priori, one prior standard
            deviation being a difference of 0.35 in the measure.
        known_level: Hold the mean topic location at this value.
        known_topic_scale: Hold the topic spread at this value (> 0).
        known_noise: Hold the noise at this value (> 0).
    """

    level_loc: float = 0.5
    level_scale: float = 0.5
    topic_scale: float = 0.5
    noise_concentration: float = 2.0
    noise_rate: float = 0.1
    effect_scale: float = 0.25
    known_level: float | None = None
    known_topic_scale: float | None = None
    known_noise: float | None = None

    def __post_init__(self) -> None:
        positive = {
            "level_scale": self.level_scale,
            "topic_scale": self.topic_scale,
            "noise_concentration": self.noise_concentration,
            "noise_rate": self.noise_rate,
            "effect_scale": self.effect_scale,
            "known_topic_scale": self.known_topic_scale,
            "known_noise": self.known_noise,
        }
        for name, value in positive.items():
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InputDataError(f"{name} must be a finite number > 0, got {value}")
        for name, number in (("level_loc", self.level_loc), ("known_level", self.known_level)):
            if number is not None and not math.isfinite(number):
                raise InputDataError(f"{name} must be a finite number, got {number}")

    @property
    def sampled(self) -> tuple[str, ...]:
        """The scalar sites that are sampled (not held at a known value), in model order."""
        known = {
            "level": self.known_level,
            "topic_scale": self.known_topic_scale,
            "noise": self.known_noise,
        }
        return tuple(name for name, value in known.items() if value is None)


def _site(
    name: str, prior: Callable[[], TorchDistribution], known: float | None, like: Tensor
) -> Tensor:
    """``pyro.sample`` of the prior in the ``measures`` plate, or the known value."""
    if known is None:
        return pyro.sample(name, prior())
    return torch.full(like.shape[:1], float(known), dtype=like.dtype)


def comparison_model(
    scores: Tensor,
    likelihood: Likelihood | str = Likelihood.TRUNCATED_NORMAL,
    priors: ComparisonPriors | None = None,
) -> None:
    """The Pyro model: measures independent, topics paired across systems.

    Sample sites (``M`` measures): ``level``, ``topic_scale``, ``noise`` (`M`, unless
    fixed), ``z`` (`M x (S - 1)`), ``topic`` (`M x T`); the observed ``scores``.

    Args:
        scores: `M x S x T` per-topic values, float64.
        likelihood: :class:`~probrank.evaluation.bayesian_likelihood.Likelihood`.
        priors: :class:`ComparisonPriors` (default: its defaults).
    """
    kind = hierarchical_likelihood(likelihood)
    priors = priors or ComparisonPriors()
    num_measures, num_systems, num_topics = scores.shape
    basis = effect_basis(num_systems, scores.dtype)

    def number(value: float) -> Tensor:
        return torch.tensor(value, dtype=scores.dtype)

    with pyro.plate("measures", num_measures, dim=-1):
        level = _site(
            "level",
            lambda: dist.Normal(number(priors.level_loc), number(priors.level_scale)),
            priors.known_level,
            scores,
        )
        topic_scale = _site(
            "topic_scale",
            lambda: dist.HalfNormal(number(priors.topic_scale)),
            priors.known_topic_scale,
            scores,
        )
        noise = _site(
            "noise",
            lambda: dist.InverseGamma(
                number(priors.noise_concentration), number(priors.noise_rate)
            ),
            priors.known_noise,
            scores,
        )
        zero = scores.new_zeros(num_systems - 1)
        z = pyro.sample("z", dist.Normal(zero, priors.effect_scale).to_event(1))
        topic = pyro.sample(
            "topic",
            dist.Normal(level[:, None], topic_scale[:, None])
            .expand([num_measures, num_topics])
            .to_event(1),
        )
        loc = (z @ basis.T)[:, :, None] + topic[:, None, :]  # M x S x T
        scale = noise[:, None, None].expand_as(loc)
        base = UnitTruncatedNormal(loc, scale) if kind is Likelihood.TRUNCATED_NORMAL else None
        observed = base if base is not None else dist.Normal(loc, scale)
        pyro.sample("scores", observed.to_event(2), obs=scores)


def expected_scores(
    z: Tensor,
    topic: Tensor,
    noise: Tensor,
    likelihood: Likelihood | str = Likelihood.TRUNCATED_NORMAL,
) -> Tensor:
    """Each system's expected measure averaged over the topics, per posterior draw.

    Args:
        z: `... x M x (S - 1)` effect coordinates.
        topic: `... x M x T` topic locations.
        noise: `... x M` noise scales.
        likelihood: :class:`~probrank.evaluation.bayesian_likelihood.Likelihood`.

    Returns:
        `... x M x S`: ``mean_t E[y[s, t]]`` (the truncated normal's mean, or the location
        for :attr:`Likelihood.NORMAL`).
    """
    kind = hierarchical_likelihood(likelihood)
    basis = effect_basis(z.shape[-1] + 1, z.dtype)
    lead = z.shape[:-2]
    z, topic, noise = (
        z.reshape(-1, *z.shape[-2:]),
        topic.reshape(-1, *topic.shape[-2:]),
        noise.reshape(-1, noise.shape[-1]),
    )
    parts = []
    for start in range(0, z.shape[0], _CHUNK):  # bounded memory: draws x M x S x T
        part = slice(start, start + _CHUNK)
        loc = (z[part] @ basis.T)[..., :, None] + topic[part, :, None, :]
        if kind is Likelihood.NORMAL:
            parts.append(loc.mean(-1))
            continue
        scale = noise[part, :, None, None].expand_as(loc)
        parts.append(UnitTruncatedNormal(loc, scale).mean.mean(-1))
    return torch.cat(parts).reshape(*lead, *parts[0].shape[1:])


_CHUNK = 256
