"""The settings of QLFusion: one typed, frozen object for the model, ``probrank fuse`` and the
``qlfusion_cv`` protocol (whose ``[quantifier]`` table maps onto it key for key).

Defaults are the model card's (``models/qlfusion/*.toml``): the paper's training settings with
a cap of 1000 SVI steps per quantifier and 50 trees for the random-forest variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from probrank._config import SchemaError
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

__all__ = ["QLFusionSettings", "WeightRule"]


class WeightRule(str, Enum):
    """How the posterior draws of a list's proportion become its fusion weight."""

    MEAN = "mean"
    """The posterior mean (the paper's rule)."""
    LOWER = "lower"
    """The ``lower_quantile`` quantile of the draws: uncertain lists weigh less."""


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
        seed: Seeds the split, training and the posterior draws.
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
        if not isinstance(self.progress, bool):
            raise InputDataError(f"progress must be true or false, got {self.progress!r}")
        set_enum(self, "estimator", Estimator)
        set_enum(self, "weight_rule", WeightRule)

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
            SchemaError: naming the first key whose value the settings refuse.
        """
        for key, value in table.items():
            try:
                cls.from_table({key: value})
            except InputDataError as exc:
                raise SchemaError((key,), str(exc)) from None
