"""Warm start of the Siamese utility network on graded training questions.

Pairs are every ``(better, worse)`` pair of candidates of a training question by grade (MEDIQA
``ReferenceScore`` in the reference protocol). The network is trained with the margin ranking
loss and weight decay by SGD with momentum; the epoch is chosen by early stopping on the
pairwise accuracy of the *validation* questions. Then, when a posterior needs them:

* SWAG: ``swag_epochs`` more epochs of constant-learning-rate SGD from the chosen weights, one
  snapshot of the last ``swag_layers`` linear layers per epoch (``K = swag_epochs``);
* deep ensemble: ``ensemble_size`` networks, member 0 the network above, member ``k`` trained the
  same way from seed ``seed * 1000 + k``.

With a ``cache_dir`` the result is cached on disk
(:mod:`probrank.models.interactive.warmstart_cache`), keyed by :func:`warm_start_identity`:
everything the trained networks depend on (the options, the seed, a hash of the data, the
feature width, the torch intra-op thread count, the torch version and the device).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import probrank.models.interactive.warmstart_cache as warmstart_cache
from probrank._progress import progress_bar
from probrank.exceptions import InputDataError
from probrank.inference.swag import SWAGCollector, SWAGPosterior
from probrank.nn.siamese import (
    PairFitSettings,
    SiameseUtilityNet,
    fit_pairs,
    graded_pairs,
    pairwise_accuracy,
)
from probrank.posteriors.swag import swag_parameters

__all__ = [
    "WARM_START_FORMAT",
    "WARM_START_VERSION",
    "WarmStart",
    "WarmStartSettings",
    "new_net",
    "train_warm_start",
    "warm_start_identity",
    "warm_start_payload",
]

logger = logging.getLogger(__name__)

WARM_START_FORMAT = warmstart_cache.WARM_START_FORMAT
WARM_START_VERSION = warmstart_cache.WARM_START_VERSION


@dataclass(frozen=True)
class WarmStartSettings:
    """Settings of the warm start (defaults chosen on MEDIQA validation; see the model card).

    Attributes:
        hidden: Hidden widths (the paper's ``(100, 10)``).
        dropout: Dropout after each hidden layer.
        activation: ``"relu"`` or ``"tanh"``.
        lr: SGD learning rate.
        momentum: SGD momentum.
        weight_decay: Gaussian-prior precision per training pair (see ``nn.siamese``).
        margin: Margin ``m`` of the ranking loss.
        batch_size: Pairs per step.
        max_epochs: Upper bound on epochs (early stopping on validation picks the epoch).
        patience: Epochs without validation improvement before stopping.
        swag_epochs: Constant-rate epochs (= snapshots, ``K``) collected for SWAG.
        swag_layers: Last linear layers SWAG covers.
        ensemble_size: Members of the deep ensemble.
    """

    hidden: tuple[int, ...] = (100, 10)
    dropout: float = 0.1
    activation: str = "relu"
    lr: float = 0.03
    momentum: float = 0.9
    weight_decay: float = 1e-2
    margin: float = 0.1
    batch_size: int = 64
    max_epochs: int = 60
    patience: int = 6
    swag_epochs: int = 20
    swag_layers: int = 2
    ensemble_size: int = 5

    def fit_options(self, seed: int) -> PairFitSettings:
        """The :class:`~probrank.nn.siamese.PairFitSettings` of one network's training."""
        return PairFitSettings(
            epochs=self.max_epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            margin=self.margin,
            patience=self.patience,
            seed=seed,
        )


@dataclass
class WarmStart:
    """Trained warm-start networks for one seed.

    Attributes:
        net: The network (member 0).
        members: The ensemble (``members[0] is net``); only ``[net]`` unless asked for.
        swag: SWAG Gaussian over the last layers of ``net``, or None unless asked for.
        validation_accuracy: Pairwise accuracy of ``net`` on the validation pairs.
        epochs: Epochs ``net`` was trained for (best validation epoch + 1).
    """

    net: SiameseUtilityNet
    members: list[SiameseUtilityNet] = field(default_factory=list)
    swag: SWAGPosterior | None = None
    validation_accuracy: float = float("nan")
    epochs: int = 0


def new_net(width: int, options: WarmStartSettings) -> SiameseUtilityNet:
    """An untrained network of ``options``' shape over `width`-wide features (to load into)."""
    return SiameseUtilityNet(
        width, options.hidden, dropout=options.dropout, activation=options.activation
    )


def _standardisation(features: Tensor) -> tuple[Tensor, Tensor]:
    return features.mean(0), features.std(0).clamp_min(1e-6)


def _train_one(
    train_x: Tensor,
    train_pairs: Tensor,
    val_x: Tensor,
    val_pairs: Tensor,
    options: WarmStartSettings,
    seed: int,
    *,
    on_epoch_end: Callable[[torch.nn.Module, int], None] | None = None,
) -> tuple[SiameseUtilityNet, float, int]:
    mean, scale = _standardisation(train_x)
    net = SiameseUtilityNet(
        train_x.shape[1],
        options.hidden,
        dropout=options.dropout,
        activation=options.activation,
        input_mean=mean,
        input_scale=scale,
        seed=seed,
    )

    def validate(model: torch.nn.Module) -> float:
        with torch.no_grad():
            return pairwise_accuracy(model(val_x), val_pairs)

    result = fit_pairs(
        net,
        train_x,
        train_pairs,
        options.fit_options(seed),
        validate=validate,
        on_epoch_end=on_epoch_end,
    )
    return net, max(result.scores), result.best_epoch + 1


def _collect_swag(
    net: SiameseUtilityNet,
    train_x: Tensor,
    train_pairs: Tensor,
    options: WarmStartSettings,
    seed: int,
    *,
    on_epoch_end: Callable[[torch.nn.Module, int], None] | None = None,
) -> SWAGPosterior:
    collector = SWAGCollector(max_rank=options.swag_epochs)
    clone = SiameseUtilityNet(
        net.in_features,
        net.hidden,
        dropout=net.dropout,
        activation=options.activation,
        input_mean=net.input_mean,
        input_scale=net.input_scale,
    )
    clone.load_state_dict(net.state_dict())
    fit = PairFitSettings(
        epochs=options.swag_epochs,
        batch_size=options.batch_size,
        lr=options.lr,
        momentum=options.momentum,
        weight_decay=options.weight_decay,
        margin=options.margin,
        seed=seed + 7,
    )

    def snapshot(model: torch.nn.Module, epoch: int) -> None:
        collector.collect(swag_parameters(clone, options.swag_layers))
        if on_epoch_end is not None:
            on_epoch_end(model, epoch)

    fit_pairs(clone, train_x, train_pairs, fit, on_epoch_end=snapshot)
    return collector.posterior()


def _fingerprint(*tensors: Tensor) -> str:
    digest = hashlib.sha256()
    for tensor in tensors:
        data = tensor.detach().contiguous().cpu()
        digest.update(str(tuple(data.shape)).encode())
        digest.update(data.numpy().tobytes())
    return digest.hexdigest()[:20]


def warm_start_identity(
    train_x: Tensor,
    train_pairs: Tensor,
    val_x: Tensor,
    val_pairs: Tensor,
    options: WarmStartSettings,
    seed: int,
) -> dict[str, Any]:
    """Everything the warm-start networks of one seed depend on (the cache key is its hash).

    Read in the calling thread's torch settings: the intra-op thread count is part of it
    (another count sums in another order, which changes the weights in the last bits and,
    through early stopping, can change the chosen epoch).

    Args:
        train_x: `N x d` training features (float32).
        train_pairs: `P x 2` ``(better, worse)`` row pairs of ``train_x``.
        val_x: `M x d` validation features.
        val_pairs: `Q x 2` pairs of ``val_x``.
        options: The settings.
        seed: The seed.

    Returns:
        A JSON-ready dict: format, options, seed, data hash, width, torch threads, version and
        device.
    """
    return {
        "format": WARM_START_FORMAT,
        "version": WARM_START_VERSION,
        "options": json.loads(json.dumps(asdict(options))),
        "seed": int(seed),
        "data": _fingerprint(train_x, val_x, train_pairs, val_pairs),
        "width": int(train_x.shape[1]),
        "threads": torch.get_num_threads(),
        "torch": str(torch.__version__),
        "device": str(train_x.device),
    }


def train_warm_start(
    train_features: Sequence[Tensor],
    train_grades: Sequence[Sequence[float]],
    validation_features: Sequence[Tensor],
    validation_grades: Sequence[Sequence[float]],
    options: WarmStartSettings = WarmStartSettings(),
    *,
    seed: int = 0,
    swag: bool = False,
    ensemble: bool = False,
    cache_dir: str | Path | None = None,
) -> WarmStart:
    """Train (or load from the cache) the warm-start networks for one seed.

    Args:
        train_features: Per training question, `n_k x d` features.
        train_grades: Per training question, `n_k` grades.
        validation_features: Per validation question, `n_k x d` features.
        validation_grades: Per validation question, `n_k` grades.
        options: The settings.
        seed: Seed of initialisation, shuffling and dropout.
        swag: Also collect the SWAG posterior.
        ensemble: Also train ``options.ensemble_size - 1`` more members.
        cache_dir: Folder of the on-disk cache; None disables it. A damaged or stale entry
            is reported once (:class:`~probrank.encoders.cache.CacheWarning`) and retrained.

    Returns:
        The :class:`WarmStart`.

    Raises:
        InputDataError: no graded pair in training or in validation.
    """
    train_x = torch.cat([f.float() for f in train_features])
    val_x = torch.cat([f.float() for f in validation_features])
    train_pairs = graded_pairs(train_grades)
    val_pairs = graded_pairs(validation_grades)
    if train_pairs.shape[0] == 0 or val_pairs.shape[0] == 0:
        raise InputDataError("the warm start needs graded pairs in training and validation")
    identity = warm_start_identity(train_x, train_pairs, val_x, val_pairs, options, seed)
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]
    width = train_x.shape[1]
    cached = warmstart_cache.load_entry(
        cache_dir, key, identity, lambda payload: warm_start_from_payload(payload, width, options)
    )
    if cached is not None:
        logger.debug("warm start of seed %d: from the cache (%s)", seed, key)
    else:
        logger.debug("warm start of seed %d: training (%d pairs)", seed, train_pairs.shape[0])
    have = len(cached.members) if cached is not None else 1
    # the epochs still to run, at most (early stopping may end a network sooner)
    nets = (cached is None) + (max(0, options.ensemble_size - have) if ensemble else 0)
    collect = swag and (cached is None or cached.swag is None)
    budget = nets * options.max_epochs + collect * options.swag_epochs
    # a bar over those epochs, ticked after each one (shown once training takes more than 2 s)
    bar = progress_bar(
        total=budget, desc=f"warm start (seed {seed})", unit="epoch", delay=2.0, leave=False
    )

    def tick(*_: object) -> None:
        bar.update()

    def finished(planned: int) -> None:  # epochs a network did not need leave the total
        nonlocal budget
        budget -= planned
        bar.total = bar.n + budget

    with bar:
        if cached is None:
            warm = WarmStart(
                *_fit_net(train_x, train_pairs, val_x, val_pairs, options, seed, on_epoch_end=tick)
            )
            finished(options.max_epochs)
        else:
            warm = cached
        changed = cached is None
        if swag and warm.swag is None:
            warm.swag = _collect_swag(
                warm.net, train_x, train_pairs, options, seed, on_epoch_end=tick
            )
            finished(options.swag_epochs)
            changed = True
        if ensemble and len(warm.members) < options.ensemble_size:
            for k in range(len(warm.members), options.ensemble_size):
                member, _, _ = _train_one(
                    train_x,
                    train_pairs,
                    val_x,
                    val_pairs,
                    options,
                    seed * 1000 + k,
                    on_epoch_end=tick,
                )
                warm.members.append(member)
                finished(options.max_epochs)
            changed = True
    if changed:
        warmstart_cache.save_entry(cache_dir, key, identity, warm_start_payload(warm))
    return warm


