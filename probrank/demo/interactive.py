"""A simulated interactive session on generated candidates, for ``probrank demo``.

No data files, no encoder: :mod:`probrank.experiments.interactive.synthetic` generates
questions, the Siamese network is warm-started on generated training questions, and a noisy
simulated user answers the pairs that expected improvement (and, for comparison, random
selection and the GPPL baseline with EUBO) asks about. Writes an accuracy-per-round PNG.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from probrank._files import new_figure, save_figure
from probrank.acquisition.select import Strategy
from probrank.experiments.interactive.cells import Cell, load_experiment_data, run_cell
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind

__all__ = ["demo_session"]


def demo_session(
    output_dir: str | os.PathLike[str], seed: int = 0, quick: bool = False
) -> tuple[str, dict[str, Any]]:
    """Run the demo's interactive section.

    Args:
        output_dir: Folder for ``interactive_accuracy.png`` (created if needed).
        seed: Seed of the warm start, the posteriors and the simulated user.
        quick: Fewer questions and rounds (for tests).

    Returns:
        ``(markdown, results)``: a Markdown section (table + image link) and
        ``{cell name: {"accuracy": [...], "ndcg@5": [...], "median_round_seconds": x}}``.
    """
    options = InteractiveRankerSettings()
    options = dataclasses.replace(
        options,
        warm_start=dataclasses.replace(options.warm_start, max_epochs=4 if quick else 20),
    )
    rounds = 4 if quick else 10
    data = load_experiment_data("synthetic", options=options, max_questions=4 if quick else 20)
    cells = [
        Cell(PosteriorKind.LAPLACE, Strategy.EI, 0.3),
        Cell(PosteriorKind.LAPLACE, Strategy.RANDOM, 0.3),
        Cell(PosteriorKind.GPPL, Strategy.EUBO, 0.3),
    ]
    results: dict[str, Any] = {}
    for cell in cells:
        result = run_cell(
            data, cell, seeds=1, rounds=rounds, options=options, progress=False, first_seed=seed
        )
        results[cell.name] = result.to_json()
    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fig, ax = new_figure(figsize=(5.0, 3.4))
    for name, values in results.items():
        ax.plot(range(rounds + 1), values["accuracy"], marker="o", label=name)
    ax.set_xlabel("judgements")
    ax.set_ylabel("matching accuracy")
    ax.set_title(f"interactive ranking, {len(data.questions)} generated questions")
    ax.set_ylim(0.0, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    image = folder / "interactive_accuracy.png"
    save_figure(fig, image, dpi=80, tight=False)
    shown = [r for r in (0, 1, 2, 4, 10) if r <= rounds]
    lines = [
        "## Interactive answer selection (simulated user, t = 0.3)",
        "",
        f"{len(data.questions)} generated questions with 10-20 candidates; the Siamese network "
        "is warm-started on generated training questions; after each judgement the posterior "
        "is updated and the candidates re-ranked by posterior mean.",
        "",
        "| configuration | " + " | ".join(f"acc@{r}" for r in shown) + " | s/round |",
        "|---|" + "---|" * (len(shown) + 1),
    ]
    for name, values in results.items():
        accuracy = " | ".join(f"{values['accuracy'][r]:.3f}" for r in shown)
        lines.append(f"| {name} | {accuracy} | {values['median_round_seconds']:.4f} |")
    lines += ["", f"![accuracy per round]({image.name})", ""]
    return "\n".join(lines), results
