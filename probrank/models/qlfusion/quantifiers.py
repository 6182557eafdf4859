"""The quantifier variants of QLFusion's cross-fitting and their training for many members.

A *member* is one quantifier problem: training, validation and test lists of one input run (in a
cross-fitting, one per (fold, run); :mod:`probrank.models.qlfusion.members`). Every variant
(:data:`VARIANTS`) predicts, for each member, the proportion of relevant documents in its test
lists. The neural variants that share inputs and the Bayesian/deterministic choice train together in
one vectorised SVI loop (:func:`~probrank.models.qlfusion.network.train_quantifier`); each group's
wall time is recorded so the proposed model is timed apart from the extras (Table 2 grid, LR, RF,
plus). These are the workings of :meth:`~probrank.models.qlfusion.QLFusion.cross_fit` and its
per-group parts; the settings are the model's :class:`~probrank.models.qlfusion.QLFusionSettings`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import torch
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.models.qlfusion.network import QuantifierLoss, TrainedQuantifier, train_quantifier
from probrank.models.qlfusion.plus_features import standardize
from probrank.models.qlfusion.predictive import (
    LOO_DRAWS,
    interval_coverage,
    members_loo,
    pointwise_log_likelihood,
    predictive_shares,
)
from probrank.models.qlfusion.settings import QLFusionSettings, WeightRule

__all__ = [
    "PAPER_VARIANTS",
    "VARIANTS",
    "Inputs",
    "Kind",
    "LearnedFusion",
    "Parts",
    "TrainingGroup",
    "Variant",
    "group_predictions",
    "member_predictions",
    "merge_group_predictions",
    "model_parts",
    "training_groups",
]


class Kind(str, Enum):
    """Which kind of quantifier a variant trains."""

    NEURAL = "neural"
    """The QLFusion network trained by SVI."""
    RIDGE = "ridge"
    """scikit-learn ridge regression on the proportion (the paper's LR)."""
    FOREST = "forest"
    """scikit-learn random forest on the proportion (the paper's RF)."""


class Inputs(str, Enum):
    """What a quantifier sees of a list."""

    SCORES = "scores"
    """The paper's: min-max normalised top-k scores, zero padded, layer-normalised."""
    PLUS = "plus"
    """Judgement-free descriptors (:mod:`probrank.models.qlfusion.plus_features`), standardised."""


@dataclass(frozen=True)
class Variant:
    """One quantifier variant.

    Attributes:
        kind: The kind of quantifier.
        bayesian: Bayesian output layer (neural only).
        loss: Likelihood (neural only).
        inputs: Which inputs.
        weight: Fusion weight from the predictive draws
            (:class:`~probrank.models.qlfusion.WeightRule`; ``lower`` takes the
            ``QLFusionSettings.lower_quantile`` quantile).
    """

    kind: Kind = Kind.NEURAL
    bayesian: bool = True
    loss: QuantifierLoss = QuantifierLoss.BINOMIAL
    inputs: Inputs = Inputs.SCORES
    weight: WeightRule = WeightRule.MEAN


VARIANTS: dict[str, Variant] = {
    "qlfusion": Variant(),
    "qlfusion_prob_mse": Variant(loss=QuantifierLoss.MSE),
    "qlfusion_det_binomial": Variant(bayesian=False),
    "qlfusion_det": Variant(bayesian=False, loss=QuantifierLoss.MSE),
    "qlfusion_lr": Variant(kind=Kind.RIDGE, bayesian=False),
    "qlfusion_rf": Variant(kind=Kind.FOREST, bayesian=False),
    "qlfusion_lower": Variant(weight=WeightRule.LOWER),
    "qlfusion_plus": Variant(inputs=Inputs.PLUS),
    "qlfusion_plus_det": Variant(bayesian=False, inputs=Inputs.PLUS),
}
"""Every variant by method name (``qlfusion`` is the paper's proposed model)."""

PAPER_VARIANTS = (
    "qlfusion_lr", "qlfusion_rf", "qlfusion", "qlfusion_det",
    "qlfusion_prob_mse", "qlfusion_det_binomial",
)  # fmt: skip
"""The variants of the paper's Tables 1 and 2."""


class LearnedFusion(str, Enum):
    """The learned fusion methods of ``probrank fuse`` (each a variant of :data:`VARIANTS`,
    trained by cross-fitting over topics)."""

    QLFUSION = "qlfusion"
    """The paper's quantifier (Bayesian output layer, binomial likelihood, score inputs)."""
    QLFUSION_PLUS = "qlfusion_plus"
    """The extension with judgement-free list descriptors as inputs."""


Parts = tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]
"""Train, validation and test member tensors, with ``x`` (`M x n x k`), ``counts`` (`M x n`),
``mask`` (`M x n`) and, for the plus variants, ``plus`` (`M x n x F`)."""


