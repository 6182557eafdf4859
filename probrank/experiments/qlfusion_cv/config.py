"""The typed schema of ``qlfusion_cv`` configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from probrank._config import NonEmpty, Range, SchemaError
from probrank.data.trec import OnDuplicate
from probrank.experiments.tables import (
    Experiment,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
)
from probrank.models.qlfusion.variants import VARIANTS
from probrank.nn.bayesian_linear import Estimator

__all__ = ["QLFusionConfig"]


@dataclass(frozen=True)
class RunFiles:
    """``[data]``: the folder (``shared`` under the shared data, or ``path`` beside the
    config), the qrels and a glob of run files in it."""

    shared: str | None = None
    path: str | None = None
    qrels: str | None = None  # default "qrels.txt"
    runs: str | None = None  # default "runs/*"
    on_duplicate: Annotated[str, OneOf.enum(OnDuplicate)] | None = None


@dataclass(frozen=True)
class RunFilesRequired(RunFiles):
    """``[data]`` of the config (``shared`` or ``path`` required; ``[smoke.data]`` only
    overrides)."""

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """``shared`` or ``path`` is given."""
        if "shared" not in table and "path" not in table:
            raise SchemaError(("shared",), "missing: [data] needs 'shared' or 'path'")


@dataclass(frozen=True)
class CrossValidation:
    """``[protocol]``: folds, input runs, depth, measures and variants."""

    folds: Annotated[int, Range(3)] | None = None  # default 10
    fold_seed: NonNegativeInt | None = None
    depth: PositiveInt | None = None  # default 100
    top_runs: PositiveInt | None = None  # default 6
    measures: Annotated[list[str], NonEmpty()] | None = None
    variants: Annotated[list[str], NonEmpty(), OneOf(tuple(VARIANTS))] | None = None
    topics: PositiveInt | None = None  # the first N topics only (smoke runs)


@dataclass(frozen=True)
class Quantifier:
    """``[quantifier]`` (:class:`~probrank.models.qlfusion.variants.QuantifierSettings`)."""

    hidden: PositiveInt | None = None
    lr: PositiveFloat | None = None
    batch_sizes: Annotated[list[PositiveInt], NonEmpty()] | None = None
    max_epochs: PositiveInt | None = None
    patience: PositiveInt | None = None
    max_steps: PositiveInt | None = None
    estimator: Annotated[str, OneOf.enum(Estimator)] | None = None
    init_scale: PositiveFloat | None = None
    posterior_samples: PositiveInt | None = None
    lower_quantile: Annotated[float, Range(0, 1, open_low=True, open_high=True)] | None = None
    rf_trees: PositiveInt | None = None


@dataclass(frozen=True)
class QLFusionSmoke:
    """``[smoke]``: overrides of ``--smoke`` runs."""

    data: RunFiles | None = None
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None


@dataclass(frozen=True)
class QLFusionConfig:
    """A ``qlfusion_cv`` config (:mod:`probrank.experiments.qlfusion_cv`)."""

    experiment: Experiment
    data: RunFilesRequired
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None
    smoke: QLFusionSmoke | None = None
