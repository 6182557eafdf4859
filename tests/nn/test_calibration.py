from __future__ import annotations

import math

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.nn.calibration import (
    Calibration,
    calibrated_nll,
    fit_temperature,
    select_calibration,
)


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _brute_force_temperature(logits: torch.Tensor, labels: torch.Tensor, around: float) -> float:
    # the NLL is convex in 1 / T, so a local grid minimum is the global one
    grid = torch.linspace(around - 0.1, around + 0.1, 201, dtype=torch.float64)  # step 0.001
    nll = torch.stack(
        [torch.nn.functional.binary_cross_entropy_with_logits(logits / t, labels) for t in grid]
    )
    return float(grid[int(nll.argmin())])


def test_fit_temperature_recovers_the_generating_temperature(generator: torch.Generator) -> None:
    n, true_t = 50_000, 2.5
    logits = 4 * torch.randn(n, generator=generator, dtype=torch.float64)
    labels = torch.bernoulli(torch.sigmoid(logits / true_t), generator=generator)
    t = fit_temperature(logits, labels)
    # the MLE of T from 50k draws has a standard error of about 0.03 here
    assert t == pytest.approx(true_t, abs=0.12)
    # and it is the NLL minimiser (checked against a brute-force grid of step 0.001)
    assert t == pytest.approx(_brute_force_temperature(logits, labels, t), abs=2e-3)


def test_fit_temperature_stays_in_bounds() -> None:
    logits = torch.tensor([-3.0, -1.0, 1.0, 3.0], dtype=torch.float64)
    separable = (logits > 0).double()
    assert fit_temperature(logits, separable, bounds=(0.1, 10.0)) == pytest.approx(0.1)
    flipped = 1 - separable  # anti-correlated: the best positive T is the largest
    assert fit_temperature(logits, flipped, bounds=(0.1, 10.0)) == pytest.approx(10.0)


def test_selection_picks_the_nll_minimising_factor_and_temperature(
    generator: torch.Generator,
) -> None:
    # labels drawn from sigmoid(m / (T sqrt(1 + lambda v))) with lambda = 1, T = 0.5
    n = 100_000
    mean = 3 * torch.randn(n, generator=generator, dtype=torch.float64)
    variance = 8 * torch.rand(n, generator=generator, dtype=torch.float64)
    truth = Calibration(1.0, 0.5)
    labels = torch.bernoulli(truth.probability(mean, variance), generator=generator)
    factors = [0.0, math.pi / 8, 1.0, 3.0]
    choice = select_calibration(mean, variance, labels, factors=factors)
    assert choice.calibration.mean_field_factor == 1.0
    assert choice.calibration.temperature == pytest.approx(0.5, abs=0.02)
    # the chosen entry is the smallest NLL of the grid, each NLL recomputed independently
    for factor, (t, nll) in choice.grid.items():
        logits = mean / (t * torch.sqrt(1 + factor * variance))
        expected = float(torch.nn.functional.binary_cross_entropy_with_logits(logits, labels))
        assert nll == pytest.approx(expected, rel=1e-12)
        assert choice.nll <= nll
    # without the temperature, T stays 1 and the factor is still chosen by NLL
    plain = select_calibration(mean, variance, labels, factors=factors, temperature=False)
    assert plain.calibration.temperature == 1.0
    assert plain.nll == min(nll for _, nll in plain.grid.values())
    assert plain.nll >= choice.nll


def test_zero_variance_heads_ignore_the_factor(generator: torch.Generator) -> None:
    logits = torch.randn(500, generator=generator, dtype=torch.float64)
    labels = torch.bernoulli(torch.sigmoid(2 * logits), generator=generator)
    choice = select_calibration(logits, torch.zeros(500, dtype=torch.float64), labels)
    assert choice.calibration.mean_field_factor == 0.0  # ties go to the first factor
    assert len({round(nll, 12) for _, nll in choice.grid.values()}) == 1
    expected = calibrated_nll(logits / choice.calibration.temperature, labels)
    assert choice.nll == pytest.approx(expected, rel=1e-12)


def test_bad_inputs_raise() -> None:
    with pytest.raises(InputDataError, match="temperature"):
        Calibration(temperature=0.0)
    with pytest.raises(InputDataError, match="mean_field_factor"):
        Calibration(mean_field_factor=-1.0)
    with pytest.raises(InputDataError, match="0 or 1"):
        fit_temperature(torch.zeros(3), torch.tensor([0.0, 2.0, 1.0]))
    with pytest.raises(InputDataError, match="matching"):
        calibrated_nll(torch.zeros(3), torch.zeros(2))
    with pytest.raises(InputDataError, match="factors"):
        select_calibration(torch.zeros(2), torch.zeros(2), torch.zeros(2), factors=[])
