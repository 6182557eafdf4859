"""A small demo of the multi-task filter + re-rank head on generated answer lists.

Questions get 4 to 10 answers with `d`-dimensional features; a hidden linear utility plus noise
sets each answer's grade 1..4 (by fixed cut points) and its label (grade >= 3), as MEDIQA's
ReferenceScore does. The deterministic and the Bayesian head are each a
:class:`~probrank.models.multitask.MultiTaskRanker` (one ranking weight, the P(keep) threshold
0.5, no keep-top rule) fitted with :meth:`~probrank.models.multitask.MultiTaskRanker.
fit_features` on training questions, early-stopped on validation questions and scored on test
questions: accuracy of P(correct) > 0.5, MRR of the first correct answer labelled correct,
ECE of P(correct), and the Bayesian head's posterior utility spread.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from probrank._files import new_figure, save_figure
from probrank.evaluation.calibration import expected_calibration_error
from probrank.evaluation.calibration_plots import plot_reliability
from probrank.experiments.results import format_table
from probrank.models.multitask import (
    AnswerFeatures,
    KeepTop,
    MultiTaskData,
    MultiTaskRanker,
    MultiTaskSettings,
)

__all__ = ["demo_section", "generated_answer_lists"]


def generated_answer_lists(
    num_questions: int, *, dim: int = 8, noise: float = 0.7, seed: int = 0
) -> tuple[MultiTaskData, list[list[int]], list[int]]:
    """Generated questions' answers with a hidden linear utility.

    Args:
        num_questions: Questions to generate.
        dim: Feature width ``d``.
        noise: Standard deviation of the utility noise (the label noise).
        seed: Seed of the generator.

    Returns:
        ``(data, groups, grades)``: tensors (`n x d` features, `n` labels, pairs by grade), the
        answer indices of each question, and the `n` grades 1..4.
    """
    generator = torch.Generator().manual_seed(seed)
    weights = torch.linspace(1.5, -1.0, dim, dtype=torch.float64)
    features: list[Tensor] = []
    groups: list[list[int]] = []
    grades: list[int] = []
    for _ in range(num_questions):
        n = int(torch.randint(4, 11, (1,), generator=generator))
        x = torch.randn(n, dim, generator=generator, dtype=torch.float64)
        utility = x @ weights / dim**0.5 + noise * torch.randn(
            n, generator=generator, dtype=torch.float64
        )
        grade = torch.bucketize(utility, torch.tensor([-0.8, 0.3, 1.2], dtype=torch.float64)) + 1
        groups.append(list(range(len(grades), len(grades) + n)))
        features.append(x)
        grades += [int(g) for g in grade]
    labels = torch.tensor([float(g >= 3) for g in grades], dtype=torch.float64)
    data = MultiTaskData(
        torch.cat(features), labels, MultiTaskData.pairs_from_grades(groups, grades)
    )
    return data, groups, grades


def _answers(data: MultiTaskData, groups: list[list[int]], grades: list[int]) -> AnswerFeatures:
    """The generated answers as the model's labelled features."""
    names = [f"x{i}" for i in range(data.features.shape[1])]
    return AnswerFeatures(data.features, groups, data.labels, grades, names)


def _mrr(scores: Tensor, predicted: Tensor, labels: Tensor, groups: list[list[int]]) -> float:
    """MEDIQA-style MRR: 1 / position of the first answer labelled 1 that is correct."""
    total = 0.0
    for group in groups:
        order = sorted(group, key=lambda i: -float(scores[i]))
        for position, i in enumerate(order, start=1):
            if predicted[i] > 0 and labels[i] > 0:
                total += 1.0 / position
                break
    return total / len(groups)


def demo_section(output_dir: Path, seed: int = 0, quick: bool = False) -> tuple[str, dict]:
    """Fit the deterministic and Bayesian multi-task heads on generated lists, write
    ``multitask.png`` (reliability of P(correct), posterior utility against the grade) into
    ``output_dir`` and return the report's markdown and the numbers.

    Args:
        output_dir: Folder for the PNG (created).
        seed: Seed of the data and the models.
        quick: Fewer questions and epochs (for tests).

    Returns:
        ``(markdown, {"deterministic" | "bayesian": {measure: value}})``.
    """
    sizes = (40, 15, 40) if quick else (120, 30, 120)
    train = _answers(*generated_answer_lists(sizes[0], seed=seed))
    val = _answers(*generated_answer_lists(sizes[1], seed=seed + 1))
    test, groups, grades = generated_answer_lists(sizes[2], seed=seed + 2)
    results: dict[str, dict[str, float]] = {}
    probs: dict[str, np.ndarray] = {}
    spread: tuple[Tensor, Tensor] | None = None
    for name, bayesian in (("deterministic", False), ("bayesian", True)):
        settings = MultiTaskSettings(
            hidden=16,
            bayesian=bayesian,
            weight_decay=1e-4,
            lr=2e-2,
            max_epochs=60 if quick else 150,
            patience=15,
            ranking_weights=(0.7,),
            thresholds=(0.5,),
            keep_top=KeepTop.NEVER,
            posterior_samples=200,
            seed=seed,
            progress=False,
        )
        ranker = MultiTaskRanker(settings).fit_features(train, val)
        p, mean, sd = ranker.predictive_features(test.features)
        predicted = (p > ranker.choice["threshold"]).double()
        results[name] = {
            "accuracy": float((predicted == test.labels).double().mean()),
            "MRR": _mrr(mean, predicted, test.labels, groups),
            "ECE": expected_calibration_error(
                p.numpy(), test.labels.long().numpy(), kind="positive"
            ),
            "mean utility sd": float(sd.mean()),
        }
        probs[name] = p.numpy()
        if bayesian:
            spread = (mean, sd)
    figure, (left, right) = new_figure(1, 2, figsize=(9, 4))
    plot_reliability(
        probs,
        test.labels.long().numpy(),
        ax=left,
        title="P(correct) on test questions",
        xlabel="posterior P(correct)",
        ylabel="fraction correct",
    )
    if spread is not None:
        mean, sd = spread
        jitter = np.random.default_rng(seed).uniform(-0.15, 0.15, len(grades))
        right.errorbar(
            np.array(grades) + jitter,
            mean.numpy(),
            yerr=2 * sd.numpy(),
            fmt="o",
            ms=3,
            alpha=0.5,
            elinewidth=0.8,
        )
        right.set_xticks([1, 2, 3, 4])
        right.set_xlabel("reference grade (3-4 correct)")
        right.set_ylabel("posterior utility (mean ± 2 sd)")
        right.set_title("Bayesian head: utility against grade")
    figure.tight_layout()
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    path = save_figure(figure, Path(output_dir) / "multitask.png", dpi=100, tight=False)
    table = format_table(
        "Multi-task head on generated answer lists (test questions)",
        {n: {m: f"{v:.4f}" for m, v in row.items()} for n, row in results.items()},
    )
    markdown = (
        "## Multi-task answer filtering and re-ranking\n\n"
        "One latent utility per answer feeds a Bernoulli filtering likelihood (is the answer "
        "correct?) and a Bradley-Terry ranking likelihood (pairs ordered by grade); the "
        "Bayesian head has a Normal prior on its output layer and is fitted by SVI, its "
        f"deterministic twin by Adam on the same loss. {sizes[0]} training, {sizes[1]} "
        f"validation and {sizes[2]} test questions with 4-10 generated answers each.\n\n"
        f"```\n{table}\n```\n\n![multitask]({path.name})\n"
    )
    return markdown, results
