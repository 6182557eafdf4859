"""Settings of :class:`~probrank.models.gpf_ranker.GPFRanker`: one typed, frozen object with
the model card's defaults, read by the library object and the GPF protocols alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from probrank.encoders.top_layers import SpectralMode
from probrank.encoders.transformer import Pooling
from probrank.exceptions import InputDataError
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    float_tuple,
    int_tuple,
    set_enum,
)
from probrank.models.gpf_ranker.fitting import (
    GP_OPTION_KEYS,
    check_optional_head_options,
    optional_head_options,
)
from probrank.models.gpf_ranker.selection import GP_HEADS
from probrank.nn.calibration import DEFAULT_MEAN_FIELD_FACTORS
from probrank.nn.heads import HeadKind
from probrank.nn.losses import check_focal_gamma
from probrank.retrieval.risk import RankingCriterion

__all__ = ["DropoutScope", "FineTuneSettings", "GPFRankerSettings", "TopLayersSettings"]

_SHARED_HEAD_KEYS = ("hidden", "num_layers", "dropout")
"""Keys of a GPF protocol's ``[heads]`` table that every head reads."""
_HEAD_TABLE_KEYS = frozenset(
    {
        *_SHARED_HEAD_KEYS,
        "num_features",
        "spectral_bound",
        *GP_OPTION_KEYS,
        "loss",
        "num_samples",
        "prediction_seed",
        "num_members",
    }
)
"""Keys of a ``[heads.<name>]`` table that are :class:`GPFRankerSettings` fields of the same
name (``gamma`` is mapped; training and layer keys belong to the regimes' settings)."""


