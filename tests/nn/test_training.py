from __future__ import annotations

import pytest
import torch
from torch import nn

from probrank.exceptions import InputDataError
from probrank.nn.training import EarlyStopping, train_head


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


def test_early_stopping_tracks_the_best_epoch_and_stops_after_patience() -> None:
    stopper = EarlyStopping(patience=2, direction="min")
    steps = []
    for epoch, value in enumerate([5.0, 4.0, 4.0, 4.5, 3.0]):
        improved = stopper.step(epoch, value)
        steps.append((bool(improved), stopper.should_stop))
        if stopper.should_stop:
            break
    # epoch 2 ties (no improvement), epoch 3 is the second epoch without one: stop there
    assert steps == [(True, False), (True, False), (False, False), (False, True)]
    assert float(stopper.best) == 4.0 and int(stopper.best_epoch) == 1


def test_early_stopping_maximises_with_min_delta_and_never_stops_without_patience() -> None:
    stopper = EarlyStopping(patience=None, direction="max", min_delta=0.1)
    for epoch, value in enumerate([0.5, 0.55, 0.7, 0.75, 0.1, 0.0, 0.0]):
        stopper.step(epoch, value)
        assert not stopper.should_stop
    assert float(stopper.best) == pytest.approx(0.7, abs=1e-12) and int(stopper.best_epoch) == 2


def test_early_stopping_per_member_stops_when_every_member_has_waited() -> None:
    stopper = EarlyStopping(patience=torch.tensor([1, 3]))
    history = [[3.0, 3.0], [4.0, 2.0], [4.0, 2.5], [1.0, 2.5], [1.0, 2.5]]
    for epoch, values in enumerate(history):
        improved = stopper.step(epoch, torch.tensor(values))
        assert improved.shape == (2,)
        if stopper.should_stop:
            break
    # member 0 improves at epoch 3 (after waiting); member 1 last improved at epoch 1
    assert epoch == 4
    assert stopper.best_epoch.tolist() == [3, 1]
    torch.testing.assert_close(stopper.best, torch.tensor([1.0, 2.0], dtype=torch.float64))


def test_early_stopping_with_zero_patience_stops_at_the_first_epoch_without_gain() -> None:
    stopper = EarlyStopping(patience=0, direction="max")
    assert bool(stopper.step(0, 0.5)) and not stopper.should_stop
    assert bool(stopper.step(1, 0.6)) and not stopper.should_stop
    assert not bool(stopper.step(2, 0.6)) and stopper.should_stop


def test_early_stopping_rejects_bad_settings() -> None:
    with pytest.raises(InputDataError, match="patience"):
        EarlyStopping(patience=-1)
    with pytest.raises(InputDataError, match="min_delta"):
        EarlyStopping(patience=1, min_delta=-0.1)
    with pytest.raises(InputDataError, match="direction"):
        EarlyStopping(patience=1, direction="up")
