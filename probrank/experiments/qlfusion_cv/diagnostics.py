"""Diagnostics of the QLFusion quantifiers: SVI against NUTS, and reference weights.

* :func:`svi_vs_nuts` compares the output layer's mean-field SVI posterior with NUTS samples
  for one (fold, run) quantifier (same priors, likelihood and fixed hidden features).
* :func:`reference_weights` fuses with weights that need no quantifier: each member's
  training-mean proportion (a legitimate baseline) and the true test proportions (an upper
  bound that reads test judgements; never a method).
* :func:`validation_scores` scores quantifier settings on the validation folds only (the
  place to choose settings).
* :func:`within_topic_signal` splits the quantifiers' accuracy into the part fusion can use
  (differences between the runs of one topic) and the part it cannot (the topic's level).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._threads import torch_threads
from probrank.evaluation.measures import evaluate
from probrank.experiments.qlfusion_cv.data import load_selected
from probrank.experiments.qlfusion_cv.protocol import DEFAULT_MEASURES
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.models.qlfusion.cross_fit import (
    CVData,
    cross_validated_predictions,
    weights_from_predictions,
)
from probrank.models.qlfusion.network import train_quantifier
from probrank.models.qlfusion.variants import VARIANTS, Inputs, QuantifierSettings

__all__ = ["reference_weights", "svi_vs_nuts", "validation_scores", "within_topic_signal"]


def _member_subset(part: dict[str, Tensor], members: slice) -> dict[str, Tensor]:
    return {k: v[members] for k, v in part.items()}


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
    """Compare the output layer's SVI posterior with NUTS for one (fold, run) quantifier.

    The quantifiers of ``fold`` are trained as in :func:`run` (SVI, flipout, binomial loss);
    then, holding the learned layer norm and hidden layer fixed, NUTS samples the output
    layer's 33 weights under the same N(0, 1) priors and binomial likelihood on the member's
    training lists. Both posteriors predict the member's test lists.

    Returns:
        ``{"SVI": {...}, "NUTS": {...}}`` with the posterior mean of ``|w|``, the mean posterior
        sd, test MAE of the posterior predictive mean ``p_hat``, coverage of the test lists'
        observed proportions by 90% posterior predictive intervals (binomial noise
        included), and for NUTS the largest R-hat and smallest bulk ESS; plus
        ``{"SVI vs NUTS": {"mean |diff| / NUTS sd": ..., "SVI sd / NUTS sd": ...}}``.
    """
    import pyro
    import pyro.distributions as dist

    from probrank.diagnostics.arviz import output_layer_dims, summary, to_inference_data
    from probrank.experiments import load_config
    from probrank.inference.mcmc import fit_nuts

    config_path = Path(config_path)
    config = load_config(config_path)
    settings = QuantifierSettings.from_config(dict(config.get("quantifier", {})))
    _, selected, data, protocol = load_selected(config, config_path)
    depth = int(protocol.get("depth", 100))
    n_runs = len(selected)
    part = slice(fold * n_runs, (fold + 1) * n_runs)
    train, val, test = (_member_subset(d, part) for d in (data.train, data.val, data.test))
    with torch_threads(int(config.get("experiment", {}).get("threads", 1))):
        trained = train_quantifier(
            train, val, bayesian=True, losses=["binomial"], batch_sizes=settings.batch_sizes,
            lr=settings.lr, max_epochs=settings.max_epochs, patience=settings.patience,
            max_steps=settings.max_steps, hidden=settings.hidden, estimator=settings.estimator,
            init_scale=settings.init_scale, seed=seed, progress=progress,
        )  # fmt: skip
    member = int(trained.chosen[0, run_index]) * n_runs + run_index
    net = trained.net
    out = net.output
    keep, tkeep = train["mask"][run_index], test["mask"][run_index]
    with torch.no_grad():
        copies = len(trained.batch_sizes)
        h = net.features(train["x"].repeat(copies, 1, 1))[member][keep].double()
        th = net.features(test["x"].repeat(copies, 1, 1))[member][tkeep].double()
        w_loc = out.weight_loc[member, 0].double()  # type: ignore[index]
        w_sd = out.weight_scale[member, 0].double()  # type: ignore[index]
        b_loc = out.bias_loc[member, 0].double()  # type: ignore[index]
        b_sd = out.bias_scale[member, 0].double()  # type: ignore[index]
    counts = train["counts"][run_index][keep].double()
    true_p = test["counts"][run_index][tkeep].double() / depth
    zero = torch.tensor(0.0, dtype=torch.float64)

    def model(h: Tensor, counts: Tensor | None = None) -> None:
        w = pyro.sample("output.weight", dist.Normal(zero, 1.0).expand([h.shape[-1]]).to_event(1))
        b = pyro.sample("output.bias", dist.Normal(zero, 1.0))
        with pyro.plate("topics", h.shape[0]):
            pyro.sample("k_rel", dist.Binomial(depth, logits=h @ w + b), obs=counts)

    draws = fit_nuts(model, h, counts, num_samples=num_samples, warmup_steps=warmup_steps,
                     num_chains=num_chains, seed=seed, progress=progress)  # fmt: skip
    generator = torch.Generator().manual_seed(seed)
    svi_w = w_loc + w_sd * torch.randn(num_chains * num_samples, w_loc.shape[0],
                                       generator=generator, dtype=torch.float64)  # fmt: skip
    svi_b = b_loc + b_sd * torch.randn(num_chains * num_samples, generator=generator,
                                       dtype=torch.float64)  # fmt: skip
    nuts_w = draws["output.weight"].reshape(-1, w_loc.shape[0])
    nuts_b = draws["output.bias"].reshape(-1)

    def predictive(w: Tensor, b: Tensor) -> dict[str, float]:
        p = torch.sigmoid(th @ w.T + b)  # n_test x S
        # posterior predictive of the observed proportion: binomial noise on top of p_hat
        k = torch.binomial(torch.full_like(p, float(depth)), p, generator=generator) / depth
        low, high = torch.quantile(k, torch.tensor([0.05, 0.95], dtype=p.dtype), dim=1)
        return {
            "posterior mean |w|": float(w.mean(0).abs().mean()),
            "mean posterior sd of w": float(w.std(0).mean()),
            "test MAE of p_hat": float((p.mean(1) - true_p).abs().mean()),
            "90% interval coverage": float(((true_p >= low) & (true_p <= high)).double().mean()),
        }

    dims, coords = output_layer_dims("output", w_loc.shape[0], 1)
    dims = {"output.weight": ["hidden"], "output.bias": []}
    idata = to_inference_data(draws, dims=dims, coords={"hidden": coords["hidden"]})
    table = summary(idata)
    result = {"SVI": predictive(svi_w, svi_b), "NUTS": predictive(nuts_w, nuts_b)}
    result["NUTS"]["max R-hat"] = float(table["r_hat"].max())
    result["NUTS"]["min bulk ESS"] = float(table["ess_bulk"].min())
    nuts_sd = nuts_w.std(0)
    result["SVI vs NUTS"] = {
        "mean |diff of means| / NUTS sd": float(((w_loc - nuts_w.mean(0)).abs() / nuts_sd).mean()),
        "mean SVI sd / NUTS sd": float((w_sd / nuts_sd).mean()),
        "training lists": float(h.shape[0]),
        "batch size chosen": float(trained.batch_sizes[int(trained.chosen[0, run_index])]),
    }
    return result


def reference_weights(config_path: str | Path) -> dict[str, dict[str, float]]:
    """Diagnostics without training: QLFusion with reference weights instead of a quantifier.

    * ``constant``: each (fold, run) predicts its training topics' mean proportion for every
      test topic (a quantifier that ignores its input; legitimate, uses training data only).
    * ``oracle``: the true proportion of relevant documents in each test list (uses test
      judgements; an upper bound on what a perfect quantifier could give, not a method).

    Returns:
        ``{name: {measure: value}}`` with the fused runs' measures and the weights' test MAE.
    """
    from probrank.experiments import load_config

    config_path = Path(config_path)
    config = load_config(config_path)
    qrels, selected, data, protocol = load_selected(config, config_path)
    depth = int(protocol.get("depth", 100))
    measures = list(protocol.get("measures", DEFAULT_MEASURES))
    train_p = data.train["counts"] / depth
    mask = data.train["mask"].to(train_p.dtype)
    mean = (train_p * mask).sum(-1) / mask.sum(-1)
    true_p = data.test["counts"] / depth
    out = {}
    for name, p_hat in (
        ("constant", mean.unsqueeze(-1).expand_as(true_p)),
        ("oracle", true_p),
    ):
        weights = weights_from_predictions(data, p_hat)
        fused = fuse(
            selected, FusionMethod.WEIGHTED, norm="minmax", depth=depth, weights=weights, name=name
        )
        scores = evaluate(qrels, fused, measures)
        scores["MAE"] = float((p_hat - true_p).abs()[data.test["mask"]].mean())
        out[name] = scores
    return out


def _by_topic(data: CVData, p_hat: Tensor) -> Tensor:
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
    from probrank.experiments import load_config

    config_path = Path(config_path)
    config = load_config(config_path)
    plus = any(VARIANTS[v].inputs is Inputs.PLUS for v in variants)
    _, _, data, protocol = load_selected(config, config_path, plus=plus)
    depth = int(protocol.get("depth", 100))
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
    settings = QuantifierSettings.from_config(dict(config.get("quantifier", {})))
    with torch_threads(int(config.get("experiment", {}).get("threads", 1))):
        trained, _ = cross_validated_predictions(
            data, seed=seed, settings=settings, variants=list(variants), progress=progress
        )
    predictions.update(trained)
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
    from probrank.experiments import load_config

    config_path = Path(config_path)
    config = load_config(config_path)
    plus = any(VARIANTS[v].inputs is Inputs.PLUS for v in variants)
    qrels, selected, data, protocol = load_selected(config, config_path, plus=plus)
    depth = int(protocol.get("depth", 100))
    measures = list(protocol.get("measures", DEFAULT_MEASURES))
    table = {**config.get("quantifier", {}), **(overrides or {})}
    settings = QuantifierSettings.from_config(table)
    with torch_threads(int(config.get("experiment", {}).get("threads", 1))):
        _, info = cross_validated_predictions(
            data, seed=seed, settings=settings, variants=list(variants), progress=progress
        )
    true_p = data.val["counts"] / depth
    train_p = data.train["counts"] / depth
    weight = data.train["mask"].to(train_p.dtype)
    constant = ((train_p * weight).sum(-1) / weight.sum(-1)).unsqueeze(-1).expand_as(true_p)
    out = {}
    for name, p_hat in {"constant": constant, **info["val_predictions"]}.items():
        weights = weights_from_predictions(data, p_hat, part="val")
        fused = fuse(
            selected, FusionMethod.WEIGHTED, norm="minmax", depth=depth, weights=weights, name=name
        )
        scores = evaluate(qrels, fused, measures)
        out[name] = {"MAE": float((p_hat - true_p).abs()[data.val["mask"]].mean()), **scores}
    return out
