"""Posteriors (draws, NUTS chains, Pyro MCMC, Bayesian layers, Laplace Gaussians) to ArviZ.

:func:`~probrank.diagnostics.to_inference_data` is one verb for every kind of posterior probrank
produces; the source's type picks the converter (a :func:`functools.singledispatch` registry):

========================================  =================================================
source                                    posterior group
========================================  =================================================
``{name: chains x draws x *shape}``       the draws (``chains=False``: `draws x *shape`,
                                          one chain, e.g. guide or SWAG samples)
:class:`~probrank.inference.NutsSamples`  the chains, plus ``sample_stats.diverging``
(:func:`~probrank.inference.fit_nuts`)
:class:`pyro.infer.MCMC`                  ``get_samples(group_by_chain=True)`` plus
                                          ``sample_stats.diverging``
a :class:`~probrank.nn.BayesianLinear`    ``num_samples`` draws of every ``BayesianLinear``
or a ``PyroModule``                       layer's ``weight`` and ``bias`` from its fitted
holding some (e.g. the QLFusion net)      mean-field guide, or from ``guide=`` (one chain)
a ``MultivariateNormal`` or               ``num_samples`` draws of a Laplace (Gaussian)
``(mean, covariance)``                    posterior, variable ``var_name`` (one chain)
ArviZ data (``InferenceData``,            returned unchanged (sampling options are
``DataTree``)                             ignored; options that would change it refused)
========================================  =================================================

A layer fitted with another guide than its own (an ``AutoNormal`` over the whole model, say)
keeps its own guide parameters at their initial values, which describe no posterior: such a
layer is refused with a clear error unless the fitted guide is passed as ``guide=`` (its draws
of the layer's sites are then converted), so a summary never silently shows an untrained layer.

Pyro models fitted by SVI or NUTS, with posterior predictive draws and pointwise
log-likelihoods (for PPC and LOO), go through :func:`probrank.diagnostics.from_pyro`.

Everything is built by the installed ``arviz.from_dict`` (through :mod:`probrank._arviz`): the
result is the installed line's container, ``InferenceData`` on ArviZ 0.x and
``xarray.DataTree`` on 1.x, with the same groups. Dims are named: a layer's weight is
``(member..., output, feature)``, a Laplace posterior over candidates ``(candidate,)``; pass
``dims``/``coords`` to rename or label them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import singledispatch
from typing import Any

import numpy as np
import torch
from pyro import poutine
from pyro.infer import MCMC
from pyro.nn import PyroModule
from torch import Tensor
from torch.distributions import MultivariateNormal

from probrank._arviz import build, is_arviz_data
from probrank.diagnostics._data import as_numpy
from probrank.diagnostics.summary import summary
from probrank.exceptions import InputDataError
from probrank.inference.mcmc import NutsSamples, divergence_mask
from probrank.nn.bayesian_linear import BayesianLinear

__all__ = [
    "from_draws",
    "guide_draws",
    "layer_draws",
    "output_layer_dims",
    "summarize",
    "summary",
    "to_inference_data",
]

ArrayLike = Tensor | np.ndarray
Dims = Mapping[str, Sequence[str]]
Coords = Mapping[str, Sequence[Any]]


def output_layer_dims(
    prefix: str, in_features: int, out_features: int
) -> tuple[dict[str, list[str]], dict[str, Sequence[Any]]]:
    """Dims and coords for a :class:`~probrank.nn.bayesian_linear.BayesianLinear` layer.

    Args:
        prefix: The layer's site prefix (e.g. ``"output"`` for sites ``output.weight``).
        in_features: ``d``.
        out_features: ``o``.

    Returns:
        ``(dims, coords)`` for :func:`to_inference_data`: the weight has dims
        ``("output", "hidden")`` and the bias ``("output",)``.
    """
    dims = {f"{prefix}.weight": ["output", "hidden"], f"{prefix}.bias": ["output"]}
    coords: dict[str, Sequence[Any]] = {
        "output": list(range(out_features)),
        "hidden": list(range(in_features)),
    }
    return dims, coords


def from_draws(
    draws: Mapping[str, ArrayLike],
    *,
    chains: bool = True,
    dims: Dims | None = None,
    coords: Coords | None = None,
    sample_stats: Mapping[str, ArrayLike] | None = None,
    posterior_predictive: Mapping[str, ArrayLike] | None = None,
    log_likelihood: Mapping[str, ArrayLike] | None = None,
    observed_data: Mapping[str, ArrayLike] | None = None,
) -> Any:
    """ArviZ data from posterior draws (and optionally the other groups).

    Args:
        draws: ``{name: chains x draws x *shape}`` (``draws x *shape`` with ``chains=False``).
        chains: Whether the first dimension of every sampled group indexes chains.
        dims: Names of each variable's dims after ``chain`` and ``draw`` (shared by groups).
        coords: Coordinates of the named dims.
        sample_stats: Per-draw sampler statistics (e.g. ``diverging``), same layout.
        posterior_predictive: Predictive draws, same layout as ``draws``.
        log_likelihood: Pointwise log-likelihood draws, same layout (for LOO).
        observed_data: Observations, without chain/draw dims.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).

    Raises:
        InputDataError: no draws, or sampled groups whose (chain, draw) dims disagree.
    """
    if not draws:
        raise InputDataError("no posterior draws to convert")

    def sampled(group: Mapping[str, ArrayLike] | None) -> dict[str, np.ndarray]:
        out = {}
        for name, value in (group or {}).items():
            array = as_numpy(value)
            out[name] = array if chains else array[None]
        return out

    groups = {
        "posterior": sampled(draws),
        "sample_stats": sampled(sample_stats),
        "posterior_predictive": sampled(posterior_predictive),
        "log_likelihood": sampled(log_likelihood),
        "observed_data": {k: as_numpy(v) for k, v in (observed_data or {}).items()},
    }
    lead = {
        v.shape[:2]
        for name, group in groups.items()
        if name != "observed_data"
        for v in group.values()
    }
    if any(len(shape) < 2 for shape in lead) or len(lead) != 1:
        raise InputDataError(f"draws disagree on (chain, draw) dims: {sorted(lead)}")
    return build(groups, dims=dims, coords=coords)


@singledispatch
def to_inference_data(source: Any, **options: Any) -> Any:
    """Convert a posterior to ArviZ data (see the module docstring for the sources).

    Args:
        source: Draws, NUTS samples, a Pyro ``MCMC``, a Bayesian layer or module, a Gaussian
            (Laplace) posterior, or ArviZ data.
        **options: Per source: ``chains``; ``num_samples`` and ``seed`` (sampled sources);
            ``guide`` and ``guide_args`` (Bayesian layers fitted with another guide than
            their own); ``var_name`` (Gaussians); and for all but ArviZ data: ``dims``,
            ``coords``, ``posterior_predictive``, ``log_likelihood``, ``observed_data``.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).

    Raises:
        InputDataError: an unsupported source or inconsistent draws.
    """
    if is_arviz_data(source):
        return _arviz_data(source, **options)
    raise InputDataError(
        f"cannot convert a {type(source).__name__} to ArviZ data; give draws, NutsSamples, a "
        "pyro MCMC, a BayesianLinear (or a PyroModule holding one) or a MultivariateNormal"
    )


_SAMPLING_OPTIONS = frozenset({"num_samples", "seed", "chains"})


def _arviz_data(source: Any, **options: Any) -> Any:
    """ArviZ data as it is: its draws are already drawn, so sampling options do not apply;
    options that would change the data (dims, coords, extra groups) are refused."""
    changing = sorted(set(options) - _SAMPLING_OPTIONS)
    if changing:
        raise InputDataError(
            f"ArviZ data is returned unchanged; cannot apply {changing} to it (rename or add "
            "groups with ArviZ itself)"
        )
    return source


@to_inference_data.register(Mapping)
def _mapping(source: Mapping[str, ArrayLike], **options: Any) -> Any:
    # ArviZ 0.x InferenceData is a Mapping of groups: it must not be read as draws
    if is_arviz_data(source):
        return _arviz_data(source, **options)
    return from_draws(source, **options)


def _chained(source: object, options: dict[str, Any]) -> None:
    """Drop ``chains=True`` (the source always has a chain dimension); refuse ``False``."""
    if not options.pop("chains", True):
        raise InputDataError(
            f"a {type(source).__name__} always has a chain dimension; drop chains=False"
        )


@to_inference_data.register(NutsSamples)
def _nuts(source: NutsSamples, **options: Any) -> Any:
    _chained(source, options)
    stats = {**source.sample_stats, **dict(options.pop("sample_stats", None) or {})}
    return from_draws(dict(source), chains=True, sample_stats=stats, **options)


@to_inference_data.register(MCMC)
def _mcmc(source: MCMC, **options: Any) -> Any:
    _chained(source, options)
    samples = {k: v.detach() for k, v in source.get_samples(group_by_chain=True).items()}
    if not samples:
        raise InputDataError("the MCMC object holds no samples; call run() first")
    draws = next(iter(samples.values())).shape[1]
    diverging, _ = divergence_mask(source, draws)
    stats = {"diverging": diverging, **dict(options.pop("sample_stats", None) or {})}
    return from_draws(samples, chains=True, sample_stats=stats, **options)


def _site(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def guide_draws(
    guide: Callable[..., Any], *args: Any, num_samples: int = 500, **kwargs: Any
) -> dict[str, Tensor]:
    """`S x *shape` draws of the latent sites of a guide (call inside a seeded scope).

    Args:
        guide: A fitted Pyro guide (autoguide, ``PyroModule`` method, or function).
        *args: The guide's (= the model's) arguments.
        num_samples: `S` draws.
        **kwargs: Keyword arguments of the guide.

    Returns:
        ``{site: S x *shape}``.
    """
    if num_samples < 1:
        raise InputDataError(f"num_samples must be positive, got {num_samples}")
    draws: list[dict[str, Tensor]] = []
    for _ in range(num_samples):
        trace = poutine.trace(guide).get_trace(*args, **kwargs)
        draws.append({name: torch.as_tensor(site["value"]).detach()
                      for name, site in trace.nodes.items()
                      if site["type"] == "sample" and not site["is_observed"]})  # fmt: skip
    if not draws[0]:
        raise InputDataError("the guide has no latent sample site")
    return {name: torch.stack([d[name] for d in draws]) for name in draws[0]}


def layer_draws(
    module: PyroModule,
    num_samples: int = 1000,
    *,
    seed: int = 0,
    guide: Callable[..., Any] | None = None,
    guide_args: Sequence[Any] = (),
) -> tuple[dict[str, Tensor], dict[str, list[str]]]:
    """Draws of every :class:`BayesianLinear` layer's weight and bias from its fitted guide.

    Without ``guide`` the draws come from each layer's own mean-field guide
    (:meth:`~probrank.nn.bayesian_linear.BayesianLinear.guide`), which must have been fitted:
    a layer whose own guide parameters are still at their initial values (never trained, or
    trained through another guide) is refused. With ``guide`` (e.g. the ``AutoNormal`` that
    SVI fitted) the draws are that guide's samples of the layers' sites.

    Args:
        module: A ``BayesianLinear`` or a ``PyroModule`` holding some.
        num_samples: `S` draws.
        seed: Seeds the draws (the caller's RNG state is restored).
        guide: The fitted guide to draw from, when it is not the layers' own.
        guide_args: Positional arguments the guide needs (autoguides need none once fitted).

    Returns:
        ``({site: S x *batch x o x d | S x *batch x o}, {site: dims})``: site names as in the
        model trace (``output.weight``); dims ``(member, output, feature)`` for a single
        layer, prefixed by the layer's name (``output.feature``) when there are several.

    Raises:
        InputDataError: No ``BayesianLinear`` layer; a layer with an unfitted own guide and no
            ``guide``; or a ``guide`` without the layers' sites.
    """
    if num_samples < 1:
        raise InputDataError(f"num_samples must be positive, got {num_samples}")
    layers = [m for _, m in module.named_modules() if isinstance(m, BayesianLinear)]
    if not layers:
        raise InputDataError(f"{type(module).__name__} holds no BayesianLinear layer")
    if guide is not None:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            sampled = guide_draws(guide, *guide_args, num_samples=num_samples)
    draws: dict[str, Tensor] = {}
    dims: dict[str, list[str]] = {}
    generator = torch.Generator().manual_seed(seed)
    for layer in layers:
        prefix = layer._pyro_name
        tag = "" if len(layers) == 1 else f"{prefix}."
        batch = [f"{tag}member" if i == 0 else f"{tag}member_{i}"
                 for i in range(len(layer.batch_shape))]  # fmt: skip
        names = ["weight", "bias"] if layer.has_bias else ["weight"]
        if guide is not None:
            missing = [_site(prefix, n) for n in names if _site(prefix, n) not in sampled]
            if missing:
                raise InputDataError(f"the guide samples no site(s) {missing}")
            draws.update({_site(prefix, n): sampled[_site(prefix, n)] for n in names})
        elif not layer.guide_fitted:
            raise InputDataError(
                f"BayesianLinear layer {prefix or type(layer).__name__!r} still has the initial "
                "parameters of its own guide, so it holds no posterior to summarise; if it was "
                "fitted with another guide (e.g. AutoNormal), pass that guide: "
                "summarize(module, guide=guide)"
            )
        else:
            params = [("weight", layer.weight_loc, layer.weight_scale)]
            if layer.has_bias:
                params.append(("bias", layer.bias_loc, layer.bias_scale))
            with torch.no_grad():
                for name, loc, scale in params:
                    eps = torch.randn((num_samples, *loc.shape), generator=generator,
                                      dtype=loc.dtype)  # fmt: skip
                    draws[_site(prefix, name)] = loc.detach() + scale.detach() * eps
        dims[_site(prefix, "weight")] = [*batch, f"{tag}output", f"{tag}feature"]
        dims[_site(prefix, "bias")] = [*batch, f"{tag}output"]
    return draws, dims


@to_inference_data.register(PyroModule)
def _module(
    source: PyroModule,
    *,
    num_samples: int = 1000,
    seed: int = 0,
    guide: Callable[..., Any] | None = None,
    guide_args: Sequence[Any] = (),
    **options: Any,
) -> Any:
    draws, dims = layer_draws(source, num_samples, seed=seed, guide=guide, guide_args=guide_args)
    dims.update({k: list(v) for k, v in dict(options.pop("dims", None) or {}).items()})
    return from_draws(draws, chains=False, dims=dims, **options)


def _gaussian_draws(mean: Tensor, covariance: Tensor, num_samples: int, seed: int) -> Tensor:
    """`S x *batch x n` draws of ``N(mean, covariance)`` (Cholesky with growing jitter)."""
    if num_samples < 1:
        raise InputDataError(f"num_samples must be positive, got {num_samples}")
    if mean.dim() < 1 or covariance.shape != (*mean.shape, mean.shape[-1]):
        raise InputDataError(
            f"mean must be `... x n` and covariance `... x n x n`, got {tuple(mean.shape)} and "
            f"{tuple(covariance.shape)}"
        )
    cov = covariance.detach().to(torch.float64)
    cov = 0.5 * (cov + cov.transpose(-1, -2))
    eye = torch.eye(cov.shape[-1], dtype=cov.dtype)
    scale = float(cov.diagonal(dim1=-2, dim2=-1).abs().mean().clamp_min(1e-12))
    for jitter in (0.0, 1e-10, 1e-8, 1e-6, 1e-4):
        root, info = torch.linalg.cholesky_ex(cov + jitter * scale * eye)
        if not bool(info.any()):
            break
    else:
        raise InputDataError("the covariance is not positive semi-definite")
    generator = torch.Generator().manual_seed(seed)
    eps = torch.randn((num_samples, *mean.shape), generator=generator, dtype=cov.dtype)
    return mean.detach().to(cov.dtype) + (root @ eps.unsqueeze(-1)).squeeze(-1)


def _gaussian(
    mean: Tensor,
    covariance: Tensor,
    *,
    num_samples: int = 1000,
    seed: int = 0,
    var_name: str = "f",
    **options: Any,
) -> Any:
    draws = _gaussian_draws(mean, covariance, num_samples, seed)
    dims = dict(options.pop("dims", None) or {})
    if var_name not in dims:
        batch = [f"batch_{i}" for i in range(mean.dim() - 1)]
        dims[var_name] = [*batch, "candidate"]
    return from_draws({var_name: draws}, chains=False, dims=dims, **options)


@to_inference_data.register(MultivariateNormal)
def _mvn(source: MultivariateNormal, **options: Any) -> Any:
    return _gaussian(source.mean, source.covariance_matrix, **options)


@to_inference_data.register(tuple)
def _mean_covariance(source: tuple[Tensor, Tensor], **options: Any) -> Any:
    if len(source) != 2:
        raise InputDataError("a Gaussian posterior tuple must be (mean, covariance)")
    mean, covariance = (torch.as_tensor(t) for t in source)
    return _gaussian(mean, covariance, **options)


def summarize(
    source: Any,
    *,
    hdi_prob: float | None = None,
    var_names: Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """One call from a fitted posterior to its ArviZ summary table.

    ``summarize(net)`` for a fitted QLFusion net (its Bayesian output layer, fitted with the
    layer's own guide), ``summarize(layer, guide=auto_guide)`` for a layer fitted with an
    autoguide, ``summarize(fit_nuts(model, ...))`` for NUTS draws (with R-hat, bulk/tail ESS
    and the divergences in ``table.attrs``), ``summarize(mvn)`` for a Laplace posterior, or
    any ArviZ data.

    Args:
        source: Anything :func:`to_inference_data` accepts.
        hdi_prob: An HDI of this mass (default: the installed ArviZ's summary interval).
        var_names: Variables to summarise (default: all).
        **options: Conversion options (``num_samples``, ``seed``, ``guide``, ``dims``, ...).

    Returns:
        The :func:`~probrank.diagnostics.summary.summary` table (a ``pandas.DataFrame``,
        equal to :func:`arviz.summary` of the converted data).

    Raises:
        InputDataError: The source holds no posterior (e.g. a layer whose own guide was never
            fitted and no ``guide``), or cannot be converted.
    """
    return summary(to_inference_data(source, **options), hdi_prob=hdi_prob, var_names=var_names)
