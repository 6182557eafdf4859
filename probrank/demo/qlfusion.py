"""A small QLFusion demonstration on any runs: 5-fold CV, a table and a figure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from probrank._files import new_figure, save_figure
from probrank._threads import torch_threads
from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.models.qlfusion import QLFusion, QLFusionSettings
from probrank.models.qlfusion.predictive import (
    interval_coverage,
    predictive_interval,
    predictive_shares,
)

__all__ = ["DEMO_LIKELIHOODS", "DEMO_MEASURES", "SHOWN", "qlfusion_demo"]

DEMO_MEASURES = ("P@5", "nDCG@5", "nDCG@10", "AP")

DEMO_LIKELIHOODS: dict[str, tuple[str, dict[str, float]]] = {
    "qlfusion": ("binomial", {}),
    "qlfusion_latent": ("latent_beta_binomial", {}),
}
"""The QLFusion models the demo cross-fits: the paper's binomial likelihood and the default,
a beta-binomial whose concentration each run's quantifier learns
(``QLFusionSettings.likelihood`` and ``likelihood_args``)."""

SHOWN = "qlfusion_latent"
"""The model whose held-out predictions and predictive intervals the figure's left panel shows."""


def qlfusion_demo(
    runs: Sequence[Run],
    qrels: Qrels,
    seed: int = 0,
    quick: bool = True,
    figure: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """CombSUM, CombMNZ and QLFusion on any runs by 5-fold CV (small settings for a demo).

    Takes a few seconds on the demo's generated runs with ``quick`` (two batch sizes, at
    most 200 SVI steps per quantifier at learning rate 0.01: at the paper's 5e-4, 200 steps
    leave the output layer at its initialisation and the predictions flat within a run).

    Args:
        runs: Input runs (e.g. generated ones); not modified.
        qrels: Their judgements.
        seed: Seeds the folds and training.
        quick: Small settings (seconds); otherwise the paper's settings.
        figure: Optional PNG path (written atomically): left, each held-out list's predicted
            proportion of relevant documents (posterior mean and 90% posterior predictive
            interval of the observed share) against the true proportion, with the intervals'
            coverage; right, the fused runs' measures.

    Returns:
        ``{method: {measure: value}}`` for ``combsum``, ``combmnz`` and each model of
        :data:`DEMO_LIKELIHOODS` (``qlfusion``: the paper's binomial likelihood;
        ``qlfusion_latent``: the default, a learned over-dispersion), with P@5, nDCG@5,
        nDCG@10 and AP, plus, by model,
        ``"qlfusion_mae"`` ``{model: test MAE of the predicted proportion}``,
        ``"qlfusion_coverage"`` ``{model: {"coverage_50": ..., "coverage_90": ...}}`` (share
        of held-out lists whose true proportion lies in its 50% / 90% posterior predictive
        interval) and ``"qlfusion_spearman"`` ``{model: {run: rho}}`` (Spearman correlation
        between predicted and true proportion over each run's held-out lists).
    """
    depth = 100
    measures = list(DEMO_MEASURES)
    base = (
        QLFusionSettings(
            batch_sizes=(4, 16),
            max_epochs=60,
            patience=10,
            max_steps=200,
            lr=1e-2,  # the paper's 5e-4 barely moves the weights in 200 steps
            posterior_samples=50,
            seed=seed,
            progress=False,
        )
        if quick
        else QLFusionSettings(max_steps=None, seed=seed, progress=False)  # the paper's: no cap
    )
    out: dict[str, dict[str, Any]] = {
        m: evaluate(qrels, fuse(runs, m, norm="minmax", depth=depth), measures)
        for m in (FusionMethod.COMBSUM.value, FusionMethod.COMBMNZ.value)
    }
    out.update({"qlfusion_mae": {}, "qlfusion_coverage": {}, "qlfusion_spearman": {}})
    shown: dict[str, Any] = {}
    for method, (likelihood, args) in DEMO_LIKELIHOODS.items():
        settings = replace(base, likelihood=likelihood, likelihood_args=args)
        with torch_threads(1):
            cross_fit = QLFusion(settings).cross_fit(runs, qrels, folds=5, fold_seed=seed)
            data = cross_fit.data
            quantifier = cross_fit.quantifiers["qlfusion"]
            draws = quantifier.draws(  # the likelihood's mean proportion
                data.test["x"], "binomial", settings.posterior_samples, seed=seed
            )
            latent = quantifier.draws(  # its input, sigmoid(logits): predictive draws
                data.test["x"], "binomial", settings.posterior_samples, seed=seed, latent=True
            )
            likelihood = quantifier.likelihood("binomial")
            shares = predictive_shares(latent, likelihood, depth, seed=seed)
        out[method] = evaluate(qrels, cross_fit.fuse(runs, name="fused"), measures)
        out["qlfusion_mae"][method] = cross_fit.test_mae["qlfusion"]
        true_p, mask, mean = data.test["counts"] / depth, data.test["mask"], draws.mean(0)
        out["qlfusion_coverage"][method] = interval_coverage(shares, true_p, mask)
        out["qlfusion_spearman"][method] = {
            name: _spearman(mean[keep], true_p[keep])
            for name, keep in zip(
                data.run_names, _run_masks(mask, len(data.run_names)), strict=True
            )
        }
        if method == SHOWN:
            lower, upper = predictive_interval(shares, 0.9)
            shown = {"run_names": data.run_names, "summary": (mean, lower, upper)}
            shown.update(true_p=true_p, mask=mask)
    if figure is not None:
        _plot(Path(figure), table=out, measures=measures, **shown)
    return out


def _run_masks(mask: torch.Tensor, n_runs: int) -> list[torch.Tensor]:
    """Per run, the `M x n` mask of its held-out lists (members are ``fold * R + run``)."""
    member_run = torch.arange(mask.shape[0]) % n_runs
    return [mask & (member_run == r).unsqueeze(-1) for r in range(n_runs)]


def _spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman's rho (average ranks for ties); NaN for fewer than 3 lists or a constant."""
    from scipy.stats import spearmanr

    if x.numel() < 3 or bool((x == x[0]).all()) or bool((y == y[0]).all()):
        return float("nan")
    return float(spearmanr(x.double().numpy(), y.double().numpy()).statistic)


def _plot(
    path: Path,
    run_names: list[str],
    summary: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    true_p: torch.Tensor,
    mask: torch.Tensor,
    table: dict[str, dict[str, Any]],
    measures: list[str],
) -> None:
    mean, lower, upper = summary
    fig, (left, right) = new_figure(1, 2, figsize=(11, 4.5))
    rho = table["qlfusion_spearman"][SHOWN]
    for name, keep in zip(run_names, _run_masks(mask, len(run_names)), strict=True):
        x, y = true_p[keep], mean[keep]
        err = torch.stack([y - lower[keep], upper[keep] - y]).clamp_min(0)
        label = f"{name} (Spearman {rho.get(name, float('nan')):.2f})"
        left.errorbar(x, y, yerr=err, fmt="o", ms=3, alpha=0.6, capsize=2, label=label)
    left.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    lines = ["held-out lists inside their predictive interval (50% / 90%):"] + [
        f"{method}: {c['coverage_50']:.2f} / {c['coverage_90']:.2f}"
        for method, c in table["qlfusion_coverage"].items()
    ]
    left.text(
        0.98,
        0.03,
        "\n".join(lines),
        transform=left.transAxes,
        ha="right",
        va="bottom",
        fontsize=7,
        bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "grey"},
    )
    left.set(
        xlabel="true proportion of relevant documents in the top 100",
        ylabel="predicted proportion (mean, 90% predictive interval)",
        title=f"{SHOWN} on held-out lists",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    left.legend(fontsize=7, loc="upper left")
    methods = ["combsum", "combmnz", *DEMO_LIKELIHOODS]
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        positions = [j + i * width for j in range(len(measures))]
        right.bar(positions, [table[method][m] for m in measures], width, label=method)
    right.set_xticks([j + 0.4 - width / 2 for j in range(len(measures))], measures)
    right.set(title="Fused runs (5-fold CV for QLFusion)", ylim=(0, 1))
    right.legend(fontsize=8, loc="lower left", framealpha=0.9)
    save_figure(fig, path, dpi=110)
