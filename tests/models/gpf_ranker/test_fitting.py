"""GPFRanker.fit_features (the frozen regime of the gpf_ranker protocol): equal to training the
grid and selecting by hand with the selection module, one run shared by the families."""

from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker import (
    Family,
    GPFRanker,
    GPFRankerSettings,
    restore,
    select,
    train_checkpoints,
)
from probrank.nn.heads import FitSettings

SETTINGS = GPFRankerSettings(
    hidden=16,
    num_features=64,
    gammas=(1.0, 3.0),
    epochs=(1, 4),
    batch_size=32,
    lr=1e-2,
    mean_field_factors=(0.0, 1.0),
    prior_precision=2.0,
    seed=3,
)


def _task(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = 3.0 + 2.0 * torch.randn(n, 4, generator=generator)  # not standardised
    logits = 2.0 * (x[:, 0] - 3.0) - (x[:, 1] - 3.0)
    y = (torch.rand(n, generator=generator) < torch.sigmoid(logits)).float()
    return x, y


@pytest.fixture(scope="module")
def fitted():
    train, validation = _task(160, 0), _task(60, 1)
    models = GPFRanker(SETTINGS).fit_features(train, validation)
    return train, validation, models


def test_fit_features_equals_the_grid_selected_by_hand(fitted) -> None:
    (x, y), (x_val, y_val), models = fitted
    mean, std = x.mean(0), x.std(0).clamp_min(1e-6)
    grid = [
        {"hidden": 16, "num_layers": 1, "dropout": 0.1, "num_features": 64},
        {"spectral_bound": 0.95, "prior_precision": 2.0, "seed": 3},
    ]
    options = [{**grid[0], **grid[1], "gamma": g} for g in (1.0, 3.0)]
    checkpoints = train_checkpoints(
        "gpf",
        4,
        options,
        ((x - mean) / std, y),
        (x_val - mean) / std,
        (1, 4),
        FitSettings(batch_size=32, lr=1e-2, seed=3),
    )
    x_test, _ = _task(50, 2)
    assert set(models) == {Family.PLAIN, Family.TEMPERATURE}
    for family, model in models.items():
        selection = select("gpf", checkpoints, y_val, family, (0.0, 1.0))
        head = restore("gpf", 4, selection)
        expected = head.predict_proba((x_test - mean) / std).detach().double()
        assert torch.equal(model.predict_features(x_test), expected)
        assert {k: v for k, v in model.selected.items() if k != "seed"} == selection.settings
        assert model.selected["seed"] == 3.0
    # the families share the training run: the +T choice cannot have a higher validation NLL
    plain, scaled = models[Family.PLAIN].selected, models[Family.TEMPERATURE].selected
    assert scaled["val NLL"] <= plain["val NLL"] + 1e-12
    assert plain["T"] == 1.0


def test_the_ranker_itself_is_the_settings_family(fitted) -> None:
    train, validation, _ = fitted
    ranker = GPFRanker(SETTINGS)
    models = ranker.fit_features(train, validation, families=[Family.PLAIN, Family.TEMPERATURE])
    assert models[Family.TEMPERATURE] is ranker  # settings.temperature is true
    only = GPFRanker(SETTINGS)
    assert only.fit_features(train, validation, families=[Family.PLAIN])[Family.PLAIN] is only
    with pytest.raises(InputDataError, match="width"):
        ranker.predict_features(torch.zeros(3, 5))
    with pytest.raises(InputDataError, match="families must not be empty"):
        GPFRanker(SETTINGS).fit_features(train, validation, families=[])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"head": "gpf", "num_members": 3}, "num_members is not a setting of the gpf head"),
        ({"head": "deterministic", "prior_precision": 1.0}, "prior_precision is not a setting"),
        ({"head": "sngp", "loss": "hinge"}, "loss must be one of"),
    ],
)
def test_head_options_a_head_does_not_take_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        GPFRankerSettings(**changes)


def test_optional_head_options_reach_the_head() -> None:
    settings = GPFRankerSettings(head="ensemble", num_members=3, loss="focal", focal_gamma=2.5)
    (options,) = settings.head_options()
    assert options["num_members"] == 3 and options["loss"] == "focal"
    assert options["gamma"] == 2.5 and "focal_gamma" not in options
    (gp,) = GPFRankerSettings(head="sngp").head_options()
    assert "prior_precision" not in gp  # None: the head's own default


def test_the_encoder_training_regimes_read_one_set_of_defaults() -> None:
    from probrank.models.gpf_ranker.settings import FineTuneSettings, TopLayersSettings

    table = {"epochs": [3, 1, 3], "encoder_lr": 1e-4, "names": ["gpf"], "hidden": 8}
    top = TopLayersSettings.from_table(table)
    assert top.epochs == (1, 3) and top.encoder_lr == 1e-4
    assert (top.batch_size, top.weight_decay) == (32, 0.01)
    tuned = FineTuneSettings.from_table({})
    assert tuned.epochs == (1, 2, 3) and tuned.batch_size == 16
    assert tuned.lr == top.lr == GPFRankerSettings().lr  # the head's rate is the model's
    with pytest.raises(InputDataError, match="encoder_lr"):
        FineTuneSettings(encoder_lr=0.0)
    with pytest.raises(InputDataError, match="weight_decay"):
        TopLayersSettings(weight_decay=-1.0)
