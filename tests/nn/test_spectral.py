from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.nn.spectral import spectral_normalize


@pytest.mark.parametrize("bound", [0.5, 0.95, 2.0])
def test_largest_singular_value_is_bounded_by_c(bound: float) -> None:
    layer = torch.nn.Linear(30, 20).double()
    with torch.no_grad():
        layer.weight.mul_(10.0)
    before = torch.linalg.matrix_norm(layer.weight.detach(), ord=2)
    assert before > bound
    spectral_normalize(layer, bound, generator=torch.Generator().manual_seed(1))
    layer.train()
    for _ in range(100):  # power iteration converges over training steps
        layer(torch.randn(4, 30, dtype=torch.float64))
    sigma = torch.linalg.matrix_norm(layer.weight.detach(), ord=2)
    torch.testing.assert_close(sigma, torch.tensor(bound, dtype=torch.float64), rtol=1e-4, atol=0)


def test_weights_below_the_bound_are_left_alone() -> None:
    layer = torch.nn.Linear(10, 8).double()
    with torch.no_grad():
        layer.weight.mul_(0.01)
    original = layer.weight.detach().clone()
    spectral_normalize(layer, 1.0)
    layer.train()
    layer(torch.randn(2, 10, dtype=torch.float64))
    torch.testing.assert_close(layer.weight.detach(), original, rtol=0, atol=0)


def test_gradients_flow_through_the_normalisation() -> None:
    layer = spectral_normalize(torch.nn.Linear(6, 5).double(), 0.1)
    layer(torch.randn(3, 6, dtype=torch.float64)).sum().backward()
    original = layer.parametrizations.weight.original
    assert original.grad is not None and torch.isfinite(original.grad).all()
    assert original.grad.abs().sum() > 0


def test_bad_bound_raises() -> None:
    with pytest.raises(InputDataError, match="positive"):
        spectral_normalize(torch.nn.Linear(3, 3), 0.0)
