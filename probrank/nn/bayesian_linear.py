"""A Bayesian linear layer for Pyro: pluggable priors, flipout and local reparameterisation.

:class:`BayesianLinear` is a :class:`~pyro.nn.PyroModule` whose ``weight`` and ``bias`` are
:class:`~pyro.nn.PyroSample` sites. Their priors are any Pyro distribution (a scalar one is
expanded to the parameter's shape) or a callable ``module -> Distribution`` (PyroSample
semantics, e.g. a hierarchical horseshoe whose scale is itself a ``pyro.sample`` site). The
whole tensor is one event (``.to_event``), so the sites need no plate.

The layer also owns a mean-field Normal variational family, ``q(w) = N(loc, scale^2)`` per
entry, exposed as :meth:`BayesianLinear.guide`. With that guide, the forward pass can use a
lower-variance gradient estimator:

* ``flipout`` (Wen et al., 2018): one perturbation ``dW = W - loc`` is drawn by the guide and
  decorrelated across examples by random sign flips,
  ``y_n = x_n loc^T + ((x_n * s_n) dW^T) * r_n`` with ``s_n, r_n`` uniform on ``{-1, 1}``.
  Because a mean-field Normal is symmetric about its mean, each example's effective weight
  ``loc + dW * (r_n s_n^T)`` is an exact draw from ``q``.
* ``local_reparam`` (Kingma et al., 2015): each example's pre-activation is drawn from its
  exact Gaussian marginal under ``q``, ``y_n ~ N(x_n loc^T, x_n^2 scale^2^T)``.
* ``reparam``: the guide's draw ``W`` is used for every example (plain reparameterisation).

**Why this stays correct under** :class:`pyro.infer.Trace_ELBO`. The ELBO is
``E_q[log p(y | W)] + E_q[log p(W) - log q(W)]``. Trace_ELBO samples ``W`` in the guide and
replays it in the model; the prior and guide terms use that ``W``. The likelihood term of
example ``n`` only depends on its own pre-activation, whose distribution under the estimators
above equals its distribution under ``W ~ q``: the likelihood's expectation (and its
reparameterised gradient) is unchanged, only its variance drops. This holds only when the
replayed ``W`` was drawn from *this layer's own* Normal guide, so the layer checks that: the
guide records the tensor it sampled, and the forward pass uses flipout or local
reparameterisation only if the model received exactly that tensor and the module is in
training mode. With any other guide (``AutoNormal``, ``AutoDelta``, ...), under MCMC, under
``Predictive`` from the prior, or in ``eval()`` mode, the layer falls back to the plain
estimator, which is always correct. The bias always uses the plain estimator.

Use :class:`pyro.infer.TraceMeanField_ELBO` to get the KL term in closed form when the prior
is Normal (Pyro registers the Normal-Normal KL); other priors fall back to Monte Carlo.

The guide's parameters (``weight_loc``, ``weight_scale``, ...) describe a posterior only once
that guide was fitted; :attr:`BayesianLinear.guide_fitted` tells (a layer fitted through an
``AutoNormal`` over the whole model keeps them at their initial values, and
:func:`probrank.diagnostics.summarize` then asks for that guide instead).

**Inside a** ``pyro.plate``. The weight and bias are global: one draw serves every example.
The layer may be called inside data plates (``with pyro.plate("lists", n): y = layer(x)``):
it samples its ``weight`` and ``bias`` sites outside every active plate, so they are neither
broadcast over the plate (which made the weight `n x o x d`) nor scaled by subsampling, and
autoguides see them as global sites, exactly as if the layer had been called before the
plate. Pyro's vectorising plates (``vectorize_particles=True``, ``Predictive(parallel=True)``)
are kept: there the weight differs per particle, as it would outside any data plate.

**dtype.** Parameters are created in ``dtype`` (default ``torch.get_default_dtype()``); the
default N(0, 1) priors follow the layer's dtype (also after ``.double()``). Inputs of any
floating dtype are accepted: the weight and bias are cast to the input's dtype, so the
output has the input's dtype (float64 inputs work without ``.double()``).

Ensembles: with ``batch_shape=(M,)`` the layer holds ``M`` independent weight matrices,
``M x out x in``, for inputs `M x n x in`; independent members trained on a summed loss get
exactly the gradients they would get alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from enum import Enum

import pyro
import pyro.distributions as dist
import torch
from pyro.distributions import constraints
from pyro.distributions.torch_distribution import TorchDistributionMixin as TorchDistribution
from pyro.nn import PyroModule, PyroParam, PyroSample
from pyro.nn.module import pyro_method
from pyro.poutine import runtime
from pyro.poutine.indep_messenger import IndepMessenger
from torch import Tensor

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = ["BayesianLinear", "Estimator", "Prior"]

Prior = TorchDistribution | Callable[[PyroModule], TorchDistribution]
"""A prior: a Pyro distribution, or a callable of the module returning one."""


class Estimator(str, Enum):
    """Gradient estimator of :class:`BayesianLinear` under its own mean-field guide."""

    FLIPOUT = "flipout"
    """Shared Normal perturbation decorrelated per example by random signs (Wen et al. 2018)."""
    LOCAL_REPARAM = "local_reparam"
    """Per-example Gaussian pre-activations (Kingma et al. 2015)."""
    REPARAM = "reparam"
    """The guide's weight draw for every example (plain reparameterisation)."""


