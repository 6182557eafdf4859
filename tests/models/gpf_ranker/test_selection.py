"""Validation-NLL selection: the chosen checkpoint is the best of all, and restores exactly."""

from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker.selection import Family, restore, select, train_checkpoints
from probrank.nn.calibration import select_calibration
from probrank.nn.heads import FitSettings


def _task(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    logits = 2.0 * x[:, 0] - x[:, 1]
    y = (torch.rand(n, generator=generator) < torch.sigmoid(logits)).float()
    return x, y


@pytest.fixture(scope="module")
def checkpoints():
    x, y = _task(200, 0)
    x_val, _ = _task(80, 1)
    grid = [{"hidden": 16, "num_features": 64, "gamma": g, "seed": 0} for g in (1.0, 3.0)]
    options = FitSettings(batch_size=32, lr=1e-2, seed=0)
    return train_checkpoints("gpf", 4, grid, (x, y), x_val, (1, 4), options)


def test_one_checkpoint_per_setting_and_epoch(checkpoints) -> None:
    assert [(c.options["gamma"], c.epochs) for c in checkpoints] == [
        (1.0, 1), (1.0, 4), (3.0, 1), (3.0, 4),
    ]  # fmt: skip
    assert all(c.val_mean.dtype == torch.float64 for c in checkpoints)
    assert all(bool((c.val_variance > 0).all()) for c in checkpoints)


@pytest.mark.parametrize("family", [Family.PLAIN, Family.TEMPERATURE])
def test_selection_is_the_lowest_validation_nll_and_restores_exactly(checkpoints, family) -> None:
    _, y_val = _task(80, 1)
    factors = (0.0, 1.0, 10.0)
    chosen = select("gpf", checkpoints, y_val, family, factors)
    nlls = [
        select_calibration(
            c.val_mean, c.val_variance, y_val.double(), factors=factors,
            temperature=family is Family.TEMPERATURE,
        ).nll
        for c in checkpoints
    ]  # fmt: skip
    assert chosen.val_nll == pytest.approx(min(nlls), rel=1e-12)
    assert chosen.checkpoint is checkpoints[nlls.index(min(nlls))]
    if family is Family.PLAIN:
        assert chosen.calibration.temperature == 1.0
    assert set(chosen.settings) == {"epochs", "gamma", "lambda", "T", "val NLL"}
    head = restore("gpf", 4, chosen)
    x_val, _ = _task(80, 1)
    mean, variance = head.logit_predictive(x_val)
    assert torch.equal(mean.double(), chosen.checkpoint.val_mean)
    assert torch.equal(variance.double(), chosen.checkpoint.val_variance)
    assert head.temperature == chosen.calibration.temperature  # type: ignore[attr-defined]


def test_nothing_to_select_is_an_error() -> None:
    with pytest.raises(InputDataError, match="no checkpoints"):
        select("gpf", [], torch.zeros(3), Family.PLAIN, (1.0,))
