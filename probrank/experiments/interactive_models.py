"""The posteriors the interactive experiments compare, their options and how each is built.

:class:`PosteriorKind` names them; :data:`BUILDERS` maps each to a function that turns the
warm start of one seed and one question into a preference-model factory (a fresh
:class:`~probrank.interactive.model.PreferenceModel` per call, same prior every time, as
sessions and :func:`~probrank.interactive.simulate.simulate` need). :class:`InteractiveOptions`
gathers every setting with the defaults chosen on MEDIQA validation; a config's tables override
them (unknown keys are an error).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from probrank.exceptions import InputDataError
from probrank.experiments.interactive_data import Question
from probrank.experiments.interactive_warmstart import WarmStart, WarmStartOptions
from probrank.posteriors.gppl import GPPLPosterior, cosine_prior_mean
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import (
    CandidateSetPosterior,
    EnsemblePosterior,
    IncrementalUpdate,
    MCDropoutPosterior,
)
from probrank.posteriors.swag import SWAGUtilityPosterior

__all__ = [
    "BUILDERS",
    "GPPLOptions",
    "InteractiveOptions",
    "LaplaceOptions",
    "PosteriorKind",
    "SampleOptions",
    "model_factory",
    "needs_warm_start",
]


class PosteriorKind(str, Enum):
    """Posteriors over a question's candidate utilities."""

    MCDROPOUT = "mcdropout"
    """MC dropout, ``T`` passes, SGD update (``posteriors.neural.MCDropoutPosterior``)."""
    SWAG = "swag"
    """SWAG over the last layers, SGD update (``posteriors.swag.SWAGUtilityPosterior``)."""
    LAPLACE = "laplace"
    """Last-layer Laplace, closed-form update (``posteriors.laplace.LastLayerLaplacePosterior``)."""
    ENSEMBLE = "ensemble"
    """Deep ensemble, SGD update per member (``posteriors.neural.EnsemblePosterior``)."""
    GPPL = "gppl"
    """BoTorch ``PairwiseGP`` on fixed embeddings (``posteriors.gppl.GPPLPosterior``)."""


@dataclass(frozen=True)
class SampleOptions:
    """Sample-based posteriors: ``num_samples`` dropout passes / SWAG draws."""

    num_samples: int = 20


@dataclass(frozen=True)
class LaplaceOptions:
    """Last-layer Laplace: prior precision, residual variance, likelihood scale and link."""

    prior_precision: float = 10.0
    residual_variance: float = 0.1
    scale: float = 0.3
    link: str = "logistic"


@dataclass(frozen=True)
class GPPLOptions:
    """GPPL: the prior mean (``"cosine"`` or ``"warm_start"``) and the kernel's scales."""

    prior: str = "cosine"
    prior_scale: float = 1.0
    lengthscale_factor: float = 0.25
    outputscale: float = 1.0


@dataclass(frozen=True)
class InteractiveOptions:
    """Every setting of the interactive experiments (config tables of the same names)."""

    warm_start: WarmStartOptions = field(default_factory=WarmStartOptions)
    update: IncrementalUpdate = field(default_factory=IncrementalUpdate)
    mcdropout: SampleOptions = field(default_factory=SampleOptions)
    swag: SampleOptions = field(default_factory=SampleOptions)
    laplace: LaplaceOptions = field(default_factory=LaplaceOptions)
    gppl: GPPLOptions = field(default_factory=GPPLOptions)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> InteractiveOptions:
        """Defaults overridden by the tables ``[warm_start]``, ``[update]``, ``[mcdropout]``,
        ``[swag]``, ``[laplace]``, ``[gppl]`` of ``config``.

        Raises:
            InputDataError: An unknown key or a value of the wrong kind.
        """
        base = cls()
        changes = {}
        for f in dataclasses.fields(cls):
            table = config.get(f.name)
            if table:
                changes[f.name] = _override(getattr(base, f.name), table, f.name)
        return dataclasses.replace(base, **changes)

    def with_overrides(self, overrides: Mapping[str, Any]) -> InteractiveOptions:
        """A copy with ``{"table.key": value}`` overrides (as in a tuning grid)."""
        tables: dict[str, dict[str, Any]] = {}
        for name, value in overrides.items():
            table, _, key = name.partition(".")
            if not key:
                raise InputDataError(f"override {name!r} must be 'table.key'")
            tables.setdefault(table, {})[key] = value
        unknown = [t for t in tables if t not in {f.name for f in dataclasses.fields(self)}]
        if unknown:
            raise InputDataError(f"unknown options table {unknown[0]!r}")
        return dataclasses.replace(
            self, **{t: _override(getattr(self, t), v, t) for t, v in tables.items()}
        )