def _standard_normal(module: PyroModule) -> TorchDistribution:
    """N(0, 1) in the dtype of the layer's parameters (follows ``.double()``); reads the raw
    parameter, so the model trace gains no ``param`` site."""
    loc = module._parameters["weight_loc_unconstrained"]
    if loc is None:  # pragma: no cover - created in __init__
        raise InputDataError("the layer has no weight_loc parameter")
    return dist.Normal(torch.zeros((), dtype=loc.dtype, device=loc.device), 1.0)


_VECTORISING_PLATES = frozenset({"num_particles_vectorized", "_num_predictive_samples"})
"""Pyro's plates that vectorise over particles or predictive draws (one weight each)."""


@contextmanager
def _outside_plates() -> Iterator[None]:
    """Hide the active data plates (``pyro.plate``) while the layer samples its global sites.

    Pyro's vectorising plates (particles, parallel predictive draws) stay: there the weight
    is meant to differ per particle, as it would outside any data plate.
    """
    stack = runtime._PYRO_STACK
    hidden = [
        (i, m)
        for i, m in enumerate(stack)
        if isinstance(m, IndepMessenger) and getattr(m, "name", None) not in _VECTORISING_PLATES
    ]
    for index, _ in reversed(hidden):
        del stack[index]
    try:
        yield
    finally:
        for index, messenger in hidden:
            stack.insert(index, messenger)


def _as_prior(prior: Prior, shape: torch.Size) -> Callable[[PyroModule], TorchDistribution]:
    """Wrap ``prior`` so that it yields a distribution with ``event_shape == shape``."""

    def full(module: PyroModule) -> TorchDistribution:
        base = prior if isinstance(prior, TorchDistribution) else prior(module)
        if not isinstance(base, TorchDistribution):
            raise InputDataError(f"a prior must be a pyro Distribution, got {type(base).__name__}")
        if base.event_shape == shape:
            return base
        if base.event_shape:
            raise InputDataError(
                f"prior event shape {tuple(base.event_shape)} does not match "
                f"the parameter shape {tuple(shape)}"
            )
        return base.expand(shape).to_event(len(shape))

    return full


