from __future__ import annotations

import pytest
import torch
from torch import nn

from probrank.exceptions import InputDataError
from probrank.nn.training import train_head


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 1))


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.binary_cross_entropy_with_logits(logits, labels)


def test_epoch_callback_sees_eval_mode_and_does_not_change_training() -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(120, 4, generator=generator)
    y = (x[:, 0] > 0).float()
    plain = _model(1)
    history = train_head(plain, x, y, _loss, epochs=3, batch_size=32, seed=5)
    seen: list[tuple[int, bool]] = []
    watched = _model(1)

    def callback(epoch: int) -> None:
        seen.append((epoch, watched.training))
        torch.rand(10)  # draws from the global stream must not move the dropout masks
        watched(x[:5])

    again = train_head(watched, x, y, _loss, epochs=3, batch_size=32, seed=5, on_epoch_end=callback)
    assert seen == [(1, False), (2, False), (3, False)]
    assert again == history
    for a, b in zip(plain.parameters(), watched.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_training_input_raises() -> None:
    with pytest.raises(InputDataError, match="labels"):
        train_head(_model(0), torch.zeros(3, 4), torch.zeros(2), _loss)
    with pytest.raises(InputDataError, match="batch_size"):
        train_head(_model(0), torch.zeros(3, 4), torch.zeros(3), _loss, batch_size=0)
