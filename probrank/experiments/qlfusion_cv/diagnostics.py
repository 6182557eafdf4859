"""Diagnostics of the QLFusion quantifiers: SVI against NUTS, and reference weights.

* :func:`~probrank.experiments.qlfusion_cv.svi_vs_nuts` compares the output layer's mean-field
  SVI posterior with NUTS samples for one (fold, run) quantifier (same priors, likelihood and
  fixed hidden features).
* :func:`reference_weights` fuses with weights that need no quantifier: each member's
  training-mean proportion (a legitimate baseline) and the true test proportions (an upper
  bound that reads test judgements; never a method).
* :func:`validation_scores` scores quantifier settings on the validation folds only (the
  place to choose settings).
* :func:`within_topic_signal` splits the quantifiers' accuracy into the part fusion can use
  (differences between the runs of one topic) and the part it cannot (the topic's level).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._threads import torch_threads
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError
from probrank.experiments.qlfusion_cv.config import QLFusionExperimentSettings
from probrank.experiments.qlfusion_cv.data import load_selected
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.models.qlfusion import CrossFitData, QLFusion

__all__ = ["reference_weights", "svi_vs_nuts", "validation_scores", "within_topic_signal"]


def _settings(config_path: Path) -> QLFusionExperimentSettings:
    """The typed settings of a ``qlfusion_cv`` config.

    Raises:
        InputDataError: the config is invalid or of another protocol.
    """
    from probrank.experiments import load_config

    config = load_config(config_path)
    if not isinstance(config, QLFusionExperimentSettings):
        raise InputDataError(
            f"expected a qlfusion_cv config, got {config.experiment.protocol!r}", path=config_path
        )
    return config


def svi_vs_nuts(
    config_path: str | Path,
    *,
    fold: int = 0,
    run_index: int = 0,
    seed: int = 0,
    num_samples: int = 300,
    warmup_steps: int = 300,
    num_chains: int = 2,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Compare the output layer's SVI posterior with NUTS for one (fold, run) quantifier of a
    config's cross-fitting (:meth:`~probrank.models.qlfusion.QLFusion.svi_vs_nuts`, which
    documents the returned table).
    """
    config_path = Path(config_path)
    config = _settings(config_path)
    model = QLFusion(config.quantifier)
    _, _, data = load_selected(config, config_path, model)
    with torch_threads(config.experiment.threads):
        return model.svi_vs_nuts(
            data, fold=fold, run_index=run_index, seed=seed, num_samples=num_samples,
            warmup_steps=warmup_steps, num_chains=num_chains, progress=progress,
        )  # fmt: skip


def reference_weights(config_path: str | Path) -> dict[str, dict[str, float]]:
    """Diagnostics without training: QLFusion with reference weights instead of a quantifier.

    * ``constant``: each (fold, run) predicts its training topics' mean proportion for every
      test topic (a quantifier that ignores its input; legitimate, uses training data only).
    * ``oracle``: the true proportion of relevant documents in each test list (uses test
      judgements; an upper bound on what a perfect quantifier could give, not a method).

    Returns:
        ``{name: {measure: value}}`` with the fused runs' measures and the weights' test MAE.
    """
    config_path = Path(config_path)
    config = _settings(config_path)
    model = QLFusion(config.quantifier)
    qrels, selected, data = load_selected(config, config_path, model)
    depth = model.settings.depth
    measures = list(config.protocol.measures)
    train_p = data.train["counts"] / depth
    mask = data.train["mask"].to(train_p.dtype)
    mean = (train_p * mask).sum(-1) / mask.sum(-1)
    true_p = data.test["counts"] / depth
    out = {}
    for name, p_hat in (
        ("constant", mean.unsqueeze(-1).expand_as(true_p)),
        ("oracle", true_p),
    ):
        weights = data.weights(p_hat)
        fused = fuse(
            selected, FusionMethod.WEIGHTED, norm="minmax", depth=depth, weights=weights, name=name
        )
        scores = evaluate(qrels, fused, measures)
        scores["MAE"] = float((p_hat - true_p).abs()[data.test["mask"]].mean())
        out[name] = scores
    return out


def _by_topic(data: CrossFitData, p_hat: Tensor) -> Tensor:
    """`n_topics x R` matrix of test-list values (every topic is tested exactly once)."""
    n_runs = len(data.run_names)
    out = torch.full((len(data.topics), n_runs), math.nan, dtype=torch.float64)
    index, mask = data.test["index"], data.test["mask"]
    for m in range(index.shape[0]):
        keep = mask[m]
        out[index[m][keep], m % n_runs] = p_hat[m][keep].double()
    return out


