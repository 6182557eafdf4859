"""A small, encoder-free demonstration of the GPF head for ``probrank demo``.

Synthetic pair features stand in for encoder outputs: in-domain items ``x ~ N(0, I)`` with
``P(relevant) = sigmoid(3 w^T x)``; shifted items are moved along a direction the training data
never varied in, and their labels follow a weaker rule ``sigmoid(w^T x)`` (the shifted domain is
harder, as MEDIQA is for an Ubuntu-trained ranker). A deterministic MLP head and a GPF head are
trained on the same data; GPF's focal gamma, epochs and mean-field factor are chosen by
in-domain validation NLL as in the ``gpf_ranker`` protocol
(:mod:`probrank.models.gpf_ranker.selection`). Both are scored on
in-domain and shifted test items and drawn in one reliability diagram.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._files import save_figure
from probrank.evaluation.calibration import expected_calibration_error, negative_log_likelihood
from probrank.evaluation.calibration_plots import reliability_figure
from probrank.models.gpf_ranker import Family, GPFRanker, GPFRankerSettings, HeadKind

__all__ = ["demo_section"]


def _data(n: int, dim: int, generator: torch.Generator) -> dict[str, tuple[Tensor, Tensor]]:
    w = torch.zeros(dim)
    w[0] = 1.0
    shift = torch.zeros(dim)
    shift[1:] = 8.0 / math.sqrt(dim - 1)

    def draw(count: int, offset: Tensor, strength: float) -> tuple[Tensor, Tensor]:
        x = torch.randn(count, dim, generator=generator)
        x[:, 1:] *= 0.3  # training data hardly varies off the relevant direction
        x = x + offset
        y = torch.bernoulli(torch.sigmoid(strength * (x @ w)), generator=generator)
        return x, y

    zero = torch.zeros(dim)
    return {
        "train": draw(n, zero, 3.0),
        "validation": draw(n // 2, zero, 3.0),
        "in-domain test": draw(n, zero, 3.0),
        "shifted test": draw(n, shift, 1.0),
    }


def demo_section(output_dir: str | Path, seed: int = 0, quick: bool = True) -> tuple[str, dict]:
    """Train a deterministic and a GPF head on synthetic features and compare calibration.

    Args:
        output_dir: Folder for ``gpf_reliability.png`` (created if missing).
        seed: Seed of the data, the weights and the training.
        quick: Smaller data and grids (a few seconds on two CPU cores).

    Returns:
        ``(markdown, results)``: a short Markdown section (table and image link) and
        ``{"in-domain test" | "shifted test": {"deterministic" | "gpf": {"accuracy", "ECE",
        "NLL"}}, "selected": {...}, "reliability_png": str}``.
    """

    generator = torch.Generator().manual_seed(seed)
    dim = 8
    data = _data(800 if quick else 4000, dim, generator)
    x_train, y_train = data["train"]
    x_val, y_val = data["validation"]
    epochs = (5, 10, 20) if quick else (5, 10, 20, 40)
    deterministic = GPFRankerSettings(
        head=HeadKind.DETERMINISTIC,
        hidden=32,
        epochs=epochs,
        batch_size=100,
        lr=1e-2,
        mean_field_factors=(0.0, math.pi / 8, 1.0, 3.0),
        temperature=False,
        seed=seed,
    )
    setups = {
        "deterministic": deterministic,
        "gpf": dataclasses.replace(
            deterministic,
            head=HeadKind.GPF,
            num_features=128 if quick else 512,
            gammas=(1.0, 2.0) if quick else (1.0, 2.0, 3.0),
        ),
    }
    results: dict[str, Any] = {"selected": {}}
    probabilities: dict[str, dict[str, Tensor]] = {}
    for name, settings in setups.items():
        # the model object's validation selection (the frozen-encoder regime of the card)
        ranker = GPFRanker(settings).fit_features(
            (x_train, y_train), (x_val, y_val), families=[Family.PLAIN]
        )[Family.PLAIN]
        results["selected"][name] = ranker.selected
        for split in ("in-domain test", "shifted test"):
            x, y = data[split]
            p = ranker.predict_features(x).double()
            probabilities.setdefault(split, {})[name] = p
            results.setdefault(split, {})[name] = {
                "accuracy": float(((p > 0.5).double() == y.double()).double().mean()),
                "ECE": expected_calibration_error(p, y.long(), n_bins=10),
                "NLL": negative_log_likelihood(p, y.long()),
            }
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    png = output / "gpf_reliability.png"
    panels = {split: (rows, data[split][1]) for split, rows in probabilities.items()}
    save_figure(reliability_figure(panels), png, dpi=80, tight=False)
    results["reliability_png"] = str(png)
    lines = [
        "### Calibrated relevance with a GP head (GPF vs deterministic)",
        "",
        "Synthetic pair features; GPF's focal gamma, epochs and mean-field factor chosen by "
        "in-domain validation NLL; the shifted test moves items off the training data.",
        "",
        "| test | head | accuracy | ECE | NLL |",
        "|---|---|---|---|---|",
    ]
    for split in ("in-domain test", "shifted test"):
        for name in setups:
            r = results[split][name]
            lines.append(
                f"| {split} | {name} | {r['accuracy']:.3f} | {r['ECE']:.3f} | {r['NLL']:.3f} |"
            )
    lines += ["", f"![GPF reliability diagram]({png.name})", ""]
    return "\n".join(lines), results