class BayesianLinear(PyroModule):
    """A linear layer ``y = x W^T + b`` with priors on ``W`` and ``b``.

    Args:
        in_features: Input width ``d``.
        out_features: Output width ``o``.
        weight_prior: Prior of the weight, a Pyro distribution (a scalar one is expanded to
            `*batch_shape x o x d`) or a callable ``module -> Distribution``.
        bias_prior: Prior of the bias (shape `*batch_shape x o`), expanded like the weight's.
            ``None`` (the default) means the standard normal ``Normal(0, 1)``, as for
            ``weight_prior``; it does not remove the bias (use ``bias=False`` for that).
        bias: Whether the layer has a bias at all (``False``: no ``bias`` site, no bias
            guide parameters, and ``bias_prior`` is ignored).
        estimator: ``"flipout"``, ``"local_reparam"`` or ``"reparam"``; see the module doc.
        batch_shape: Leading shape of independent ensemble members (``()`` for one layer).
        init_scale: Initial standard deviation of the mean-field guide.
        seed: Seed of the guide's initial means (drawn as PyTorch's ``nn.Linear`` does).
        dtype: dtype of the guide parameters (and of the default priors); default
            ``torch.get_default_dtype()``.

    Inputs to :meth:`forward` are `*batch_shape x ... x d`; outputs `*batch_shape x ... x o`
    (with ``batch_shape=()``, any leading dims) in the input's dtype. The layer may be called
    inside ``pyro.plate`` contexts: its weight and bias are sampled outside them (see the
    module docstring).
    """

    # PyroSample / PyroParam attributes read back as tensors.
    weight: Tensor
    bias: Tensor
    weight_loc: Tensor
    weight_scale: Tensor
    bias_loc: Tensor
    bias_scale: Tensor

    def __init__(
        self,
        in_features: int,
        out_features: int,
        weight_prior: Prior | None = None,
        bias_prior: Prior | None = None,
        *,
        bias: bool = True,
        estimator: Estimator | str = Estimator.FLIPOUT,
        batch_shape: Sequence[int] = (),
        init_scale: float = 1e-2,
        seed: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise InputDataError(
                f"in_features and out_features must be positive, got {in_features}, {out_features}"
            )
        if not init_scale > 0:
            raise InputDataError(f"init_scale must be positive, got {init_scale}")
        self.in_features = in_features
        self.out_features = out_features
        self.estimator = parse_enum(Estimator, estimator, "estimator")
        self.batch_shape = torch.Size(batch_shape)
        weight_shape = torch.Size((*self.batch_shape, out_features, in_features))
        bias_shape = torch.Size((*self.batch_shape, out_features))
        dtype = dtype if dtype is not None else torch.get_default_dtype()
        if not dtype.is_floating_point:
            raise InputDataError(f"dtype must be a floating dtype, got {dtype}")
        if weight_prior is None:
            weight_prior = _standard_normal
        if bias_prior is None:
            bias_prior = _standard_normal
        self.weight = PyroSample(_as_prior(weight_prior, weight_shape))  # type: ignore[assignment]
        self.has_bias = bias
        if bias:
            self.bias = PyroSample(_as_prior(bias_prior, bias_shape))  # type: ignore[assignment]
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        bound = in_features**-0.5
        loc = (torch.rand(weight_shape, generator=generator, dtype=dtype) * 2 - 1) * bound
        self.weight_loc = PyroParam(loc)  # type: ignore[assignment]
        self.weight_scale = PyroParam(  # type: ignore[assignment]
            torch.full(weight_shape, init_scale, dtype=dtype), constraint=constraints.positive
        )
        if bias:
            self.bias_loc = PyroParam(torch.zeros(bias_shape, dtype=dtype))  # type: ignore[assignment]
            self.bias_scale = PyroParam(  # type: ignore[assignment]
                torch.full(bias_shape, init_scale, dtype=dtype), constraint=constraints.positive
            )
        self._guide_draw: Tensor | None = None
        self._initial_guide = self._guide_state()

    def _guide_state(self) -> tuple[Tensor, ...]:
        names = ["weight_loc", "weight_scale"] + (
            ["bias_loc", "bias_scale"] if self.has_bias else []
        )
        return tuple(getattr(self, f"{n}_unconstrained").detach().cpu().clone() for n in names)

    @property
    def guide_fitted(self) -> bool:
        """Whether the parameters of the layer's own guide (:meth:`guide`) differ from their
        initial values, i.e. were trained (or loaded from a fitted state).

        False for a layer fitted with another guide (``AutoNormal``, ``AutoDelta``, ...) or by
        MCMC: its ``weight_loc`` / ``weight_scale`` are then the untrained initial values and
        describe no posterior.
        """
        current = self._guide_state()
        return any(
            not torch.equal(now.to(start.dtype), start)
            for now, start in zip(current, self._initial_guide, strict=True)
        )

    @pyro_method
    def guide(self) -> None:
        """Mean-field Normal guide of this layer's ``weight`` and ``bias`` sites.

        Call it inside the model's guide (it uses the same site names as the model). It records
        the weight it draws so that :meth:`forward` can recognise it and apply the estimator.
        """
        weight_q = dist.Normal(self.weight_loc, self.weight_scale).to_event(
            len(self.weight_loc.shape)
        )
        weight = pyro.sample(self._pyro_get_fullname("weight"), weight_q)
        self._guide_draw = weight
        if self.has_bias:
            bias_q = dist.Normal(self.bias_loc, self.bias_scale).to_event(len(self.bias_loc.shape))
            pyro.sample(self._pyro_get_fullname("bias"), bias_q)

    def sample(self, num_samples: int, seed: int = 0) -> tuple[Tensor, Tensor | None]:
        """Draws of the weight and bias from the layer's own mean-field guide (:meth:`guide`).

        ``W_s = weight_loc + weight_scale * eps_s`` and ``b_s = bias_loc + bias_scale * e_s``
        with the standard normal ``eps`` (all weights first) and ``e`` drawn, in that order,
        from a generator seeded by ``seed``; the global random state is not touched.

        Args:
            num_samples: `S >= 1` draws.
            seed: Seeds the draws.

        Returns:
            ``(weight, bias)``: `S x *batch_shape x o x d` and `S x *batch_shape x o` (None
            for a layer without bias), in the dtype of ``weight_loc``.

        Raises:
            InputDataError: ``num_samples < 1``.
        """
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise InputDataError(f"num_samples must be a positive integer, got {num_samples!r}")
        generator = torch.Generator().manual_seed(int(seed))
        loc, scale = self.weight_loc, self.weight_scale
        eps = torch.randn((num_samples, *loc.shape), generator=generator, dtype=loc.dtype)
        weight = loc + scale * eps
        if not self.has_bias:
            return weight, None
        bias_loc, bias_scale = self.bias_loc, self.bias_scale
        bias_eps = torch.randn(
            (num_samples, *bias_loc.shape), generator=generator, dtype=bias_loc.dtype
        )
        return weight, bias_loc + bias_scale * bias_eps

    def predictive(self, x: Tensor, num_samples: int, seed: int = 0) -> Tensor:
        """Draws of the layer's outputs ``x W_s^T + b_s`` under :meth:`sample`'s draws.

        Args:
            x: `*batch_shape x ... x d` inputs.
            num_samples: `S >= 1` draws.
            seed: Seeds the draws (the same seed gives the same draws as :meth:`sample`).

        Returns:
            `S x *batch_shape x ... x o` outputs.

        Raises:
            InputDataError: inputs of another width or batch shape, or ``num_samples < 1``.
        """
        if x.shape[-1] != self.in_features:
            raise InputDataError(f"expected {self.in_features} input features, got {x.shape[-1]}")
        batch = len(self.batch_shape)
        if batch and (x.dim() < batch + 1 or x.shape[:batch] != self.batch_shape):
            raise InputDataError(
                f"inputs must be {tuple(self.batch_shape)} x ... x {self.in_features}, got "
                f"{tuple(x.shape)}"
            )
        weight, bias = self.sample(num_samples, seed)
        if x.is_floating_point():
            weight = weight.to(x.dtype)
            bias = bias.to(x.dtype) if bias is not None else None
        middle = x.shape[batch:-1]  # the "..." dims
        rows = x.reshape(*self.batch_shape, -1, self.in_features)  # `*batch x N x d`
        if batch:
            out = torch.matmul(rows.unsqueeze(0), weight.transpose(-1, -2))  # S x *b x N x o
        else:  # (S o) x d times d x N: one matrix product for all draws
            flat = weight.reshape(-1, self.in_features) @ rows.T
            out = flat.reshape(num_samples, self.out_features, -1).transpose(-1, -2)
        if bias is not None:
            out = out + bias.unsqueeze(-2)
        return out.reshape(num_samples, *self.batch_shape, *middle, self.out_features)

    def _matmul(self, x: Tensor, weight: Tensor) -> Tensor:
        if self.batch_shape:
            return torch.matmul(x, weight.transpose(-1, -2))
        return torch.nn.functional.linear(x, weight)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: `*batch_shape x ... x d` inputs of any floating dtype (also inside
                ``pyro.plate`` contexts: the weight and bias are sampled outside them).

        Returns:
            `*batch_shape x ... x o` outputs in ``x``'s dtype.

        Raises:
            InputDataError: inputs of another width or a non-floating dtype.
        """
        if x.shape[-1] != self.in_features:
            raise InputDataError(f"expected {self.in_features} input features, got {x.shape[-1]}")
        if not x.is_floating_point():
            raise InputDataError(f"BayesianLinear needs floating-point inputs, got {x.dtype}")
        with _outside_plates():
            weight = self.weight
            bias = self.bias if self.has_bias else None
        draw, self._guide_draw = self._guide_draw, None
        use_estimator = self.training and self.estimator is not Estimator.REPARAM and weight is draw
        if not use_estimator:
            out = self._matmul(x, weight.to(x.dtype))
        elif self.estimator is Estimator.FLIPOUT:
            loc = self.weight_loc.to(x.dtype)
            mean = self._matmul(x, loc)
            sign_in = _random_signs(x.shape, x)
            sign_out = _random_signs(mean.shape, x)
            out = mean + self._matmul(x * sign_in, weight.to(x.dtype) - loc) * sign_out
        else:
            loc, scale = self.weight_loc.to(x.dtype), self.weight_scale.to(x.dtype)
            mean = self._matmul(x, loc)
            var = self._matmul(x.square(), scale.square())
            out = mean + var.clamp_min(1e-30).sqrt() * torch.randn_like(mean)
        if bias is not None:
            bias = bias.to(x.dtype)
            for _ in range(x.dim() - len(self.batch_shape) - 1 if self.batch_shape else 0):
                bias = bias.unsqueeze(-2)
            out = out + bias
        return out

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"estimator={self.estimator.value}, batch_shape={tuple(self.batch_shape)}"
        )


def _random_signs(shape: torch.Size, like: Tensor) -> Tensor:
    """Independent uniform ``{-1, 1}`` entries of ``shape`` (from the global torch generator).

    Draws one 31-bit random integer per 31 entries of the last dimension and uses its bits,
    which is several times cheaper than one random number per entry.
    """
    width = shape[-1] if len(shape) else 1
    words = -(-width // 31)
    draws = torch.randint(0, 2**31, (*shape[:-1], words, 1), device=like.device)
    bits = (draws >> torch.arange(31, device=like.device)) & 1
    signs = bits.flatten(-2)[..., :width].to(like.dtype) * 2 - 1
    return signs.reshape(shape)
