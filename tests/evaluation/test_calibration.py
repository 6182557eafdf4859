"""Calibration metrics against hand computations and scikit-learn."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

from probrank.evaluation import (
    brier_score,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
    plot_reliability_diagram,
    reliability_curve,
)
from probrank.exceptions import InputDataError


def test_ece_by_hand():
    probs = [0.9, 0.8, 0.3, 0.6]
    labels = [1, 0, 0, 1]
    # top-label confidences 0.9, 0.8, 0.7, 0.6 -> bins 9, 8, 7, 6; hits 1, 0, 1, 1
    want = (abs(1 - 0.9) + abs(0 - 0.8) + abs(1 - 0.7) + abs(1 - 0.6)) / 4
    assert expected_calibration_error(probs, labels) == pytest.approx(want, abs=1e-12)
    assert maximum_calibration_error(probs, labels) == pytest.approx(0.8, abs=1e-12)
    # positive kind: bins hold P(rel) 0.9, 0.8, 0.3, 0.6
    want_pos = (0.1 + 0.8 + 0.3 + 0.4) / 4
    got = expected_calibration_error(probs, labels, kind="positive")
    assert got == pytest.approx(want_pos, abs=1e-12)


def test_bins_are_right_closed_with_zero_in_first():
    curve = reliability_curve([0.0, 0.1, 0.10000001, 1.0], [0, 0, 1, 1], n_bins=10, kind="positive")
    assert curve.counts.tolist() == [2, 1, 0, 0, 0, 0, 0, 0, 0, 1]


def test_positive_curve_matches_sklearn():
    rng = np.random.default_rng(1)
    probs = rng.uniform(size=2000)
    labels = (rng.uniform(size=2000) < probs**1.5).astype(int)
    curve = reliability_curve(probs, labels, n_bins=10, kind="positive")
    prob_true, prob_pred = calibration_curve(labels, probs, n_bins=10, strategy="uniform")
    filled = curve.counts > 0
    np.testing.assert_allclose(curve.accuracy[filled], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.confidence[filled], prob_pred, rtol=0, atol=1e-12)


def test_calibrated_predictions_have_small_ece_and_miscalibrated_large():
    rng = np.random.default_rng(2)
    probs = rng.uniform(size=50_000)
    labels = (rng.uniform(size=probs.size) < probs).astype(int)
    assert expected_calibration_error(probs, labels) < 0.01
    overconfident = np.clip(0.5 + 1.6 * (probs - 0.5), 0, 1)
    assert expected_calibration_error(overconfident, labels) > 0.05


def test_brier_and_nll_match_sklearn():
    rng = np.random.default_rng(3)
    probs = rng.uniform(0.01, 0.99, size=500)
    labels = rng.integers(0, 2, size=500)
    assert brier_score(probs, labels) == pytest.approx(brier_score_loss(labels, probs), abs=1e-12)
    assert negative_log_likelihood(probs, labels) == pytest.approx(
        log_loss(labels, probs), abs=1e-12
    )
    assert negative_log_likelihood(torch.tensor([1.0]), torch.tensor([0])) == pytest.approx(
        -np.log(1e-12), rel=1e-5
    )


def test_multiclass_top_label():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    labels = np.array([0, 1])
    assert expected_calibration_error(probs, labels) == pytest.approx((0.3 + 0.6) / 2, abs=1e-12)
    with pytest.raises(InputDataError, match="top_label"):
        expected_calibration_error(probs, labels, kind="positive")


@pytest.mark.parametrize(
    ("probs", "labels", "message"),
    [
        ([0.5, 1.2], [0, 1], "lie in"),
        ([0.5, float("nan")], [0, 1], "NaN"),
        ([0.5], [0, 1], "do not match"),
        ([0.5, 0.5], [0, 2], "0/1"),
        ([0.5, 0.5], [0, 0.5], "integers"),
    ],
)
def test_bad_inputs(probs, labels, message):
    with pytest.raises(InputDataError, match=message):
        expected_calibration_error(probs, labels)


def test_reliability_diagram_draws(tmp_path):
    rng = np.random.default_rng(4)
    probs = rng.uniform(size=200)
    labels = (rng.uniform(size=200) < probs).astype(int)
    ax = plot_reliability_diagram({"model": reliability_curve(probs, labels)}, title="t")
    ax.figure.savefig(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 1000
    assert "ECE" in ax.get_legend().get_texts()[1].get_text()


def test_plots_leave_the_users_matplotlib_backend_alone():
    # A notebook's inline or widget backend must survive a plot call; run in a fresh
    # interpreter so that this process's Agg backend does not decide the outcome.
    import os
    import subprocess
    import sys

    code = (
        "import matplotlib; matplotlib.use('svg');"
        "import numpy as np;"
        "from probrank.evaluation import plot_reliability_diagram, reliability_curve;"
        "p = np.linspace(0.05, 0.95, 50); y = (p > 0.5).astype(int);"
        "plot_reliability_diagram(reliability_curve(p, y));"
        "from probrank.diagnostics.plots import _pyplot; _pyplot();"
        "print(matplotlib.get_backend())"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "svg"
