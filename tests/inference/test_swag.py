"""SWAG: moments of a known trajectory, draws with those moments, parameter round trips."""

from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.inference.swag import SWAGCollector, assign_vector, parameter_vector


def _trajectory(steps: int, size: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7)
    return torch.randn(steps, size, generator=generator, dtype=torch.float64).cumsum(0) * 0.1


def test_moments_of_a_known_trajectory_are_the_sample_moments() -> None:
    snapshots = _trajectory(12, 5)
    collector = SWAGCollector(max_rank=4, scale=0.5)
    for snapshot in snapshots:
        collector.collect(snapshot)
    posterior = collector.posterior()
    torch.testing.assert_close(posterior.mean, snapshots.mean(0), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(
        posterior.variance, snapshots.var(0, unbiased=False), rtol=1e-10, atol=1e-14
    )
    last = snapshots[-4:]
    torch.testing.assert_close(posterior.deviations, last - snapshots.mean(0), rtol=0, atol=1e-14)
    # low-rank part: the sample covariance of the last K snapshots around the SWA mean
    centred = last - snapshots.mean(0)
    expected = 0.5 * (torch.diag(snapshots.var(0, unbiased=False)) + centred.T @ centred / 3)
    torch.testing.assert_close(posterior.covariance(), expected, rtol=1e-10, atol=1e-14)
    assert posterior.rank == 4 and posterior.num_snapshots == 12


def test_when_the_snapshots_are_the_last_k_the_low_rank_part_is_the_unbiased_covariance() -> None:
    snapshots = _trajectory(6, 3)
    collector = SWAGCollector(max_rank=6, scale=1.0)
    for snapshot in snapshots:
        collector.collect(snapshot)
    posterior = collector.posterior()
    low = posterior.covariance() - torch.diag(posterior.variance)
    torch.testing.assert_close(low, torch.cov(snapshots.T), rtol=1e-10, atol=1e-14)


def test_draws_have_the_swag_mean_and_covariance() -> None:
    collector = SWAGCollector(max_rank=5)
    for snapshot in _trajectory(9, 4):
        collector.collect(snapshot)
    posterior = collector.posterior()
    draws = posterior.sample(60_000, torch.Generator().manual_seed(0))
    assert draws.shape == (60_000, 4)
    scale = posterior.covariance().diagonal().sqrt()
    torch.testing.assert_close(
        draws.mean(0), posterior.mean, rtol=0, atol=float(4 * scale.max() / 245)
    )
    torch.testing.assert_close(
        torch.cov(draws.T), posterior.covariance(), rtol=0.05, atol=float(0.03 * scale.max() ** 2)
    )
    again = posterior.sample(3, torch.Generator().manual_seed(1))
    assert torch.equal(again, posterior.sample(3, torch.Generator().manual_seed(1)))


def test_parameter_vectors_round_trip() -> None:
    layer = torch.nn.Linear(3, 2)
    vector = parameter_vector(layer.parameters())
    assert vector.dtype == torch.float64 and vector.shape == (8,)
    assign_vector(vector + 1.0, layer.parameters())
    torch.testing.assert_close(parameter_vector(layer.parameters()), vector + 1.0)
    collector = SWAGCollector(max_rank=2)
    collector.collect(layer.parameters())
    assert collector.num_snapshots == 1


def test_bad_inputs() -> None:
    with pytest.raises(InputDataError):
        SWAGCollector(max_rank=1)
    collector = SWAGCollector()
    collector.collect(torch.zeros(3))
    with pytest.raises(InputDataError, match="at least 2"):
        collector.posterior()
    with pytest.raises(InputDataError, match="values"):
        collector.collect(torch.zeros(4))