def _inputs(parts: Parts, inputs: Inputs) -> tuple[dict[str, Tensor], ...]:
    """Train/val/test tensors with ``x`` set to the variant's inputs."""
    train, val, test = parts
    if inputs is Inputs.SCORES:
        return parts
    if "plus" not in train:
        raise InputDataError("the plus variants need member data built with plus=True")
    x = standardize(train["plus"], train["mask"], val["plus"], test["plus"])
    return tuple(
        {**part, "x": t * part["mask"].unsqueeze(-1).to(t.dtype)}
        for part, t in zip(parts, x, strict=True)
    )


def _sklearn_predictions(
    parts: Parts, kind: Kind, seed: int, trees: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Test ``p_hat``, chosen validation MAE and validation ``p_hat`` of ridge or RF."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Ridge

    train, val, test = parts
    depth = train["x"].shape[-1]
    x, mask = train["x"], train["mask"]
    p = train["counts"] / depth
    vx, vp, vmask = val["x"], val["counts"] / depth, val["mask"]
    tx = test["x"]
    out = torch.zeros(tx.shape[:2])
    val_out = torch.zeros(vx.shape[:2])
    val_mae = torch.zeros(tx.shape[0], dtype=torch.float64)
    grid: list[dict[str, Any]] = (
        [{"alpha": a} for a in (1e-3, 1e-2, 0.1, 1.0, 10.0)]
        if kind is Kind.RIDGE
        else [{"min_samples_leaf": leaf} for leaf in (1, 5)]
    )
    for m in range(x.shape[0]):
        keep, vkeep = mask[m].numpy(), vmask[m].numpy()
        xm, pm = x[m].numpy()[keep], p[m].numpy()[keep]
        best, best_err = None, math.inf
        for options in grid:
            model = (
                Ridge(**options)
                if kind is Kind.RIDGE
                else RandomForestRegressor(n_estimators=trees, random_state=seed, **options)
            )
            model.fit(xm, pm)
            err = float(np.abs(model.predict(vx[m].numpy()[vkeep]) - vp[m].numpy()[vkeep]).mean())
            if err < best_err:
                best, best_err = model, err
        if best is None:
            raise InputDataError(f"no {kind.value} quantifier could be fitted for member {m}")
        out[m] = torch.from_numpy(np.clip(best.predict(tx[m].numpy()), 0.0, 1.0)).float()
        val_out[m] = torch.from_numpy(np.clip(best.predict(vx[m].numpy()), 0.0, 1.0)).float()
        val_mae[m] = best_err
    return out, val_mae, val_out


def model_parts(settings: QLFusionSettings) -> dict[str, Any]:
    """The prior and likelihood arguments of the quantifier network from the settings (none
    for the paper's N(0, 1) prior and binomial likelihood, whose code path stays the same)."""
    if settings.papers_model:
        return {}
    return {
        "weight_prior": settings.prior_distribution(),
        "likelihood": settings.likelihood_factory(),
    }


def _neural_group(
    parts: Parts,
    bayesian: bool,
    inputs: Inputs,
    names: Sequence[str],
    settings: QLFusionSettings,
    seed: int,
    progress: bool,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Train one vectorised group and predict the test lists of each of its ``names``."""
    losses = list(dict.fromkeys(VARIANTS[n].loss for n in names))
    train, val, test = _inputs(parts, inputs)
    trained: TrainedQuantifier = train_quantifier(
        train,
        val,
        bayesian=bayesian,
        losses=losses,
        batch_sizes=settings.batch_sizes,
        lr=settings.lr,
        max_epochs=settings.max_epochs,
        patience=settings.patience,
        max_steps=settings.max_steps,
        hidden=settings.hidden,
        estimator=settings.estimator.value,
        init_scale=settings.init_scale,
        layer_norm=inputs is Inputs.SCORES,
        total_count=parts[0]["x"].shape[-1],
        **model_parts(settings),
        seed=seed,
        progress=progress,
    )
    preds: dict[str, Tensor] = {}
    info: dict[str, Any] = {
        "quantifiers": {}, "batch_sizes": {}, "val_mae": {}, "val_predictions": {},
    }  # fmt: skip

    def draws(x: Tensor, variant: Variant, *, latent: bool = False) -> Tensor:
        return trained.draws(x, variant.loss, settings.posterior_samples, seed=seed, latent=latent)

    def weight(draws: Tensor, variant: Variant) -> Tensor:
        if variant.weight is WeightRule.LOWER:
            q = torch.tensor(settings.lower_quantile, dtype=draws.dtype)
            return torch.quantile(draws, q, dim=0)
        return draws.mean(0)

    n_list = trained.net.total_count
    info["coverage"], info["loo"], info["concentration"] = {}, {}, {}
    for name in names:
        variant = VARIANTS[name]
        li = trained.losses.index(variant.loss)
        test_draws = draws(test["x"], variant)
        preds[name] = weight(test_draws, variant)
        likelihood = trained.likelihood(variant.loss)
        latent = draws(test["x"], variant, latent=True)  # the likelihood's input
        shares = predictive_shares(latent, likelihood, n_list, seed=seed)
        info["coverage"][name] = interval_coverage(shares, test["counts"] / n_list, test["mask"])
        if bayesian and variant.loss is QuantifierLoss.BINOMIAL:  # the counts' likelihood
            loo_draws = trained.draws(train["x"], variant.loss, LOO_DRAWS, seed=seed, latent=True)
            log_lik = pointwise_log_likelihood(loo_draws, likelihood, train["counts"])
            info["loo"][name] = members_loo(log_lik, train["mask"])
        concentration = trained.net.concentration
        if concentration is not None:
            chosen_c = concentration.reshape(-1)[trained.chosen_members(variant.loss)]
            info["concentration"][name] = chosen_c.tolist()
        info["val_predictions"][name] = weight(draws(val["x"], variant), variant)
        info["quantifiers"][name] = trained
        info["batch_sizes"][name] = trained.chosen_batch_sizes()[li]
        chosen = trained.val_mae[:, li].gather(0, trained.chosen[li].unsqueeze(0)).squeeze(0)
        info["val_mae"][name] = float(chosen.mean())
    return preds, info


@dataclass(frozen=True)
class TrainingGroup:
    """Variants trained together: one vectorised SVI loop (neural variants that share their
    inputs and the Bayesian/deterministic choice) or one scikit-learn kind.

    Groups are independent of each other: each seeds its own generators from the seed alone
    (:func:`~probrank.inference.svi.fit_svi` runs under ``fork_rng``; scikit-learn gets
    ``random_state=seed``), so they may run in any order or in different processes and give the
    same numbers, bit for bit on CPU with the same thread count (the unit of work of the Ray
    executor of the ``qlfusion_cv`` protocol). The members inside a neural
    group are *not* independent in that sense: they share one initialisation stream, one noise
    stream and one loop, so a group is never split.

    Attributes:
        key: ``"bayesian/scores"``, ``"deterministic/plus"``, ``"ridge"``, ``"forest"``; the
            key of its wall time in ``info["seconds"]``.
        kind: Neural, ridge or forest.
        names: The variants it predicts, in request order.
        bayesian: Neural groups: a Bayesian output layer.
        inputs: Neural groups: the inputs.
    """

    key: str
    kind: Kind
    names: tuple[str, ...]
    bayesian: bool = True
    inputs: Inputs = Inputs.SCORES


def training_groups(variants: Sequence[str]) -> list[TrainingGroup]:
    """The groups that train ``variants``, in the order :func:`member_predictions` runs them
    (neural groups by first appearance, then one group per scikit-learn variant).

    Raises:
        InputDataError: an unknown variant.
    """
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise InputDataError(
            f"unknown quantifier variants {sorted(unknown)}; known: {sorted(VARIANTS)}"
        )
    neural: dict[tuple[bool, Inputs], list[str]] = {}
    for name in variants:
        v = VARIANTS[name]
        if v.kind is Kind.NEURAL:
            neural.setdefault((v.bayesian, v.inputs), []).append(name)
    groups = [
        TrainingGroup(
            f"{'bayesian' if bayesian else 'deterministic'}/{inputs.value}",
            Kind.NEURAL,
            tuple(names),
            bayesian,
            inputs,
        )
        for (bayesian, inputs), names in neural.items()
    ]
    for name in variants:
        kind = VARIANTS[name].kind
        if kind is not Kind.NEURAL:
            groups.append(TrainingGroup(kind.value, kind, (name,), bayesian=False))
    return groups


def group_predictions(
    parts: Parts,
    group: TrainingGroup,
    *,
    seed: int = 0,
    settings: QLFusionSettings | None = None,
    progress: bool = True,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Test ``p_hat`` (`M x n_test`) of one training group's variants.

    Args:
        parts: As for :func:`member_predictions`.
        group: One of :func:`training_groups`.
        seed: Seeds training.
        settings: Training settings.
        progress: Show progress bars.

    Returns:
        ``({variant: p_hat}, info)``; ``info`` holds this group's ``val_mae``,
        ``val_predictions``, ``batch_sizes`` (neural groups), ``quantifiers`` (neural groups)
        and ``seconds`` (``{group.key: wall time}``).
    """
    settings = settings or QLFusionSettings()
    start = time.perf_counter()
    if group.kind is Kind.NEURAL:
        preds, info = _neural_group(
            parts, group.bayesian, group.inputs, group.names, settings, seed, progress
        )
    else:
        (name,) = group.names
        p_hat, val_mae, val_pred = _sklearn_predictions(parts, group.kind, seed, settings.rf_trees)
        preds = {name: p_hat}
        info = {
            "quantifiers": {}, "batch_sizes": {}, "val_mae": {name: float(val_mae.mean())},
            "val_predictions": {name: val_pred},
        }  # fmt: skip
    info["seconds"] = {group.key: time.perf_counter() - start}
    return preds, info


def merge_group_predictions(
    parts: Parts,
    variants: Sequence[str],
    results: Sequence[tuple[dict[str, Tensor], dict[str, Any]]],
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """The predictions and ``info`` of :func:`member_predictions` from its groups' results.

    Args:
        parts: The member tensors the groups were trained on (for the test MAE).
        variants: The requested variants (the order of the returned predictions).
        results: :func:`group_predictions` of every group of ``training_groups(variants)``.
    """
    preds: dict[str, Tensor] = {}
    info: dict[str, Any] = {
        "quantifiers": {}, "test_mae": {}, "val_mae": {}, "val_predictions": {},
        "batch_sizes": {}, "seconds": {}, "coverage": {}, "loo": {}, "concentration": {},
    }  # fmt: skip
    for group_preds, group_info in results:
        preds.update(group_preds)
        for field_name in (
            "quantifiers", "batch_sizes", "val_mae", "val_predictions", "seconds", "coverage",
            "loo", "concentration",
        ):  # fmt: skip
            info[field_name].update(group_info.get(field_name, {}))
    test = parts[2]
    true_p = test["counts"] / test["x"].shape[-1]
    mask = test["mask"]
    for name in variants:
        info["test_mae"][name] = float((preds[name] - true_p).abs()[mask].mean())
    return {name: preds[name] for name in variants}, info


def member_predictions(
    parts: Parts,
    *,
    seed: int = 0,
    settings: QLFusionSettings | None = None,
    variants: Sequence[str] = ("qlfusion",),
    progress: bool = True,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Test ``p_hat`` (`M x n_test`) of every requested variant, for `M` independent members.

    Args:
        parts: ``(train, validation, test)`` member tensors (:data:`Parts`; e.g. a
            :class:`~probrank.models.qlfusion.members.CrossFitData`'s ``train``, ``val``,
            ``test``; with ``plus`` for the plus variants).
        seed: Seeds training.
        settings: Training settings.
        variants: Names from :data:`VARIANTS`.
        progress: Show progress bars.

    Returns:
        ``({variant: p_hat}, info)``; ``info`` holds ``test_mae``, ``val_mae`` (of the chosen
        configuration, mean over members), ``val_predictions`` (`M x n_val` weights of the
        validation lists, for selection on validation), ``batch_sizes``, ``quantifiers``
        (the trained models), ``coverage`` (neural variants' held-out predictive coverage at
        50% and 90%), ``loo`` (Bayesian count-likelihood variants' PSIS-LOO of their training
        lists, :func:`~probrank.models.qlfusion.predictive.members_loo`), ``concentration``
        (each member's learned concentration, for a latent one) and ``seconds`` (wall time
        of each training group, e.g. ``"bayesian/scores"``). The groups
        (:func:`training_groups`) are trained one after another here; they are independent
        and may as well run apart (:func:`group_predictions`, :func:`merge_group_predictions`).
    """
    results = [
        group_predictions(parts, group, seed=seed, settings=settings, progress=progress)
        for group in training_groups(variants)
    ]
    return merge_group_predictions(parts, variants, results)
