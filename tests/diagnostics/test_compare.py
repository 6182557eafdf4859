"""SVI-vs-NUTS comparison tables and the diagnostic plots."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probrank.diagnostics import (
    compare_posteriors,
    plot_forest,
    plot_posterior_comparison,
    plot_reliability,
    plot_trace,
    save_posterior_summary,
    to_inference_data,
)
from probrank.exceptions import InputDataError


@pytest.fixture(autouse=True)
def _agg() -> None:
    import matplotlib

    matplotlib.use("Agg")


def test_standardised_differences_of_known_gaussians() -> None:
    generator = torch.Generator().manual_seed(0)
    ref = torch.randn(4, 5000, 2, generator=generator, dtype=torch.float64)
    approx = torch.randn(1, 20000, 2, generator=generator, dtype=torch.float64)
    approx = approx * torch.tensor([0.5, 1.0], dtype=torch.float64) + torch.tensor(
        [0.0, 0.3], dtype=torch.float64
    )
    table = compare_posteriors(to_inference_data({"w": ref}), to_inference_data({"w": approx}))
    assert list(table.columns) == ["NUTS mean", "NUTS sd", "SVI mean", "SVI sd", "z", "sd ratio"]
    np.testing.assert_allclose(table["sd ratio"], [0.5, 1.0], atol=0.02)
    np.testing.assert_allclose(table["z"], [0.0, 0.3], atol=0.03)
    np.testing.assert_allclose(table.attrs["mean |z|"], 0.15, atol=0.03)
    with pytest.raises(InputDataError):
        compare_posteriors(to_inference_data({"w": ref}), to_inference_data({"v": approx}))


def test_plots_and_the_posterior_summary_png(tmp_path: object) -> None:
    import matplotlib.pyplot as plt

    generator = torch.Generator().manual_seed(1)
    data = to_inference_data(
        {"w": torch.randn(2, 100, 3, generator=generator), "b": torch.randn(2, 100)},
        dims={"w": ["feature"]},
        coords={"feature": ["x", "y", "z"]},
    )
    fig = plot_trace(data, var_names=["w"])
    assert len(fig.axes) == 6
    plt.close(fig)
    ax = plot_forest(data)
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()] == ["w[x]", "w[y]", "w[z]", "b"]
    plt.close(ax.figure)
    table = compare_posteriors(data, data)
    plt.close(plot_posterior_comparison(table).figure)
    labels = torch.bernoulli(torch.full((200,), 0.3), generator=generator)
    ax = plot_reliability({"a": torch.rand(200, generator=generator), "b": labels * 0.9}, labels)
    assert len(ax.get_legend().get_texts()) == 3  # perfect + two models
    plt.close(ax.figure)
    with pytest.raises(InputDataError, match="does not exist"):
        save_posterior_summary(data, tmp_path / "missing" / "x.png")  # type: ignore[operator]
    (tmp_path / "out").mkdir()  # type: ignore[operator]
    for chains, name in ((2, "mcmc.png"), (1, "svi.png")):
        source = data if chains == 2 else to_inference_data({"w": torch.randn(50, 3)}, chains=False)
        path = save_posterior_summary(source, tmp_path / "out" / name, title="test")  # type: ignore[operator]
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["mcmc.png", "svi.png"]  # type: ignore[operator]


def test_readme_states_the_reliability_plot_signatures_of_the_code() -> None:
    # Regression (docs): the README listed plot_reliability_diagram among the functions of
    # predicted probabilities; it draws reliability *curves*, and plot_reliability takes the
    # probabilities. The README now writes both calls out; they must match the code.
    import inspect
    import re
    from pathlib import Path

    from probrank.evaluation.calibration_plots import plot_reliability_diagram

    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "evaluation.md"
    readme = " ".join(page.read_text().split())
    stated = re.search(r"`plot_reliability_diagram\(([^)]*)\)`", readme)
    assert stated is not None, "the README does not give plot_reliability_diagram's signature"
    names = [p.split("=")[0].strip() for p in stated.group(1).split(",")]
    assert names == list(inspect.signature(plot_reliability_diagram).parameters)
    assert "plot_reliability({model: probs}, labels)" in readme
    assert list(inspect.signature(plot_reliability).parameters)[:2] == ["probs", "labels"]
