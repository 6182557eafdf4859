"""InteractiveRankerSettings: defaults, tables from mappings, validation, JSON round trip."""

from __future__ import annotations

import dataclasses
import json

import pytest

from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.models.interactive import (
    OPTION_TABLES,
    GPPLSettings,
    InteractiveRankerSettings,
    PosteriorKind,
    WarmStartSettings,
)
from probrank.posteriors.neural import IncrementalUpdate


def test_defaults_are_the_model_cards_and_options_become_enums() -> None:
    s = InteractiveRankerSettings()
    assert s.posterior is PosteriorKind.LAPLACE and s.strategy is Strategy.EI
    assert s.warm_start == WarmStartSettings() and s.update == IncrementalUpdate()
    assert s.needs_warm_start
    t = InteractiveRankerSettings(posterior="gppl", strategy="thompson")
    assert t.posterior is PosteriorKind.GPPL and t.strategy is Strategy.THOMPSON
    assert not t.needs_warm_start
    assert InteractiveRankerSettings(
        posterior="gppl", gppl={"prior": "warm_start"}
    ).needs_warm_start
    assert set(s.tables()) == set(OPTION_TABLES)


def test_a_table_may_be_a_mapping_of_some_keys() -> None:
    s = InteractiveRankerSettings(warm_start={"hidden": [16, 4], "max_epochs": 3})
    assert s.warm_start == dataclasses.replace(WarmStartSettings(), hidden=(16, 4), max_epochs=3)
    same = InteractiveRankerSettings(warm_start=s.warm_start)
    assert same == s


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"posterior": "bogus"}, "posterior must be one of"),
        ({"strategy": "best"}, "strategy must be one of"),
        ({"warm_start": {"hiden": (4,)}}, r"\[warm_start\] has no option 'hiden'"),
        ({"warm_start": {"hidden": (8, 0)}}, "hidden"),
        ({"warm_start": {"dropout": 1.0}}, "dropout"),
        ({"warm_start": {"activation": "gelu"}}, "activation"),
        ({"warm_start": {"swag_layers": 4}}, "swag_layers must be at most 3"),
        ({"update": {"lr": 0}}, r"\[update\] lr"),
        ({"update": {"replay": 1}}, "true or false"),
        ({"update": {"layers": -1}}, "layers"),
        ({"mcdropout": {"num_samples": 1}}, "at least 2"),
        ({"laplace": {"link": "cauchit"}}, "link"),
        ({"laplace": {"scale": -1.0}}, "scale"),
        ({"gppl": {"prior": "flat"}}, "prior"),
        ({"gppl": GPPLSettings(outputscale=0.0)}, "outputscale"),
        ({"swag": 20}, "SampleSettings or a table"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"seed": -1}, "seed"),
        ({"posterior": "ensemble", "warm_start": {"ensemble_size": 1}}, "ensemble_size >= 2"),
    ],
)
def test_bad_values_name_the_table_and_key(changes: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        InteractiveRankerSettings(**changes)


def test_json_round_trip_and_unknown_keys() -> None:
    s = InteractiveRankerSettings(
        posterior="swag",
        strategy="eubo",
        warm_start={"hidden": (12, 6), "activation": "tanh"},
        laplace={"link": "probit"},
        seed=3,
    )
    data = json.loads(json.dumps(s.to_json()))
    assert data["posterior"] == "swag" and data["warm_start"]["hidden"] == [12, 6]
    assert InteractiveRankerSettings.from_json(data) == s
    with pytest.raises(InputDataError, match="unknown InteractiveRankerSettings keys"):
        InteractiveRankerSettings.from_json({**data, "extra": 1})
    with pytest.raises(InputDataError, match="JSON object"):
        InteractiveRankerSettings.from_json([1])  # type: ignore[arg-type]
