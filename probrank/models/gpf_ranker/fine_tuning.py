"""The fine-tuned regime of the GPF ranker: the encoder and a head trained together end to end.

:func:`fine_tune_checkpoints` is one (head, seed) run of the ``gpf_finetune`` protocol: a fresh
encoder (``[encoder]``, cross-encoder by default, ``freeze = false``) and head trained with
AdamW (:func:`probrank.encoders.fine_tune.fine_tune`; the head's loss plus the GP prior
penalty ``/ n`` for SNGP/GPF); after every epoch of the grid the posterior is completed (the
exact Laplace pass of the GP heads) and the validation predictive kept as a
:class:`~probrank.models.gpf_ranker.selection.Checkpoint`, the other sets' predictive by epoch,
for :func:`~probrank.models.gpf_ranker.selection.select`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.models.gpf_ranker.selection import GP_HEADS, Checkpoint
from probrank.models.gpf_ranker.settings import FineTuneSettings

__all__ = ["PairSplit", "fine_tune_checkpoints", "pair_split"]


@dataclass
class PairSplit:
    """One split: its name, lists, the pairs' texts and `n` labels."""

    name: str
    lists: list[CandidateList]
    queries: list[str]
    candidates: list[str]
    labels: Tensor


def pair_split(name: str, lists: list[CandidateList]) -> PairSplit:
    """The :class:`PairSplit` of ``lists``."""
    queries, candidates = pair_texts(lists)
    labels = torch.tensor([y for item in lists for y in item.labels], dtype=torch.float32)
    return PairSplit(name, lists, queries, candidates, labels)


@torch.no_grad()
def _features(encoder: Any, split: PairSplit) -> Tensor:
    return encoder.encode_pairs(split.queries, split.candidates).float()


def _head_options(heads: Mapping[str, Any], name: str) -> dict[str, Any]:
    fit_keys = ("epochs", "batch_size", "lr", "encoder_lr")
    common = {k: heads[k] for k in ("hidden", "num_layers", "dropout") if k in heads}
    own = {k: v for k, v in heads.get(name, {}).items() if k not in fit_keys}
    return {**common, **own}


def fine_tune_checkpoints(
    name: str,
    seed: int,
    heads: Mapping[str, Any],
    encoder_table: Mapping[str, Any] | None,
    splits: Mapping[str, PairSplit],
    shifts: list[str],
    show_progress: bool,
) -> tuple[list[Checkpoint], dict[int, dict[str, tuple[Tensor, Tensor]]]]:
    """Fine-tune encoder + head ``name``; the checkpoints' validation predictive and, per
    epoch, the ``(m, v)`` of the test and shift sets."""
    from probrank.encoders.config import encoder_from_config
    from probrank.encoders.fine_tune import fine_tune
    from probrank.nn.heads import build_head

    merged = {**heads, **heads.get(name, {})}
    fit = FineTuneSettings.from_table(merged)
    epochs_grid = list(fit.epochs)
    torch.manual_seed(seed)
    encoder = encoder_from_config(
        None if encoder_table is None else dict(encoder_table),
        freeze=False,
        show_progress=show_progress,
        mode="cross",
        max_length=128,
    )
    options = {**_head_options(heads, name), "seed": seed}
    head = build_head(name, encoder.feature_dim, **options)
    train = splits["train"]
    penalty = None
    if name in GP_HEADS:
        output = head.gp.output  # type: ignore[attr-defined]
        penalty = lambda: output.prior_penalty() / len(train.labels)  # noqa: E731
    checkpoints: list[Checkpoint] = []
    scored: dict[int, dict[str, tuple[Tensor, Tensor]]] = {}

    def keep(epochs: int) -> None:
        if epochs not in epochs_grid:
            return
        if penalty is not None:  # GP heads: the exact Laplace pass over the training pairs
            head.finalize(_features(encoder, train), 1024)
        predictive = {}
        for role in ("validation", "test", *shifts):
            mean, variance = head.logit_predictive(_features(encoder, splits[role]))
            predictive[role] = (mean.double().cpu(), variance.double().cpu())
        checkpoints.append(Checkpoint(dict(options), epochs, {}, *predictive.pop("validation")))
        scored[epochs] = predictive

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
        lr=float(fit.encoder_lr),
        head_lr=float(fit.lr),
        batch_size=int(fit.batch_size),
        seed=seed,
    )
    return checkpoints, scored
