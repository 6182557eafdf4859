"""Warm start of the Siamese utility network on graded training questions (MEDIQA 2019 train).

Pairs are every ``(better, worse)`` pair of answers of a training question by grade
(``ReferenceScore``). The network is trained with the margin ranking loss and weight decay by
SGD with momentum; the epoch is chosen by early stopping on the pairwise accuracy of the
*validation* questions (MEDIQA validation). Then:

* SWAG: ``swag_epochs`` more epochs of constant-learning-rate SGD from the chosen weights, one
  snapshot of the last ``swag_layers`` linear layers per epoch (``K = swag_epochs``);
* deep ensemble: ``ensemble_size`` networks, member 0 the network above, member ``k`` trained the
  same way from seed ``seed * 1000 + k``.

Results are cached on disk (``<cache>/interactive-warmstart/<key>.pt``, written atomically and
read with ``weights_only=True``), keyed by the options, the seed and a hash of the training and
validation data, so every command after the first reuses them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from probrank._files import write_atomically
from probrank.exceptions import InputDataError
from probrank.inference.swag import SWAGCollector, SWAGPosterior
from probrank.nn.siamese import (
    PairFitOptions,
    SiameseUtilityNet,
    fit_pairs,
    graded_pairs,
    pairwise_accuracy,
)
from probrank.posteriors.swag import swag_parameters

__all__ = ["WarmStart", "WarmStartOptions", "train_warm_start"]


@dataclass(frozen=True)
class WarmStartOptions:
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

    def fit_options(self, seed: int) -> PairFitOptions:
        return PairFitOptions(
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


def _standardisation(features: Tensor) -> tuple[Tensor, Tensor]:
    return features.mean(0), features.std(0).clamp_min(1e-6)


def _train_one(
    train_x: Tensor,
    train_pairs: Tensor,
    val_x: Tensor,
    val_pairs: Tensor,
    options: WarmStartOptions,
    seed: int,
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

    result = fit_pairs(net, train_x, train_pairs, options.fit_options(seed), validate=validate)
    return net, max(result.scores), result.best_epoch + 1


def _collect_swag(
    net: SiameseUtilityNet,
    train_x: Tensor,
    train_pairs: Tensor,
    options: WarmStartOptions,
    seed: int,
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
    fit = PairFitOptions(
        epochs=options.swag_epochs,
        batch_size=options.batch_size,
        lr=options.lr,
        momentum=options.momentum,
        weight_decay=options.weight_decay,
        margin=options.margin,
        seed=seed + 7,
    )
    fit_pairs(
        clone,
        train_x,
        train_pairs,
        fit,
        on_epoch_end=lambda model, _: collector.collect(
            swag_parameters(clone, options.swag_layers)
        ),
    )
    return collector.posterior()


def _fingerprint(*tensors: Tensor) -> str:
    digest = hashlib.sha256()
    for tensor in tensors:
        data = tensor.detach().contiguous().cpu()
        digest.update(str(tuple(data.shape)).encode())
        digest.update(data.numpy().tobytes())
    return digest.hexdigest()[:20]


def train_warm_start(
    train_features: Sequence[Tensor],
    train_grades: Sequence[Sequence[float]],
    validation_features: Sequence[Tensor],
    validation_grades: Sequence[Sequence[float]],
    options: WarmStartOptions = WarmStartOptions(),
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
        cache_dir: Folder of the on-disk cache; None disables it.

    Returns:
        The :class:`WarmStart`.
    """
    train_x = torch.cat([f.float() for f in train_features])
    val_x = torch.cat([f.float() for f in validation_features])
    train_pairs = graded_pairs(train_grades)
    val_pairs = graded_pairs(validation_grades)
    if train_pairs.shape[0] == 0 or val_pairs.shape[0] == 0:
        raise InputDataError("the warm start needs graded pairs in training and validation")
    key_data = {
        "options": asdict(options),
        "seed": seed,
        "data": _fingerprint(train_x, val_x, train_pairs, val_pairs),
    }
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:24]
    cached = _load(cache_dir, key, train_x.shape[1], options)
    warm = cached or WarmStart(*_fit_net(train_x, train_pairs, val_x, val_pairs, options, seed))
    changed = cached is None
    if swag and warm.swag is None:
        warm.swag = _collect_swag(warm.net, train_x, train_pairs, options, seed)
        changed = True
    if ensemble and len(warm.members) < options.ensemble_size:
        for k in range(len(warm.members), options.ensemble_size):
            member, _, _ = _train_one(
                train_x, train_pairs, val_x, val_pairs, options, seed * 1000 + k
            )
            warm.members.append(member)
        changed = True
    if changed:
        _save(cache_dir, key, warm)
    return warm


def _fit_net(
    train_x: Tensor,
    train_pairs: Tensor,
    val_x: Tensor,
    val_pairs: Tensor,
    options: WarmStartOptions,
    seed: int,
) -> tuple[SiameseUtilityNet, list[SiameseUtilityNet], None, float, int]:
    net, accuracy, epochs = _train_one(train_x, train_pairs, val_x, val_pairs, options, seed * 1000)
    return net, [net], None, accuracy, epochs


def _new_net(width: int, options: WarmStartOptions) -> SiameseUtilityNet:
    return SiameseUtilityNet(
        width, options.hidden, dropout=options.dropout, activation=options.activation
    )


def _save(cache_dir: str | Path | None, key: str, warm: WarmStart) -> None:
    if cache_dir is None:
        return
    folder = Path(cache_dir) / "interactive-warmstart"
    folder.mkdir(parents=True, exist_ok=True)
    payload: dict[str, object] = {
        "members": [m.state_dict() for m in warm.members],
        "validation_accuracy": warm.validation_accuracy,
        "epochs": warm.epochs,
    }
    if warm.swag is not None:
        payload["swag"] = {
            "mean": warm.swag.mean,
            "variance": warm.swag.variance,
            "deviations": warm.swag.deviations,
            "num_snapshots": warm.swag.num_snapshots,
            "scale": warm.swag.scale,
        }
    write_atomically(folder / f"{key}.pt", lambda temp: torch.save(payload, temp))


def _load(
    cache_dir: str | Path | None, key: str, width: int, options: WarmStartOptions
) -> WarmStart | None:
    if cache_dir is None:
        return None
    path = Path(cache_dir) / "interactive-warmstart" / f"{key}.pt"
    if not path.is_file():
        return None
    try:
        payload = torch.load(path, weights_only=True)
        members = []
        for state in payload["members"]:
            member = _new_net(width, options)
            member.load_state_dict(state)
            member.eval()
            members.append(member)
    except (OSError, RuntimeError, KeyError, EOFError):
        return None  # a damaged entry is retrained and overwritten
    swag = None
    if "swag" in payload:
        s = payload["swag"]
        swag = SWAGPosterior(
            mean=s["mean"],
            variance=s["variance"],
            deviations=s["deviations"],
            num_snapshots=int(s["num_snapshots"]),
            scale=float(s["scale"]),
        )
    return WarmStart(
        net=members[0],
        members=members,
        swag=swag,
        validation_accuracy=float(payload["validation_accuracy"]),
        epochs=int(payload["epochs"]),
    )