def within_topic_signal(
    config_path: str | Path,
    *,
    variants: Sequence[str] = ("qlfusion", "qlfusion_plus"),
    seed: int = 0,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """How much of the quantifiers' accuracy is the part that can change a fused ranking.

    Multiplying every run's scores for a topic by the same constant does not change the
    topic's fused ranking, so only the *within-topic* differences of the weights (which run
    is better on this topic) matter; the topic's overall level (its difficulty) does not.

    Returns:
        ``{"true proportions": {...}}`` with the between-topic and within-topic shares of the
        variance of the true proportions of the test lists, and for ``constant`` (each
        member's training mean) and each variant (trained with ``seed``, test lists only):
        ``MAE``, ``within-topic MAE`` (after removing each topic's mean over runs from
        predictions and truth) and ``within-topic correlation`` (Pearson correlation over
        the runs of a topic between ``p_hat`` and the truth, averaged over topics where
        both vary).
    """
    config_path = Path(config_path)
    config = _settings(config_path)
    model = QLFusion(dataclasses.replace(config.quantifier, progress=progress))
    _, _, data = load_selected(config, config_path, model, variants=variants)
    depth = model.settings.depth
    truth = _by_topic(data, data.test["counts"] / depth)
    centred_truth = truth - truth.mean(1, keepdim=True)
    total = float(truth.var(unbiased=False))
    within = float(centred_truth.square().mean())
    out: dict[str, dict[str, float]] = {
        "true proportions": {
            "variance": total,
            "between-topic share": 1.0 - within / total,
            "within-topic share": within / total,
        }
    }
    train_p = data.train["counts"] / depth
    weight = data.train["mask"].to(train_p.dtype)
    constant = ((train_p * weight).sum(-1) / weight.sum(-1)).unsqueeze(-1)
    predictions = {"constant": constant.expand_as(data.test["counts"])}
    with torch_threads(config.experiment.threads):
        cross_fit = model.cross_fit_data(data, variants=list(variants), seed=seed)
    predictions.update(cross_fit.predictions)
    for name, p_hat in predictions.items():
        pred = _by_topic(data, p_hat)
        centred = pred - pred.mean(1, keepdim=True)
        num = (centred * centred_truth).sum(1)
        den = centred.square().sum(1).sqrt() * centred_truth.square().sum(1).sqrt()
        varies = den > 1e-12
        out[name] = {
            "MAE": float((pred - truth).abs().mean()),
            "within-topic MAE": float((centred - centred_truth).abs().mean()),
            "within-topic correlation": float((num[varies] / den[varies]).mean()),
        }
    return out


def validation_scores(
    config_path: str | Path,
    *,
    variants: Sequence[str] = ("qlfusion",),
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Quantifiers scored on the validation folds only (for choosing settings; no test data).

    Every fold's quantifiers predict that fold's validation lists; since each topic validates
    exactly one fold, the validation predictions cover every topic once and are fused and
    evaluated like the test predictions of :func:`~probrank.experiments.qlfusion_cv.run`. The
    validation folds also chose each quantifier's batch size and epoch, so these numbers are
    optimistic; compare settings with them, never with test numbers.

    Args:
        config_path: A ``qlfusion_cv`` config.
        variants: Variants to train.
        seed: Training seed.
        overrides: ``[quantifier]`` values to change (e.g. ``{"init_scale": 0.1}``).
        progress: Show progress bars.

    Returns:
        ``{name: {"MAE": ..., measure: ...}}`` for ``constant`` (each member's training
        mean) and each variant, with the protocol's measures.
    """
    config_path = Path(config_path)
    config = _settings(config_path)
    changes: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in (overrides or {}).items()
    }
    model = QLFusion(dataclasses.replace(config.quantifier, **changes, progress=progress))
    qrels, selected, data = load_selected(config, config_path, model, variants=variants)
    depth = model.settings.depth
    measures = list(config.protocol.measures)
    with torch_threads(config.experiment.threads):
        cross_fit = model.cross_fit_data(data, variants=list(variants), seed=seed)
    true_p = data.val["counts"] / depth
    train_p = data.train["counts"] / depth
    weight = data.train["mask"].to(train_p.dtype)
    constant = ((train_p * weight).sum(-1) / weight.sum(-1)).unsqueeze(-1).expand_as(true_p)
    out = {}
    for name, p_hat in {"constant": constant, **cross_fit.val_predictions}.items():
        weights = data.weights(p_hat, part="val")
        fused = fuse(
            selected, FusionMethod.WEIGHTED, norm="minmax", depth=depth, weights=weights, name=name
        )
        scores = evaluate(qrels, fused, measures)
        out[name] = {"MAE": float((p_hat - true_p).abs()[data.val["mask"]].mean()), **scores}
    return out