def _fit_net(
    train_x: Tensor,
    train_pairs: Tensor,
    val_x: Tensor,
    val_pairs: Tensor,
    options: WarmStartSettings,
    seed: int,
    *,
    on_epoch_end: Callable[[torch.nn.Module, int], None] | None = None,
) -> tuple[SiameseUtilityNet, list[SiameseUtilityNet], None, float, int]:
    net, accuracy, epochs = _train_one(
        train_x, train_pairs, val_x, val_pairs, options, seed * 1000, on_epoch_end=on_epoch_end
    )
    return net, [net], None, accuracy, epochs


def warm_start_payload(warm: WarmStart) -> dict[str, Any]:
    """The tensors and numbers of ``warm``: ``{"members": [state dicts], "validation_accuracy",
    "epochs", "swag"?: {"mean", "variance", "deviations", "num_snapshots", "scale"}}``."""
    payload: dict[str, Any] = {
        "members": [m.state_dict() for m in warm.members],
        "validation_accuracy": float(warm.validation_accuracy),
        "epochs": int(warm.epochs),
    }
    if warm.swag is not None:
        payload["swag"] = {
            "mean": warm.swag.mean,
            "variance": warm.swag.variance,
            "deviations": warm.swag.deviations,
            "num_snapshots": int(warm.swag.num_snapshots),
            "scale": float(warm.swag.scale),
        }
    return payload


