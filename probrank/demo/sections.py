"""The demo's sections: each takes the :class:`DemoContext`, returns markdown for ``report.md``,
stores its numbers in ``ctx.results`` and writes its figure into the report folder."""

from __future__ import annotations

from collections.abc import Callable

from probrank.demo.context import DemoContext, DemoSection
from probrank.demo.plots import bar_chart
from probrank.evaluation import compare, evaluate
from probrank.experiments.results import format_table

__all__ = [
    "SECTIONS",
    "calibration_section",
    "evaluation_section",
    "fusion_section",
    "interactive_section",
    "multitask_section",
]

DEMO_MEASURES = ["AP", "nDCG@10", "P@5", "P@10", "R@100", "RR"]


def _fmt(rows: dict[str, dict[str, float]]) -> dict[str, dict[str, str]]:
    return {name: {m: f"{v:.4f}" for m, v in row.items()} for name, row in rows.items()}


def evaluation_section(ctx: DemoContext) -> str:
    """trec_eval measures of the generated runs and randomisation tests against the best."""
    qrels, runs = ctx.collection.qrels, ctx.collection.runs
    rows = {r.name: evaluate(qrels, r, DEMO_MEASURES) for r in runs}
    table = format_table(
        "Generated runs (probrank's own trec_eval 10.0 implementation, "
        "probrank.evaluation.trec_eval)",
        _fmt(rows),
    )
    tests = compare(qrels, runs, ["AP", "nDCG@10"], test="randomization", seed=ctx.seed)
    ctx.results["evaluation"] = {name: dict(row) for name, row in rows.items()}
    figure = ctx.figure_path("evaluation.png")
    bar_chart(rows, DEMO_MEASURES, "Generated runs", figure)
    significance = tests.to_string(index=False, float_format=lambda v: f"{v:.4f}")
    quality = ", ".join(f"{k} {v:.2f}" for k, v in ctx.collection.run_quality.items())
    return (
        "## Evaluation\n\n"
        "Runs generated with relevant-score means above the non-relevant tail at rank 100 (in "
        f"exponential scales): {quality}.\n\n"
        f"```\n{table}\n```\n\n"
        f"Randomisation tests against `{runs[0].name}` (Holm-corrected):\n\n"
        f"```\n{significance}\n```\n\n"
        f"![evaluation]({figure.name})\n"
    )


def fusion_section(ctx: DemoContext) -> str:
    """CombSUM, CombMNZ and QLFusion (Bayesian quantifier, 5-fold CV) on the generated runs."""
    from probrank.demo.qlfusion import qlfusion_demo

    posterior_figure = ctx.figure_path("qlfusion.png")
    out = qlfusion_demo(
        ctx.collection.runs,
        ctx.collection.qrels,
        seed=ctx.seed,
        quick=True,
        figure=posterior_figure,
    )
    mae = out.pop("qlfusion_mae", {})
    coverage = out.pop("qlfusion_coverage", {})
    rho = out.pop("qlfusion_spearman", {})
    ctx.results["fusion"] = {
        **out,
        "qlfusion_test_mae": mae,
        "qlfusion_coverage": coverage,
        "qlfusion_spearman": rho,
    }
    table = format_table("Fused runs (5-fold CV over queries for QLFusion)", _fmt(out))
    quantifiers = format_table(
        "QLFusion quantifiers on held-out lists",
        {
            model: {
                "MAE": f"{mae[model]:.4f}",
                "cover 50%": f"{coverage[model]['coverage_50']:.2f}",
                "cover 90%": f"{coverage[model]['coverage_90']:.2f}",
                **{f"rho {run}": f"{v:.2f}" for run, v in rho[model].items()},
            }
            for model in mae
        },
    )
    return (
        "## Rank fusion and QLFusion\n\n"
        "QLFusion predicts, per (query, run), the proportion of relevant documents in the top "
        "100 with a Bayesian output layer trained by SVI, and weights each run's min-max "
        "scores by it; `qlfusion` is the paper's binomial likelihood, "
        "`qlfusion_latent` the default, a beta-binomial whose concentration (over-dispersion) "
        "each run's quantifier learns. Per quantifier: "
        "test MAE of the predicted proportion, the share of held-out lists whose true "
        "proportion lies in its 50% / 90% posterior predictive interval (a relevant count "
        "drawn from the likelihood per posterior draw, over 100), and the Spearman "
        "correlation (rho) between predicted and true proportion over each run's held-out "
        "lists.\n\n"
        f"```\n{quantifiers}\n```\n\n"
        f"```\n{table}\n```\n\n"
        "Left: each held-out list's predicted proportion (posterior mean and 90% predictive "
        "interval of `qlfusion_latent`) against the true one; right: the fused "
        "runs.\n\n"
        f"![qlfusion]({posterior_figure.name})\n"
    )


def calibration_section(ctx: DemoContext) -> str:
    """Deterministic vs GPF relevance heads on generated features: calibration in and out of
    domain, with a reliability diagram."""
    from probrank.demo.gpf import demo_section

    markdown, results = demo_section(ctx.output_dir, seed=ctx.seed, quick=ctx.quick)
    markdown = markdown.replace("### ", "## ", 1)
    ctx.figures.append("gpf_reliability.png")
    ctx.results["calibration"] = results
    return markdown


def multitask_section(ctx: DemoContext) -> str:
    """The MEDIQA-style multi-task filter + re-rank head on generated answer lists."""
    from probrank.demo.multitask import demo_section

    markdown, results = demo_section(ctx.output_dir, seed=ctx.seed, quick=ctx.quick)
    ctx.figures.append("multitask.png")
    ctx.results["multitask"] = results
    return markdown


def interactive_section(ctx: DemoContext) -> str:
    """A simulated interactive session: pair selection by expected improvement and others."""
    from probrank.demo.interactive import demo_session

    markdown, results = demo_session(ctx.output_dir, seed=ctx.seed, quick=ctx.quick)
    ctx.figures.append("interactive_accuracy.png")
    ctx.results["interactive"] = results
    return markdown


SECTIONS: dict[DemoSection, Callable[[DemoContext], str]] = {
    DemoSection.EVALUATION: evaluation_section,
    DemoSection.FUSION: fusion_section,
    DemoSection.CALIBRATION: calibration_section,
    DemoSection.MULTITASK: multitask_section,
    DemoSection.INTERACTIVE: interactive_section,
}
"""Each section's function, by :class:`~probrank.demo.context.DemoSection`, in run order."""
