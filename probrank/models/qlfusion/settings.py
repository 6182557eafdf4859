"""The settings of QLFusion: one typed, frozen object for the model, ``probrank fuse`` and the
``qlfusion_cv`` protocol (whose ``[quantifier]`` table maps onto it key for key).

Defaults are the model card's (``models/qlfusion/*.toml``): the paper's training settings with
a cap of 1000 SVI steps per quantifier and 50 trees for the random-forest variant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from probrank._config import SchemaError
from probrank._plugins import PluginField, PluginKind, is_plugin, resolve
from probrank.exceptions import InputDataError
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    check_unit_interval,
    int_tuple,
    set_enum,
)
from probrank.nn.bayesian_linear import Estimator

__all__ = ["PRIORS", "PROPORTION_LIKELIHOODS", "QLFusionSettings", "WeightRule"]


class WeightRule(str, Enum):
    """How the posterior draws of a list's proportion become its fusion weight."""

    MEAN = "mean"
    """The posterior mean (the paper's rule)."""
    LOWER = "lower"
    """The ``lower_quantile`` quantile of the draws: uncertain lists weigh less."""


def _normal_prior(scale: float = 1.0) -> Any:
    import pyro.distributions as dist

    return dist.Normal(0.0, scale)


def _binomial(total_count: int) -> Any:
    from probrank.likelihoods import binomial_proportion

    return binomial_proportion(total_count)


def _beta_binomial(total_count: int, concentration: float = 10.0) -> Any:
    from probrank.likelihoods import beta_binomial_proportion

    return beta_binomial_proportion(total_count, concentration)


def _logit_normal(total_count: int, scale: float = 1.0) -> Any:
    from probrank.models.qlfusion.likelihoods import logit_normal_proportion

    return logit_normal_proportion(total_count, scale)


def _latent_beta_binomial(
    total_count: int, prior_median: float = 10.0, prior_sd: float = 1.0
) -> Any:
    from probrank.models.qlfusion.likelihoods import latent_beta_binomial

    return latent_beta_binomial(total_count, prior_median, prior_sd)


PRIORS: Mapping[str, Callable[..., Any]] = {"normal": _normal_prior}
"""Built-in priors of the output layer's weights, by name: ``fn(**prior_args) -> Distribution``
(``"normal"``: N(0, ``scale``), the paper's with scale 1)."""

PROPORTION_LIKELIHOODS: Mapping[str, Callable[..., Any]] = {
    "binomial": _binomial,
    "beta_binomial": _beta_binomial,
    "logit_normal": _logit_normal,
    "latent_beta_binomial": _latent_beta_binomial,
}
"""Built-in likelihoods of the relevant counts, by name: ``fn(total_count, **likelihood_args)
-> (logits -> Distribution)`` (``"binomial"``: the paper's; ``"beta_binomial"``: over-dispersed,
``concentration`` c, :func:`probrank.likelihoods.beta_binomial_proportion`;
``"logit_normal"``: hierarchical, a Normal(0, ``scale``) random effect per list on the logit,
:func:`probrank.models.qlfusion.likelihoods.logit_normal_proportion`;
``"latent_beta_binomial"``: a beta-binomial whose concentration each run's quantifier learns
under a LogNormal(log ``prior_median``, ``prior_sd``) prior,
:class:`probrank.models.qlfusion.likelihoods.LatentConcentration`)."""


class _NamedLikelihood:
    """A config's likelihood, named after its ``"module:callable"`` in messages; its declared
    ``mean_proportion`` (if any) kept."""

    def __init__(self, likelihood: Callable[[Any], Any], name: str, target: str) -> None:
        self.likelihood = likelihood
        self.name = name
        self.target = target
        declared = getattr(likelihood, "mean_proportion", None)
        if declared is not None:
            self.mean_proportion = declared

    def __call__(self, logits: Any) -> Any:
        return self.likelihood(logits)


