"""How :class:`~probrank.models.interactive.model.InteractiveRanker` builds a fresh posterior
over one question's candidates, for each
:class:`~probrank.models.interactive.settings.PosteriorKind`.

:data:`BUILDERS` maps each kind to a function ``(warm start, features, settings, seed) ->``
a :class:`~probrank.posteriors.neural.CandidateSetPosterior` (a
:class:`~probrank.posteriors.protocol.PreferenceModel` with ``botorch_model()``). The same
arguments always build the same prior, as sessions (and their resumption) need; ``seed`` seeds
the posterior's own randomness (dropout masks, SWAG draws, the update's shuffling, GPPL's
fitting). :data:`GPPL_PRIORS` maps each :class:`~probrank.models.interactive.settings.GPPLPrior`
to the prior mean it gives GPPL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType

import torch
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.models.interactive.settings import (
    GPPLPrior,
    GPPLSettings,
    InteractiveRankerSettings,
    PosteriorKind,
)
from probrank.models.interactive.warmstart import WarmStart
from probrank.posteriors.gppl import GPPLPosterior, cosine_prior_mean
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import (
    CandidateSetPosterior,
    EnsemblePosterior,
    MCDropoutPosterior,
    as_float64_copy,
)
from probrank.posteriors.swag import SWAGUtilityPosterior

__all__ = ["BUILDERS", "GPPL_PRIORS", "Builder", "PriorMean", "build_posterior"]

Builder = Callable[
    [WarmStart | None, Tensor, InteractiveRankerSettings, int], CandidateSetPosterior
]
"""``(warm start, n x d features, settings, seed) -> posterior``."""

PriorMean = Callable[[Tensor], Tensor]
"""`... x d` features -> `...` prior mean utilities."""


def _warm(warm: WarmStart | None, kind: PosteriorKind) -> WarmStart:
    if warm is None:
        raise InputDataError(f"posterior {kind.value!r} needs a warm start: call fit(lists) first")
    return warm


def _mcdropout(
    warm: WarmStart | None, x: Tensor, s: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    return MCDropoutPosterior(
        _warm(warm, PosteriorKind.MCDROPOUT).net,
        x,
        num_samples=s.mcdropout.num_samples,
        update=dataclasses.replace(s.update, seed=seed),
        prediction_seed=seed,
    )


def _swag(
    warm: WarmStart | None, x: Tensor, s: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    fitted = _warm(warm, PosteriorKind.SWAG)
    if fitted.swag is None:
        raise InputDataError("the warm start has no SWAG posterior (train it with swag=True)")
    return SWAGUtilityPosterior(
        fitted.net,
        fitted.swag,
        x,
        layers=s.warm_start.swag_layers,
        num_samples=s.swag.num_samples,
        sample_seed=seed,
        update=dataclasses.replace(s.update, seed=seed),
    )


def _laplace(
    warm: WarmStart | None, x: Tensor, s: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    return LastLayerLaplacePosterior(
        _warm(warm, PosteriorKind.LAPLACE).net,
        x,
        prior_precision=s.laplace.prior_precision,
        residual_variance=s.laplace.residual_variance,
        scale=s.laplace.scale,
        link=s.laplace.link,
    )


def _ensemble(
    warm: WarmStart | None, x: Tensor, s: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    fitted = _warm(warm, PosteriorKind.ENSEMBLE)
    if len(fitted.members) < 2:
        raise InputDataError("the warm start has no ensemble (train it with ensemble=True)")
    return EnsemblePosterior(fitted.members, x, update=dataclasses.replace(s.update, seed=seed))


def _cosine_prior(warm: WarmStart | None, hidden: int, options: GPPLSettings) -> PriorMean:
    return cosine_prior_mean(hidden, options.prior_scale)


def _warm_start_prior(warm: WarmStart | None, hidden: int, options: GPPLSettings) -> PriorMean:
    net = as_float64_copy(_warm(warm, PosteriorKind.GPPL).net)

    def prior(x: Tensor) -> Tensor:
        with torch.no_grad():
            return options.prior_scale * net(x.to(torch.float64))

    return prior


GPPL_PRIORS: Mapping[GPPLPrior, Callable[[WarmStart | None, int, GPPLSettings], PriorMean]] = (
    MappingProxyType({GPPLPrior.COSINE: _cosine_prior, GPPLPrior.WARM_START: _warm_start_prior})
)


def _gppl(
    warm: WarmStart | None, x: Tensor, s: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    hidden = x.shape[1] // 4
    prior = GPPL_PRIORS[GPPLPrior(s.gppl.prior)](warm, hidden, s.gppl)
    return GPPLPosterior(
        x,
        prior,
        kernel_dims=tuple(range(hidden, 2 * hidden)),  # the answer embedding v
        lengthscale_factor=s.gppl.lengthscale_factor,
        outputscale=s.gppl.outputscale,
        seed=seed,
    )


BUILDERS: Mapping[PosteriorKind, Builder] = MappingProxyType(
    {
        PosteriorKind.MCDROPOUT: _mcdropout,
        PosteriorKind.SWAG: _swag,
        PosteriorKind.LAPLACE: _laplace,
        PosteriorKind.ENSEMBLE: _ensemble,
        PosteriorKind.GPPL: _gppl,
    }
)


def build_posterior(
    warm: WarmStart | None, features: Tensor, settings: InteractiveRankerSettings, seed: int
) -> CandidateSetPosterior:
    """A fresh posterior of ``settings.posterior`` over the candidates' `n x d` ``features``.

    Args:
        warm: The warm start (None only where ``settings.needs_warm_start`` is False).
        features: `n x d` pair features (the encoder's ``(u, v, u*v, |u-v|)``).
        settings: The settings.
        seed: Seed of the posterior's own randomness.

    Raises:
        InputDataError: no warm start (or none with what the posterior needs), or features
            the posterior cannot take.
    """
    return BUILDERS[settings.posterior](warm, features, settings, seed)