def _override(current: Any, table: Mapping[str, Any], name: str) -> Any:
    known = {f.name: f for f in dataclasses.fields(current)}
    values = {}
    for key, value in table.items():
        if key not in known:
            raise InputDataError(
                f"[{name}] has no option {key!r}; known: {', '.join(sorted(known))}"
            )
        old = getattr(current, key)
        if isinstance(old, tuple):
            value = tuple(value)
        elif isinstance(old, bool):
            if not isinstance(value, bool):
                raise InputDataError(f"[{name}] {key} must be true or false, got {value!r}")
        elif isinstance(old, int | float) and not isinstance(value, int | float):
            raise InputDataError(f"[{name}] {key} must be a number, got {value!r}")
        elif isinstance(old, int) and isinstance(value, float) and not value.is_integer():
            raise InputDataError(f"[{name}] {key} must be an integer, got {value!r}")
        values[key] = type(old)(value) if isinstance(old, int | float) else value
    return dataclasses.replace(current, **values)


Builder = Callable[[WarmStart, Question, InteractiveOptions, int], CandidateSetPosterior]


def needs_warm_start(kind: PosteriorKind, options: InteractiveOptions) -> bool:
    """Whether ``kind`` uses the warm-start network (GPPL with the cosine prior does not)."""
    return not (kind is PosteriorKind.GPPL and options.gppl.prior == "cosine")


def _mcdropout(warm: WarmStart, q: Question, o: InteractiveOptions, seed: int):  # type: ignore[no-untyped-def]
    return MCDropoutPosterior(
        warm.net,
        q.features,
        num_samples=o.mcdropout.num_samples,
        update=dataclasses.replace(o.update, seed=seed),
        prediction_seed=seed,
    )


def _swag(warm: WarmStart, q: Question, o: InteractiveOptions, seed: int):  # type: ignore[no-untyped-def]
    if warm.swag is None:
        raise InputDataError("the warm start has no SWAG posterior (train it with swag=True)")
    return SWAGUtilityPosterior(
        warm.net,
        warm.swag,
        q.features,
        layers=o.warm_start.swag_layers,
        num_samples=o.swag.num_samples,
        sample_seed=seed,
        update=dataclasses.replace(o.update, seed=seed),
    )


def _laplace(warm: WarmStart, q: Question, o: InteractiveOptions, seed: int):  # type: ignore[no-untyped-def]
    return LastLayerLaplacePosterior(
        warm.net,
        q.features,
        prior_precision=o.laplace.prior_precision,
        residual_variance=o.laplace.residual_variance,
        scale=o.laplace.scale,
        link=o.laplace.link,
    )


def _ensemble(warm: WarmStart, q: Question, o: InteractiveOptions, seed: int):  # type: ignore[no-untyped-def]
    if len(warm.members) < 2:
        raise InputDataError("the warm start has no ensemble (train it with ensemble=True)")
    return EnsemblePosterior(
        warm.members, q.features, update=dataclasses.replace(o.update, seed=seed)
    )


def _gppl(warm: WarmStart, q: Question, o: InteractiveOptions, seed: int):  # type: ignore[no-untyped-def]
    import torch

    hidden = q.features.shape[1] // 4
    options = o.gppl
    if options.prior == "cosine":
        prior = cosine_prior_mean(hidden, options.prior_scale)
    elif options.prior == "warm_start":
        net = _frozen_copy(warm)

        def prior(x: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return options.prior_scale * net(x.to(torch.float64))

    else:
        raise InputDataError(
            f"[gppl] prior must be 'cosine' or 'warm_start', got {options.prior!r}"
        )
    return GPPLPosterior(
        q.features,
        prior,
        kernel_dims=tuple(range(hidden, 2 * hidden)),  # the answer embedding v
        lengthscale_factor=options.lengthscale_factor,
        outputscale=options.outputscale,
        seed=seed,
    )


def _frozen_copy(warm: WarmStart):  # type: ignore[no-untyped-def]
    from probrank.posteriors.neural import as_float64_copy

    return as_float64_copy(warm.net)


BUILDERS: Mapping[PosteriorKind, Builder] = MappingProxyType(
    {
        PosteriorKind.MCDROPOUT: _mcdropout,
        PosteriorKind.SWAG: _swag,
        PosteriorKind.LAPLACE: _laplace,
        PosteriorKind.ENSEMBLE: _ensemble,
        PosteriorKind.GPPL: _gppl,
    }
)


def model_factory(
    kind: PosteriorKind,
    warm: WarmStart | None,
    question: Question,
    options: InteractiveOptions,
    seed: int,
) -> Callable[[], CandidateSetPosterior]:
    """A factory of fresh posteriors of ``kind`` over ``question``'s candidates.

    Args:
        kind: The posterior.
        warm: The seed's warm start (None only where :func:`needs_warm_start` is False).
        question: The question.
        options: Settings.
        seed: Seed of the posterior's own randomness (samples, update shuffling).
    """
    if warm is None and needs_warm_start(kind, options):
        raise InputDataError(f"posterior {kind.value!r} needs a warm start")
    builder = BUILDERS[kind]
    return lambda: builder(warm, question, options, seed)  # type: ignore[arg-type]
