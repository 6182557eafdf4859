"""The top-layers regime of the GPF ranker: the top encoder layers fine-tuned with each head on
cached lower-layer states, and the rows' validation predictive and scoring.

The ``gpf_top_layers`` protocol (:mod:`probrank.experiments.gpf.top_layers`) builds its runs
with :func:`top_layer_runs`, trains each with :func:`train_top_layer_run` (the checkpoints of
each row: validation predictive and state, after the GP heads' exact Laplace pass) and, after
:func:`~probrank.models.gpf_ranker.selection.select`, scores the chosen checkpoints with
:func:`score_selections`. One network serves the deterministic and MC-dropout rows
(:data:`ROW_GROUPS`); MC dropout drops units in the head or also in the top layers
(:class:`DropoutScope`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList
from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.top_layers import TopLayerRanker
from probrank.models.gpf_ranker.selection import GP_HEADS, Checkpoint, Family, Selection
from probrank.models.gpf_ranker.settings import GPFRankerSettings, TopLayersSettings

__all__ = [
    "ROW_GROUPS",
    "SMOKE_FEATURES",
    "DropoutScope",
    "TopLayerRun",
    "TopLayerSplit",
    "score_selections",
    "top_layer_runs",
    "train_top_layer_run",
]

_FIT_KEYS = ("epochs", "batch_size", "lr", "encoder_lr", "weight_decay")
_LAYER_KEYS = ("layer_spectral_bound", "layer_spectral_mode")
SMOKE_FEATURES = 64
"""Random features of the GP heads in smoke runs."""


class DropoutScope(str, Enum):
    """Where the MC-dropout row's passes drop units."""

    HEAD = "head"
    """In the head only: the top layers run once, the head ``T`` times (cheap)."""
    TOP_LAYERS = "top_layers"
    """In the trainable top layers and the head: ``T`` passes through both (the paper's
    passes rerun the whole encoder; this reruns what is trained)."""


@dataclass
class TopLayerSplit:
    """One split: its name, lists, `n` labels and cached lower-layer states."""

    name: str
    lists: list[CandidateList]
    labels: Tensor
    states: PackedStates


@dataclass
class TopLayerRun:
    """One training run: the head built, its options, and the rows it serves."""

    kind: str
    rows: tuple[str, ...]
    options: dict[str, Any]
    fit: dict[str, Any]
    spectral_bound: float | None
    spectral_mode: str


def top_layer_runs(names: list[str], heads: Mapping[str, Any], smoke: bool) -> list[TopLayerRun]:
    common = {k: heads[k] for k in ("hidden", "num_layers", "dropout") if k in heads}

    def own(name: str) -> dict[str, Any]:
        table = heads.get(name, {})
        return {k: v for k, v in table.items() if k not in (*_FIT_KEYS, *_LAYER_KEYS)}

    def fit(name: str) -> dict[str, Any]:
        merged = {**heads, **heads.get(name, {})}
        return {k: merged[k] for k in _FIT_KEYS if k in merged}

    def spectral(name: str) -> tuple[float | None, str]:
        table = heads.get(name, {})
        bound = table.get("layer_spectral_bound")
        return (None if bound is None else float(bound)), table.get(
            "layer_spectral_mode", "relative"
        )

    runs = []
    mlp_rows = tuple(n for n in ("deterministic", "mc_dropout") if n in names)
    if mlp_rows:
        options = {**common, **own("deterministic")}
        if "mc_dropout" in mlp_rows:
            mc = heads.get("mc_dropout", {})
            options.update(
                num_samples=int(mc.get("num_samples", 10)),
                prediction_seed=int(mc.get("prediction_seed", 0)),
            )
        kind = "mc_dropout" if "mc_dropout" in mlp_rows else "deterministic"
        runs.append(
            TopLayerRun(kind, mlp_rows, options, fit("deterministic"), *spectral("deterministic"))
        )
    for name in ("sngp", "gpf"):
        if name not in names:
            continue
        options = {**common, **own(name)}
        if smoke:
            options["num_features"] = SMOKE_FEATURES
        gammas: list[Any] = [None]
        if name == "gpf":
            from probrank.nn.losses import check_focal_gamma

            value = options.pop("gamma", list(GPFRankerSettings().gammas))
            gammas = [
                check_focal_gamma(float(g)) for g in (value if isinstance(value, list) else [value])
            ]
            gammas = gammas[:1] if smoke else gammas
        for gamma in gammas:
            grid_options = dict(options) if gamma is None else {**options, "gamma": gamma}
            runs.append(TopLayerRun(name, (name,), grid_options, fit(name), *spectral(name)))
    return runs