class _PluginLikelihood:
    """``total_count -> likelihood`` of a config's ``"module:callable"`` (a resolved plug-in),
    whose likelihoods carry the callable's name (:func:`probrank.likelihoods.likelihood_name`)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.target = spec.target
        self.name = f"{spec.target!r} (QLFusion setting likelihood)"

    def __call__(self, total_count: int) -> Any:
        from torch.distributions import Distribution

        from probrank.models.qlfusion.likelihoods import LatentConcentration

        built = self.spec.build(total_count)
        if isinstance(built, (Distribution, LatentConcentration)) or not callable(built):
            return built  # refused (or recognised) by the network
        return _NamedLikelihood(built, self.name, self.spec.target)


def _plugin_field(kind: PluginKind, builtins: Mapping[str, Any], default: str) -> Any:
    return field(default=default, metadata={"plugin": PluginField(kind, tuple(builtins))})


@dataclass(frozen=True)
class QLFusionSettings:
    """Settings of :class:`~probrank.models.qlfusion.QLFusion` (the model card's values by
    default).

    Attributes:
        depth: `k`, the list length the quantifiers read and fusion uses.
        hidden: Hidden width of the quantifier.
        lr: Adam learning rate.
        batch_sizes: Candidate mini-batch sizes, one chosen per run on validation MAE.
        max_epochs: Epoch limit (in each batch size's own epochs).
        patience: Early-stopping patience on validation MAE, in epochs.
        max_steps: Cap on SVI steps (None: no cap; not in the paper, a compute budget).
        estimator: Gradient estimator of the Bayesian output layer.
        init_scale: Initial standard deviation of the output layer's guide.
        validation_fraction: Share of the training topics :meth:`~QLFusion.fit` holds out for
            validation (at least one topic; cross-fitting validates on a whole fold instead).
        posterior_samples: Draws of the output layer per prediction.
        weight_rule: How draws become a fusion weight in :meth:`~QLFusion.fit` /
            :meth:`~QLFusion.fuse` (each cross-fitting variant names its own rule).
        lower_quantile: The quantile of the ``lower`` rule.
        credible_level: Mass of the credible intervals :meth:`QLFusion.proportions` reports.
        relevance_level: Lowest qrels grade counted relevant.
        rf_trees: Trees of the random-forest variant (``qlfusion_rf``) of cross-fitting.
        prior: The output layer's weight prior: a name of :data:`PRIORS` or your own
            ``"module.path:callable"`` returning a Pyro distribution over one weight.
        prior_args: Keyword arguments of ``prior``.
        likelihood: The likelihood of the relevant counts of the Bayesian variants: a name of
            :data:`PROPORTION_LIKELIHOODS` (default ``"latent_beta_binomial"``: its held-out
            90% predictive intervals cover 0.93 of Robust03's and 0.92 of CLEF TAR's lists,
            the paper's ``"binomial"`` 0.36 and 0.27, with fusion within 0.005 of it; the
            QLFusion card) or your own ``"module.path:callable"``
            ``fn(total_count, **likelihood_args)`` returning a callable of logits `... x m`
            to a distribution with batch shape `... x m` (:mod:`probrank._plugins` checks it).
        likelihood_args: Keyword arguments of ``likelihood``.
        plugin_folder: A folder put first on the import path while a ``"module.path:callable"``
            prior or likelihood is imported (a config's folder: the ``qlfusion_cv`` protocol
            sets it, so that the module beside the config imports in every process, Ray
            workers included; on several machines it must be on a shared file system); None:
            the import path as it is.
        progress: Show a progress bar while training (tqdm).
    """

    depth: int = 100
    hidden: int = 32
    lr: float = 5e-4
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    max_epochs: int = 500
    patience: int = 20
    max_steps: int | None = 1000
    estimator: Estimator = Estimator.FLIPOUT
    init_scale: float = 1e-2
    validation_fraction: float = 0.1
    posterior_samples: int = 100
    weight_rule: WeightRule = WeightRule.MEAN
    lower_quantile: float = 0.1
    credible_level: float = 0.9
    relevance_level: int = 1
    rf_trees: int = 50
    prior: str = _plugin_field(PluginKind.PRIOR, PRIORS, "normal")
    prior_args: dict[str, float] = field(default_factory=dict)
    likelihood: str = _plugin_field(
        PluginKind.PROPORTION_LIKELIHOOD, PROPORTION_LIKELIHOODS, "latent_beta_binomial"
    )
    likelihood_args: dict[str, float] = field(default_factory=dict)
    plugin_folder: str | None = None
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("depth", "hidden", "max_epochs", "patience", "posterior_samples"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("rf_trees", self.rf_trees)
        check_positive_int("max_steps", self.max_steps, allow_none=True)
        object.__setattr__(self, "batch_sizes", int_tuple("batch_sizes", self.batch_sizes))
        check_positive("lr", self.lr)
        check_positive("init_scale", self.init_scale)
        check_fraction("validation_fraction", self.validation_fraction)
        check_unit_interval("lower_quantile", self.lower_quantile)
        check_unit_interval("credible_level", self.credible_level)
        if isinstance(self.relevance_level, bool) or not isinstance(self.relevance_level, int):
            raise InputDataError(
                f"relevance_level must be an integer, got {self.relevance_level!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputDataError(f"seed must be an integer, got {self.seed!r}")
        if self.plugin_folder is not None and not isinstance(self.plugin_folder, str):
            raise InputDataError(f"plugin_folder must be a folder, got {self.plugin_folder!r}")
        if not isinstance(self.progress, bool):
            raise InputDataError(f"progress must be true or false, got {self.progress!r}")
        set_enum(self, "estimator", Estimator)
        set_enum(self, "weight_rule", WeightRule)
        for name, builtins in (("prior", PRIORS), ("likelihood", PROPORTION_LIKELIHOODS)):
            value, args = getattr(self, name), getattr(self, f"{name}_args")
            if not isinstance(value, str) or not (value in builtins or is_plugin(value)):
                known = ", ".join(repr(b) for b in builtins)
                raise InputDataError(
                    f"{name} must be one of {known} or 'module.path:callable', got {value!r}"
                )
            if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
                raise InputDataError(f"{name}_args must be a table of named values, got {args!r}")
            object.__setattr__(self, f"{name}_args", dict(args))
        self._check_builtin_args()

    def _check_builtin_args(self) -> None:
        """Build the built-in prior and likelihood once so that bad arguments (an unknown
        name, a concentration that is not positive) fail here, in one line."""
        for name, builtins, first in (
            ("prior", PRIORS, ()),
            ("likelihood", PROPORTION_LIKELIHOODS, (self.depth,)),
        ):
            value, args = getattr(self, name), getattr(self, f"{name}_args")
            if value not in builtins:
                continue
            try:
                builtins[value](*first, **args)
            except InputDataError as exc:
                raise InputDataError(f"{name}_args of {value!r}: {exc}") from None
            except (TypeError, ValueError) as exc:
                raise InputDataError(
                    f"{name}_args {args!r} do not fit the {value!r} {name}: "
                    + str(exc).splitlines()[0]
                ) from None

    __hash__ = None  # type: ignore[assignment]  # the *_args tables are dicts

    def prior_distribution(self) -> Any:
        """The output layer's weight prior (a Pyro distribution over one weight)."""
        if self.prior in PRIORS:
            return PRIORS[self.prior](**self.prior_args)
        return resolve(
            self.prior, self.prior_args, PluginKind.PRIOR, key="prior", folder=self._folder()
        ).build()

    def likelihood_factory(self) -> Callable[[int], Any]:
        """``total_count -> (logits -> Distribution)``: the counts' likelihood."""
        args = self.likelihood_args
        if self.likelihood in PROPORTION_LIKELIHOODS:
            builtin = PROPORTION_LIKELIHOODS[self.likelihood]
            return lambda total_count: builtin(total_count, **args)
        spec = resolve(
            self.likelihood,
            args,
            PluginKind.PROPORTION_LIKELIHOOD,
            key="likelihood",
            folder=self._folder(),
        )
        return _PluginLikelihood(spec)

    def _folder(self) -> Path | None:
        return None if self.plugin_folder is None else Path(self.plugin_folder)

    @property
    def names_plugins(self) -> bool:
        """Whether the prior or the likelihood is a ``"module.path:callable"``."""
        return is_plugin(self.prior) or is_plugin(self.likelihood)

    @property
    def papers_model(self) -> bool:
        """Whether the prior and likelihood are the paper's (N(0, 1), binomial)."""
        return (
            self.prior == "normal"
            and self.prior_args in ({}, {"scale": 1.0})
            and self.likelihood == "binomial"
            and not self.likelihood_args
        )

    @classmethod
    def from_table(cls, table: Mapping[str, Any], **fixed: Any) -> QLFusionSettings:
        """Settings from a config table (a TOML ``[quantifier]``), key for key.

        Args:
            table: ``{field: value}``; TOML arrays become tuples.
            **fixed: Fields set by the caller (e.g. ``depth`` from ``[protocol]``).

        Raises:
            InputDataError: an unknown key (naming it) or a bad value.
        """
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(table) - known)
        if unknown:
            raise InputDataError(f"unknown QLFusion settings {unknown}; known: {sorted(known)}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
        return cls(**{**values, **fixed})

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Config-schema hook (:mod:`probrank._config`): every value is valid on its own.

        Raises:
            probrank._config.SchemaError: naming the first key whose value the settings refuse.
        """
        for key, value in table.items():
            # a prior's or likelihood's arguments are checked with the prior or likelihood
            base = key.removesuffix("_args")
            companion = {base: table[base]} if key.endswith("_args") and base in table else {}
            try:
                cls.from_table({**companion, key: value})
            except InputDataError as exc:
                raise SchemaError((key,), str(exc)) from None