def warm_start_from_payload(
    payload: dict[str, Any], width: int, options: WarmStartSettings
) -> WarmStart:
    """The :class:`WarmStart` of a :func:`warm_start_payload` (networks in eval mode).

    Raises:
        RuntimeError, KeyError, TypeError, ValueError: tensors that do not fit networks of
            ``options``' shape over `width`-wide features, or numbers out of range.
    """
    members = []
    for state in payload["members"]:
        member = new_net(width, options)
        member.load_state_dict(state)  # strict: a missing, extra or mis-shaped tensor raises
        member.eval()
        members.append(member)
    if not members:
        raise ValueError("no networks in the entry")
    swag = None
    if payload.get("swag") is not None:
        s = payload["swag"]
        size = sum(p.numel() for p in swag_parameters(members[0], options.swag_layers))
        rank = s["deviations"].shape[0] if s["deviations"].dim() == 2 else -1
        if s["mean"].shape != (size,) or s["variance"].shape != (size,) or rank < 0:
            raise ValueError(f"SWAG tensors do not cover the {size} weights of the last layers")
        if s["deviations"].shape[1] != size:
            raise ValueError(f"SWAG deviations are {tuple(s['deviations'].shape)}, need K x {size}")
        swag = SWAGPosterior(
            mean=s["mean"],
            variance=s["variance"],
            deviations=s["deviations"],
            num_snapshots=int(s["num_snapshots"]),
            scale=float(s["scale"]),
        )
    accuracy = float(payload["validation_accuracy"])
    if not (math.isnan(accuracy) or 0.0 <= accuracy <= 1.0):
        raise ValueError(f"validation accuracy {accuracy} outside [0, 1]")
    return WarmStart(
        net=members[0],
        members=members,
        swag=swag,
        validation_accuracy=accuracy,
        epochs=int(payload["epochs"]),
    )