def _build(
    run: TopLayerRun, encoder: HiddenStateEncoder, pooling: str, seed: int
) -> TopLayerRanker:
    from probrank.nn.heads import build_head

    top = encoder.top_layers(
        pooling=pooling,
        spectral_bound=run.spectral_bound,
        spectral_mode=run.spectral_mode,
        seed=seed,
    )
    head = build_head(run.kind, encoder.hidden_size, **run.options, seed=seed)
    return TopLayerRanker(top, head).to(encoder.device)  # type: ignore[arg-type]


def _logit(probabilities: Tensor) -> Tensor:
    return torch.logit(probabilities.clamp(1e-7, 1 - 1e-7))


@dataclass(frozen=True)
class _Scoring:
    """What a row's predictive reads."""

    ranker: TopLayerRanker
    split: TopLayerSplit
    pooled: Tensor  # `n x h` pooled top-layer features
    batch_size: int


def _point(inputs: _Scoring) -> tuple[Tensor, Tensor]:
    """The deterministic row: the head's logit, no variance."""
    head: Any = inputs.ranker.head
    head.eval()
    with torch.no_grad():
        mean = head(inputs.pooled).reshape(-1)
    return mean, torch.zeros_like(mean)


def _passes_through_top_layers(inputs: _Scoring) -> tuple[Tensor, Tensor]:
    """MC dropout in the top layers and the head: the logit of the mean of ``T`` passes'
    probabilities, no variance."""
    head: Any = inputs.ranker.head
    logits = inputs.ranker.sample_logits(
        inputs.split.states,
        head.num_samples,
        seed=head.prediction_seed,
        batch_size=inputs.batch_size,
    )
    mean = _logit(torch.sigmoid(logits).mean(0))
    return mean, torch.zeros_like(mean)


def _head_predictive(inputs: _Scoring) -> tuple[Tensor, Tensor]:
    """Head-only MC dropout, SNGP, GPF: the head's own logit predictive ``(m, v)``."""
    head: Any = inputs.ranker.head
    mean, variance = head.logit_predictive(inputs.pooled)
    return mean, variance


_PREDICTIVES: dict[tuple[str, DropoutScope], Callable[[_Scoring], tuple[Tensor, Tensor]]] = {
    ("deterministic", DropoutScope.HEAD): _point,
    ("deterministic", DropoutScope.TOP_LAYERS): _point,
    ("mc_dropout", DropoutScope.TOP_LAYERS): _passes_through_top_layers,
}
"""A row's predictive by (row, MC-dropout scope); every other row: :func:`_head_predictive`."""


def _predictive(
    row: str,
    ranker: TopLayerRanker,
    split: TopLayerSplit,
    pooled: Tensor,
    scope: DropoutScope,
    bs: int,
) -> tuple[Tensor, Tensor]:
    """`n` predictive means and variances of the logits of ``row`` on ``split`` (float64)."""
    predictive = _PREDICTIVES.get((row, DropoutScope(scope)), _head_predictive)
    mean, variance = predictive(_Scoring(ranker, split, pooled, bs))
    return mean.double().cpu(), variance.double().cpu()