@dataclass(frozen=True)
class GPFRankerSettings:
    """Settings of :class:`GPFRanker` (the model card's values by default).

    Attributes:
        head: The head (:class:`~probrank.nn.heads.HeadKind`; ``"gpf"`` is the paper's).
        hidden: Hidden width.
        num_layers: Hidden layers.
        dropout: Dropout in training.
        num_features: Random Fourier features of the GP heads.
        spectral_bound: Bound on each hidden layer's spectral norm (GP heads).
        gammas: Focal-loss gammas of the GPF head, one chosen on validation (each ``>= 1``).
        epochs: Epoch counts checkpointed, one chosen on validation.
        batch_size: Pairs per step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay (MLP heads).
        mean_field_factors: ``lambda`` values tried for the GP heads.
        temperature: Also fit a temperature on validation (the card's ``+T`` rows).
        validation_fraction: Share of the training lists held out when no validation lists
            are given.
        depth: Candidates per topic :meth:`GPFRanker.rerank` rescores.
        criterion: :class:`~probrank.retrieval.risk.RankingCriterion` of
            :meth:`GPFRanker.rerank`.
        risk_aversion: Standard deviations subtracted by the ``lower`` and ``mean_sd``
            criteria.
        seed: Seeds the split, initialisation, training and the random features.
        prior_precision, lengthscale, mean_field_factor, precision_update, momentum,
        momentum_form: The GP heads' options (None: the head's default).
        loss, focal_gamma: Loss of an MLP or SNGP head (``"bce"``, ``"focal"``) and its focal
            gamma (GPF always trains with focal loss over ``gammas``).
        num_samples, prediction_seed: MC dropout's passes ``T`` and their seed.
        num_members: The ensemble's members ``M``.
    """

    head: HeadKind = HeadKind.GPF
    hidden: int = 256
    num_layers: int = 1
    dropout: float = 0.1
    num_features: int = 1024
    spectral_bound: float = 0.95
    gammas: tuple[float, ...] = (1.0, 2.0, 3.0)
    epochs: tuple[int, ...] = (5, 10, 20, 40)
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    mean_field_factors: tuple[float, ...] = DEFAULT_MEAN_FIELD_FACTORS
    temperature: bool = True
    validation_fraction: float = 0.2
    depth: int = 100
    criterion: RankingCriterion = RankingCriterion.PROBABILITY
    risk_aversion: float = 1.0
    seed: int = 0
    prior_precision: float | None = None
    lengthscale: float | None = None
    mean_field_factor: float | None = None
    precision_update: str | None = None
    momentum: float | None = None
    momentum_form: str | None = None
    loss: str | None = None
    focal_gamma: float | None = None
    num_samples: int | None = None
    prediction_seed: int | None = None
    num_members: int | None = None

    def __post_init__(self) -> None:
        set_enum(self, "head", HeadKind)
        set_enum(self, "criterion", RankingCriterion)
        for name in ("hidden", "num_features", "batch_size", "depth"):
            check_positive_int(name, getattr(self, name))
        if isinstance(self.num_layers, bool) or not isinstance(self.num_layers, int):
            raise InputDataError(f"num_layers must be an integer, got {self.num_layers!r}")
        if self.num_layers < 0:
            raise InputDataError(f"num_layers must be >= 0, got {self.num_layers}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InputDataError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        check_positive("spectral_bound", self.spectral_bound)
        check_positive("lr", self.lr)
        if float(self.weight_decay) < 0 or float(self.risk_aversion) < 0:
            raise InputDataError("weight_decay and risk_aversion must be >= 0")
        gammas = tuple(check_focal_gamma(g) for g in float_tuple("gammas", self.gammas))
        factors = float_tuple("mean_field_factors", self.mean_field_factors)
        if any(f < 0 for f in factors):
            raise InputDataError(f"mean_field_factors must be >= 0, got {factors}")
        object.__setattr__(self, "gammas", gammas)
        object.__setattr__(self, "mean_field_factors", factors)
        object.__setattr__(self, "epochs", int_tuple("epochs", self.epochs))
        check_fraction("validation_fraction", self.validation_fraction)
        if not isinstance(self.temperature, bool):
            raise InputDataError(f"temperature must be true or false, got {self.temperature!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputDataError(f"seed must be an integer, got {self.seed!r}")
        check_optional_head_options(self)

    def head_options(self) -> list[dict[str, Any]]:
        """Constructor options of the head, one dict per training setting (gamma grid)."""
        options: dict[str, Any] = {
            "hidden": self.hidden,
            "num_layers": self.num_layers,
            "dropout": self.dropout,
            "seed": self.seed,
        }
        if self.head.value in GP_HEADS:
            options.update(num_features=self.num_features, spectral_bound=self.spectral_bound)
        options.update(optional_head_options(self))
        if self.head is HeadKind.GPF:
            return [{**options, "gamma": g} for g in self.gammas]
        return [options]

    @classmethod
    def from_heads_table(
        cls,
        name: str,
        heads: Mapping[str, Any],
        *,
        defaults: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GPFRankerSettings:
        """The settings of head ``name`` in a GPF protocol's ``[heads]`` table.

        Precedence, lowest first: ``defaults``, the shared keys of ``heads`` (``hidden``,
        ``num_layers``, ``dropout``), the keys of ``heads[name]``, ``overrides``. A table's
        ``gamma`` (one value or a list) is the GPF head's ``gammas`` and another head's
        ``focal_gamma``; training keys (``epochs``, ``lr``, ...) and the top layers' keys are
        left to :class:`FineTuneSettings` and :class:`TopLayersSettings`.

        Args:
            name: The head (a :class:`~probrank.nn.heads.HeadKind` value, and the table's key).
            heads: The ``[heads]`` table.
            defaults: Settings used where the table is silent.
            overrides: Settings that win over the table (``head`` included).

        Raises:
            InputDataError: a value the settings refuse.
        """
        table = {k: heads[k] for k in _SHARED_HEAD_KEYS if k in heads}
        table.update(heads.get(name) or {})
        values: dict[str, Any] = {**(defaults or {}), "head": name}
        for key, value in table.items():
            if key == "gamma":
                if name == HeadKind.GPF.value:
                    values["gammas"] = tuple(value) if isinstance(value, list | tuple) else (value,)
                else:
                    values["focal_gamma"] = value
            elif key in _HEAD_TABLE_KEYS:
                values[key] = value
        values.update(overrides)
        return cls(**values)


_DEFAULT = GPFRankerSettings()


@dataclass(frozen=True)
class FineTuneSettings:
    """Training of the fine-tuned regime (:mod:`probrank.models.gpf_ranker.fine_tuning`): the
    encoder and the head trained together with AdamW.

    Attributes:
        epochs: Epoch counts checkpointed (sorted, unique), one chosen on validation.
        lr: The head's learning rate (the frozen regime's ``lr``).
        encoder_lr: The encoder's learning rate.
        batch_size: Pairs per step.
    """

    epochs: tuple[int, ...] = (1, 2, 3)
    lr: float = _DEFAULT.lr
    encoder_lr: float = 2e-5
    batch_size: int = 16

    def __post_init__(self) -> None:
        epochs = tuple(sorted(set(int_tuple("epochs", tuple(int(e) for e in self.epochs)))))
        object.__setattr__(self, "epochs", epochs)
        check_positive("lr", self.lr)
        check_positive("encoder_lr", self.encoder_lr)
        check_positive_int("batch_size", self.batch_size)

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> Any:
        """The settings of a config table's keys (``[heads]`` merged with ``[heads.<name>]``;
        other keys are ignored, missing ones take the defaults)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in table.items() if k in names})


class DropoutScope(str, Enum):
    """Where the MC-dropout row's passes drop units (top-layers regime)."""

    HEAD = "head"
    """In the head only: the top layers run once, the head ``T`` times (cheap)."""
    TOP_LAYERS = "top_layers"
    """In the trainable top layers and the head: ``T`` passes through both (the paper's
    passes rerun the whole encoder; this reruns what is trained)."""


@dataclass(frozen=True)
class TopLayersSettings(FineTuneSettings):
    """Training of the top-layers regime (:mod:`probrank.models.gpf_ranker.top_layers`): the
    top encoder layers and the head trained together on cached states with AdamW.

    Attributes:
        weight_decay: AdamW's weight decay.
        layer_spectral_bound: Bound ``c`` on the top layers' dense weights' spectral norms
            (None: no spectral normalisation).
        layer_spectral_mode: :class:`~probrank.encoders.top_layers.SpectralMode` of the bound.
        pooling: :class:`~probrank.encoders.transformer.Pooling` of the last layer's states.
        scope: :class:`DropoutScope` of the MC-dropout row's passes.
    """

    batch_size: int = 32
    weight_decay: float = 0.01
    layer_spectral_bound: float | None = None
    layer_spectral_mode: SpectralMode = SpectralMode.RELATIVE
    pooling: Pooling = Pooling.MEAN
    scope: DropoutScope = DropoutScope.HEAD

    def __post_init__(self) -> None:
        super().__post_init__()
        if float(self.weight_decay) < 0:
            raise InputDataError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.layer_spectral_bound is not None:
            check_positive("layer_spectral_bound", self.layer_spectral_bound)
            object.__setattr__(self, "layer_spectral_bound", float(self.layer_spectral_bound))
        set_enum(self, "layer_spectral_mode", SpectralMode)
        set_enum(self, "pooling", Pooling)
        set_enum(self, "scope", DropoutScope)
