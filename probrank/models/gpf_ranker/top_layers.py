"""The top-layers regime of the GPF ranker: the top encoder layers fine-tuned with a head on
cached lower-layer states, and the rows' validation predictive and scoring.

:meth:`GPFRanker.fit_top_layers <probrank.models.gpf_ranker.GPFRanker.fit_top_layers>` (the
body is :func:`fit_top_layers`) is one (head, seed) unit of the ``gpf_top_layers`` protocol:
per training setting of the head (each focal ``gamma`` of GPF's grid) a fresh copy of the top
layers and a head are trained (:func:`probrank.encoders.top_layers_fit.fine_tune_top_layers`),
the checkpoints of each row kept (validation predictive and state, after the GP heads' exact
Laplace pass), the checkpoint and calibration of each row and family chosen on validation
(:func:`~probrank.models.gpf_ranker.selection.select`) and the chosen checkpoints scored on the
evaluation sets. One network serves the deterministic and MC-dropout rows (:data:`ROW_GROUPS`);
MC dropout drops units in the head or also in the top layers (:class:`DropoutScope`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.top_layers import TopLayerRanker
from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker.selection import (
    GP_HEADS,
    Checkpoint,
    Family,
    RegimeFit,
    Selection,
    check_regime,
    select,
)
from probrank.models.gpf_ranker.settings import DropoutScope, GPFRankerSettings, TopLayersSettings
from probrank.nn.heads import HeadKind

__all__ = [
    "ROW_GROUPS",
    "SMOKE_FEATURES",
    "DropoutScope",
    "TopLayerSplit",
    "fit_top_layers",
]

SMOKE_FEATURES = 64
"""Random features of the GP heads in smoke runs."""

_TOP_LAYER_HEADS = (HeadKind.DETERMINISTIC, HeadKind.MC_DROPOUT, HeadKind.SNGP, HeadKind.GPF)
"""Heads trained in this regime (the ensemble would need ``M`` fine-tunes)."""

ROW_GROUPS = (("deterministic", "mc_dropout"), ("sngp",), ("gpf",))
"""Rows trained and selected together (one network serves the deterministic and MC rows)."""


@dataclass
class TopLayerSplit:
    """One split: its name, lists, `n` labels and cached lower-layer states."""

    name: str
    lists: list[CandidateList]
    labels: Tensor
    states: PackedStates

    @classmethod
    def encode(
        cls, encoder: HiddenStateEncoder, name: str, lists: Sequence[CandidateList]
    ) -> TopLayerSplit:
        """The split of labelled ``lists``: their `n` labels and the lower layers' states of
        their pairs (cached on disk by ``encoder``)."""
        queries, candidates = pair_texts(lists)
        labels = torch.tensor([y for item in lists for y in item.labels], dtype=torch.float32)
        return cls(name, list(lists), labels, encoder.encode_pairs(queries, candidates))


@dataclass(frozen=True)
class _Run:
    """One training run: the head built, its options (without the seed), the rows it serves
    and its training settings."""

    kind: str
    rows: tuple[str, ...]
    options: dict[str, Any]
    training: TopLayersSettings


def _build(run: _Run, encoder: HiddenStateEncoder, seed: int) -> TopLayerRanker:
    from probrank.nn.heads import build_head

    top = encoder.top_layers(
        pooling=run.training.pooling,
        spectral_bound=run.training.layer_spectral_bound,
        spectral_mode=run.training.layer_spectral_mode,
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


def _train_run(
    run: _Run,
    seed: int,
    encoder: HiddenStateEncoder,
    train: TopLayerSplit,
    validation: TopLayerSplit,
    bs: int,
    show_progress: bool,
) -> dict[str, list[Checkpoint]]:
    """Train one run; the checkpoints of each of its rows (validation predictive + state)."""
    from probrank.encoders.top_layers_fit import fine_tune_top_layers

    ranker = _build(run, encoder, seed)
    fit = run.training
    grid = list(fit.epochs)
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
            mean, variance = _predictive(row, ranker, validation, pooled, fit.scope, bs)
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
        show_progress=show_progress,
    )
    return checkpoints


def _score(
    run: _Run,
    selections: dict[tuple[str, Family], Selection],
    seed: int,
    encoder: HiddenStateEncoder,
    targets: Mapping[str, TopLayerSplit],
    bs: int,
) -> dict[tuple[str, Family], dict[str, tuple[Tensor, Tensor]]]:
    """Probabilities and predictive variances of each selection on the ``targets``; each
    chosen checkpoint is loaded and run once."""
    by_state: dict[int, list[tuple[str, Family]]] = {}
    for key, selection in selections.items():
        by_state.setdefault(id(selection.checkpoint.state), []).append(key)
    out: dict[tuple[str, Family], dict[str, tuple[Tensor, Tensor]]] = {}
    for keys in by_state.values():
        checkpoint = selections[keys[0]].checkpoint
        ranker = _build(replace(run, options=checkpoint.options), encoder, seed)
        ranker.load_state_dict(checkpoint.state)
        ranker.eval()
        for target, split in targets.items():
            pooled = ranker.pooled(split.states, bs)
            predictive: dict[str, tuple[Tensor, Tensor]] = {}
            for row, family in keys:
                if row not in predictive:
                    predictive[row] = _predictive(
                        row, ranker, split, pooled, run.training.scope, bs
                    )
                mean, variance = predictive[row]
                probs = selections[(row, family)].calibration.probability(mean, variance)
                out.setdefault((row, family), {})[target] = (probs, variance)
    return out


def _rows(kind: HeadKind, rows: Sequence[str] | None) -> tuple[str, ...]:
    """The rows one network of head ``kind`` serves, in :data:`ROW_GROUPS` order."""
    if rows is None:
        return (kind.value,)
    allowed = ("deterministic", "mc_dropout") if kind is HeadKind.MC_DROPOUT else (kind.value,)
    wanted = [str(r) for r in rows]
    bad = [r for r in wanted if r not in allowed]
    if bad or not wanted:
        raise InputDataError(
            f"rows of the {kind.value} head must be a non-empty subset of {list(allowed)}, "
            f"got {wanted}"
        )
    return tuple(r for r in allowed if r in wanted)


def _as_split(
    encoder: HiddenStateEncoder, name: str, data: Sequence[CandidateList] | TopLayerSplit
) -> TopLayerSplit:
    return data if isinstance(data, TopLayerSplit) else TopLayerSplit.encode(encoder, name, data)


def fit_top_layers(
    settings: GPFRankerSettings,
    training: TopLayersSettings,
    encoder: HiddenStateEncoder,
    train: Sequence[CandidateList] | TopLayerSplit,
    validation: Sequence[CandidateList] | TopLayerSplit,
    evaluation: Mapping[str, Sequence[CandidateList] | TopLayerSplit],
    *,
    rows: Sequence[str] | None,
    families: Sequence[Family],
    seed: int,
    show_progress: bool,
) -> RegimeFit:
    """The body of :meth:`GPFRanker.fit_top_layers
    <probrank.models.gpf_ranker.GPFRanker.fit_top_layers>` (see there)."""
    kind = settings.head
    check_regime(kind, _TOP_LAYER_HEADS, "trained on the top layers", families)
    served = _rows(kind, rows)
    train_split = _as_split(encoder, "train", train)
    val_split = _as_split(encoder, "validation", validation)
    targets = {name: _as_split(encoder, name, data) for name, data in evaluation.items()}
    runs = [
        _Run(kind.value, served, {k: v for k, v in o.items() if k != "seed"}, training)
        for o in settings.head_options()
    ]
    bs = encoder.batch_size
    checkpoints: dict[str, list[Checkpoint]] = {}
    for run in runs:
        trained = _train_run(run, seed, encoder, train_split, val_split, bs, show_progress)
        for row, kept in trained.items():
            checkpoints.setdefault(row, []).extend(kept)
    selections = {
        (row, Family(family)): select(
            row, kept, val_split.labels, Family(family), settings.mean_field_factors
        )
        for row, kept in checkpoints.items()
        for family in families
    }
    return RegimeFit(selections, _score(runs[0], selections, seed, encoder, targets, bs))