def train_top_layer_run(
    run: TopLayerRun,
    seed: int,
    encoder: HiddenStateEncoder,
    splits: dict[str, TopLayerSplit],
    settings: dict[str, Any],
) -> dict[str, list[Checkpoint]]:
    """Train one run; the checkpoints of each of its rows (validation predictive + state)."""
    from probrank.encoders.top_layers_fit import fine_tune_top_layers

    ranker = _build(run, encoder, settings["pooling"], seed)
    bs = settings["batch_size"]
    train, validation = splits["train"], splits["validation"]
    fit = TopLayersSettings.from_table(run.fit)
    grid = list(fit.epochs)
    if settings["smoke"]:
        grid = [1]
    checkpoints: dict[str, list[Checkpoint]] = {row: [] for row in run.rows}
    gp = run.kind in GP_HEADS

    def keep(epochs: int) -> None:
        if epochs not in grid:
            return
        if gp:  # the exact Laplace pass over the training pairs' pooled features
            ranker.head.finalize(ranker.pooled(train.states, bs), 1024)  # type: ignore[operator]
        pooled = ranker.pooled(validation.states, bs)
        state = {k: v.detach().to("cpu", copy=True) for k, v in ranker.state_dict().items()}
        for row in run.rows:
            mean, variance = _predictive(row, ranker, validation, pooled, settings["scope"], bs)
            checkpoints[row].append(Checkpoint(dict(run.options), epochs, state, mean, variance))

    penalty = None
    if gp:
        output: Any = ranker.head.gp.output  # type: ignore[union-attr]
        n = len(train.labels)
        penalty = lambda: output.prior_penalty() / n  # noqa: E731
    fine_tune_top_layers(
        ranker,
        train.states,
        train.labels,
        loss=ranker.head.loss,  # type: ignore[arg-type]
        penalty=penalty,
        on_epoch_end=keep,
        epochs=grid[-1],
        lr=float(fit.encoder_lr),
        head_lr=float(fit.lr),
        weight_decay=float(fit.weight_decay),
        batch_size=int(fit.batch_size),
        seed=seed,
        show_progress=settings["progress"],
    )
    return checkpoints


ROW_GROUPS = (("deterministic", "mc_dropout"), ("sngp",), ("gpf",))
"""Rows trained and selected together (one network serves the deterministic and MC rows)."""


def score_selections(
    spec: TopLayerRun,
    selections: dict[tuple[str, Family], Selection],
    seed: int,
    encoder: HiddenStateEncoder,
    splits: dict[str, TopLayerSplit],
    targets: list[str],
    settings: dict[str, Any],
) -> dict[tuple[str, Family], dict[str, tuple[Tensor, Tensor]]]:
    """Probabilities and predictive variances of each selection on the test and shift sets;
    each chosen checkpoint is loaded and run once."""
    bs = settings["batch_size"]
    by_state: dict[int, list[tuple[str, Family]]] = {}
    for key, selection in selections.items():
        by_state.setdefault(id(selection.checkpoint.state), []).append(key)
    out: dict[tuple[str, Family], dict[str, tuple[Tensor, Tensor]]] = {}
    for keys in by_state.values():
        checkpoint = selections[keys[0]].checkpoint
        ranker = _build(
            replace(spec, options=checkpoint.options), encoder, settings["pooling"], seed
        )
        ranker.load_state_dict(checkpoint.state)
        ranker.eval()
        for target in targets:
            split = splits[target]
            pooled = ranker.pooled(split.states, bs)
            predictive: dict[str, tuple[Tensor, Tensor]] = {}
            for row, family in keys:
                if row not in predictive:
                    predictive[row] = _predictive(row, ranker, split, pooled, settings["scope"], bs)
                mean, variance = predictive[row]
                probs = selections[(row, family)].calibration.probability(mean, variance)
                out.setdefault((row, family), {})[target] = (probs, variance)
    return out
