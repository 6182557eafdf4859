"""A small QLFusion demonstration on any runs: 5-fold CV, a table and a figure."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch

from probrank._files import new_figure, save_figure
from probrank._threads import torch_threads
from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.inference.predictive import credible_interval
from probrank.models.qlfusion import QLFusion, QLFusionSettings

__all__ = ["DEMO_MEASURES", "qlfusion_demo"]

DEMO_MEASURES = ("P@5", "nDCG@5", "nDCG@10", "AP")


def qlfusion_demo(
    runs: Sequence[Run],
    qrels: Qrels,
    seed: int = 0,
    quick: bool = True,
    figure: str | os.PathLike[str] | None = None,
) -> dict[str, dict[str, float]]:
    """CombSUM, CombMNZ and QLFusion on any runs by 5-fold CV (small settings for a demo).

    Takes a few seconds on the demo's generated runs with ``quick`` (two batch sizes, at
    most 200 SVI steps per quantifier).

    Args:
        runs: Input runs (e.g. generated ones); not modified.
        qrels: Their judgements.
        seed: Seeds the folds and training.
        quick: Small settings (seconds); otherwise the paper's settings.
        figure: Optional PNG path (written atomically): left, each held-out list's predicted
            proportion of relevant documents (posterior predictive mean and 90% credible
            interval) against the true proportion; right, the fused runs' measures.

    Returns:
        ``{method: {measure: value}}`` for ``combsum``, ``combmnz`` and ``qlfusion``, with
        P@5, nDCG@5, nDCG@10 and AP, plus ``{"qlfusion_mae": {"MAE": ...}}`` (test MAE of the
        predicted proportion).
    """
    depth = 100
    measures = list(DEMO_MEASURES)
    settings = (
        QLFusionSettings(
            batch_sizes=(4, 16),
            max_epochs=60,
            patience=10,
            max_steps=200,
            posterior_samples=50,
            seed=seed,
            progress=False,
        )
        if quick
        else QLFusionSettings(max_steps=None, seed=seed, progress=False)  # the paper's: no cap
    )
    model = QLFusion(settings)
    out = {
        m: evaluate(qrels, fuse(runs, m, norm="minmax", depth=depth), measures)
        for m in (FusionMethod.COMBSUM.value, FusionMethod.COMBMNZ.value)
    }
    with torch_threads(1):
        cross_fit = model.cross_fit(runs, qrels, folds=5, fold_seed=seed)
        data = cross_fit.data
        draws = cross_fit.quantifiers["qlfusion"].draws(
            data.test["x"], "binomial", settings.posterior_samples, seed=seed
        )
    out["qlfusion"] = evaluate(qrels, cross_fit.fuse(runs, name="fused"), measures)
    out["qlfusion_mae"] = {"MAE": cross_fit.test_mae["qlfusion"]}
    if figure is not None:
        summary = credible_interval(draws, 0.9)
        true_p = data.test["counts"] / depth
        _plot(Path(figure), data.run_names, summary, true_p, data.test["mask"], out, measures)
    return out


def _plot(
    path: Path,
    run_names: list[str],
    summary: object,
    true_p: torch.Tensor,
    mask: torch.Tensor,
    table: dict[str, dict[str, float]],
    measures: list[str],
) -> None:
    mean, lower, upper = (getattr(summary, k) for k in ("mean", "lower", "upper"))
    fig, (left, right) = new_figure(1, 2, figsize=(11, 4.5))
    n_runs = len(run_names)
    for r, name in enumerate(run_names):
        rows = torch.arange(mask.shape[0]) % n_runs == r
        keep = mask & rows.unsqueeze(-1)
        x, y = true_p[keep], mean[keep]
        err = torch.stack([y - lower[keep], upper[keep] - y]).clamp_min(0)
        left.errorbar(x, y, yerr=err, fmt="o", ms=3, alpha=0.7, capsize=2, label=name)
    left.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    left.set(
        xlabel="true proportion of relevant documents in the top 100",
        ylabel="predicted p_hat (mean, 90% credible interval)",
        title="QLFusion quantifier on held-out lists",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    left.legend(fontsize=8)
    methods = [m for m in ("combsum", "combmnz", "qlfusion") if m in table]
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        positions = [j + i * width for j in range(len(measures))]
        right.bar(positions, [table[method][m] for m in measures], width, label=method)
    right.set_xticks([j + 0.4 - width / 2 for j in range(len(measures))], measures)
    right.set(title="Fused runs (5-fold CV for QLFusion)", ylim=(0, 1))
    right.legend(fontsize=8)
    save_figure(fig, path, dpi=110)
