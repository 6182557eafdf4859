"""The fine-tuned regime of the GPF ranker: the encoder and a head trained together end to end.

:meth:`GPFRanker.fit_fine_tuned <probrank.models.gpf_ranker.GPFRanker.fit_fine_tuned>` is one
(head, seed) run of the ``gpf_finetune`` protocol (:func:`fit_fine_tuned` here): per training
setting of the head (each focal ``gamma`` of GPF's grid), a fresh encoder (cross-encoder by
default) and head are trained with AdamW (:func:`probrank.encoders.fine_tune.fine_tune`; the
head's loss plus the GP prior penalty ``/ n`` for SNGP/GPF); after every epoch of the grid the
posterior is completed (the exact Laplace pass of the GP heads) and the validation predictive
kept as a :class:`~probrank.models.gpf_ranker.selection.Checkpoint`, with the evaluation sets'
predictive at that checkpoint. Per calibration family the checkpoint and calibration with the
lowest validation NLL are chosen (:func:`~probrank.models.gpf_ranker.selection.select`) and the
evaluation sets scored there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.encoders.transformer import TransformerEncoder
from probrank.models.gpf_ranker.selection import (
    GP_HEADS,
    Checkpoint,
    Family,
    RegimeFit,
    check_regime,
    select,
)
from probrank.models.gpf_ranker.settings import FineTuneSettings, GPFRankerSettings
from probrank.nn.heads import HeadKind

__all__ = [
    "PairSplit",
    "fine_tune_encoder",
    "fit_fine_tuned",
    "pair_split",
]

_FINE_TUNED_HEADS = (HeadKind.DETERMINISTIC, HeadKind.SNGP, HeadKind.GPF)
"""Heads trained in this regime (one fine-tuning run per training setting; MC dropout and the
ensemble would need ``T`` passes or ``M`` fine-tunes)."""

Predictive = dict[str, tuple[Tensor, Tensor]]
"""``{set name: (m, v)}``: `n` predictive means and variances of the logits (float64)."""


@dataclass
class PairSplit:
    """One split: its name, lists, the pairs' texts and `n` labels."""

    name: str
    lists: list[CandidateList]
    queries: list[str]
    candidates: list[str]
    labels: Tensor


def pair_split(name: str, lists: Sequence[CandidateList]) -> PairSplit:
    """The :class:`PairSplit` of ``lists``."""
    queries, candidates = pair_texts(lists)
    labels = torch.tensor([y for item in lists for y in item.labels], dtype=torch.float32)
    return PairSplit(name, list(lists), queries, candidates, labels)


def fine_tune_encoder(
    table: Mapping[str, Any] | None = None, *, show_progress: bool = False
) -> TransformerEncoder:
    """A fresh trainable (``freeze=False``) encoder of an ``[encoder]`` table, by default a
    cross-encoder (``[CLS] q [SEP] a``) at 128 tokens; None: the packaged all-MiniLM-L6-v2
    (the ``gpf_finetune`` protocol's default)."""
    from probrank.encoders.config import encoder_from_config

    return encoder_from_config(
        None if table is None else dict(table),
        freeze=False,
        show_progress=show_progress,
        mode="cross",
        max_length=128,
    )


@torch.no_grad()
def _features(encoder: Any, split: PairSplit) -> Tensor:
    return encoder.encode_pairs(split.queries, split.candidates).float()


def _fine_tune_checkpoints(
    kind: str,
    options: dict[str, Any],
    seed: int,
    training: FineTuneSettings,
    new_encoder: Callable[[], TransformerEncoder],
    train: PairSplit,
    validation: PairSplit,
    evaluation: Mapping[str, PairSplit],
) -> list[tuple[Checkpoint, Predictive]]:
    """Fine-tune a fresh encoder with head ``kind`` (constructor ``options``, ``seed``
    included); per epoch of ``training.epochs`` the checkpoint (validation predictive, no
    state) and the evaluation sets' predictive."""
    from probrank.encoders.fine_tune import fine_tune
    from probrank.nn.heads import build_head

    epochs_grid = list(training.epochs)
    torch.manual_seed(seed)
    encoder = new_encoder()
    head = build_head(kind, encoder.feature_dim, **options)
    penalty = None
    if kind in GP_HEADS:
        output = head.gp.output  # type: ignore[attr-defined]
        penalty = lambda: output.prior_penalty() / len(train.labels)  # noqa: E731
    kept: list[tuple[Checkpoint, Predictive]] = []

    def keep(epochs: int) -> None:
        if epochs not in epochs_grid:
            return
        if penalty is not None:  # GP heads: the exact Laplace pass over the training pairs
            head.finalize(_features(encoder, train), 1024)
        predictive = {}
        for role, split in (("validation", validation), *evaluation.items()):
            mean, variance = head.logit_predictive(_features(encoder, split))
            predictive[role] = (mean.double().cpu(), variance.double().cpu())
        val_mean, val_variance = predictive.pop("validation")
        kept.append((Checkpoint(dict(options), epochs, {}, val_mean, val_variance), predictive))

    fine_tune(
        encoder,
        head,  # type: ignore[arg-type]
        train.queries,
        train.candidates,
        train.labels,
        loss=head.loss,  # type: ignore[attr-defined]
        penalty=penalty,
        on_epoch_end=keep,
        epochs=epochs_grid[-1],
        lr=float(training.encoder_lr),
        head_lr=float(training.lr),
        batch_size=int(training.batch_size),
        seed=seed,
    )
    return kept


def _as_split(name: str, data: Sequence[CandidateList] | PairSplit) -> PairSplit:
    return data if isinstance(data, PairSplit) else pair_split(name, data)


def fit_fine_tuned(
    settings: GPFRankerSettings,
    training: FineTuneSettings,
    train: Sequence[CandidateList] | PairSplit,
    validation: Sequence[CandidateList] | PairSplit,
    evaluation: Mapping[str, Sequence[CandidateList] | PairSplit],
    *,
    new_encoder: Callable[[], TransformerEncoder],
    families: Sequence[Family],
    seed: int,
) -> RegimeFit:
    """The body of :meth:`GPFRanker.fit_fine_tuned
    <probrank.models.gpf_ranker.GPFRanker.fit_fine_tuned>` (see there)."""
    kind = settings.head
    check_regime(kind, _FINE_TUNED_HEADS, "fine-tuned end to end", families)
    train_split, val_split = _as_split("train", train), _as_split("validation", validation)
    targets = {name: _as_split(name, data) for name, data in evaluation.items()}
    kept: list[tuple[Checkpoint, Predictive]] = []
    for options in settings.head_options():
        kept += _fine_tune_checkpoints(
            kind.value,
            {**options, "seed": seed},
            seed,
            training,
            new_encoder,
            train_split,
            val_split,
            targets,
        )
    checkpoints = [checkpoint for checkpoint, _ in kept]
    scored = {id(checkpoint): predictive for checkpoint, predictive in kept}
    selections = {}
    predictions = {}
    for family in families:
        selection = select(
            kind.value, checkpoints, val_split.labels, Family(family), settings.mean_field_factors
        )
        key = (kind.value, Family(family))
        selections[key] = selection
        predictions[key] = {
            name: (selection.calibration.probability(mean, variance), variance)
            for name, (mean, variance) in scored[id(selection.checkpoint)].items()
        }
    return RegimeFit(selections, predictions)
