"""The ``qlfusion_cv`` protocol end to end (smoke) and its configs' settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probrank.experiments import load_config
from probrank.experiments.qlfusion_cv.protocol import TABLE_1, run
from probrank.models.qlfusion.variants import DEFAULT_SETTINGS, QuantifierSettings

MODELS = Path(__file__).resolve().parents[3] / "models" / "qlfusion"
CONFIG = MODELS / "robust03.toml"


@pytest.mark.integration
def test_smoke_protocol_end_to_end(shared_data: Path) -> None:
    result = run(load_config(CONFIG), config_path=CONFIG, seeds=1, smoke=True, progress=False)
    extensions = ["qlfusion_lower", "qlfusion_plus", "qlfusion_plus_det"]
    assert list(result.values) == [*TABLE_1, *extensions]
    assert set(result.values["qlfusion"]) == {
        f"{m}@{k}" for m in ("P", "R", "nDCG") for k in (5, 10, 20)
    }
    for values in result.values.values():
        for v in values.values():
            assert len(v) == 1 and 0.0 <= v[0] <= 1.0
    table2 = result.extra["Table 2 (P@5, mean over seeds)"]
    assert set(table2) == {"probabilistic", "deterministic"}
    assert json.loads(result.to_json())["qlfusion"]["P@5"] == result.values["qlfusion"]["P@5"][0]


@pytest.mark.parametrize("name", ["robust03.toml", "clef_tar_2018.toml"])
def test_fuse_defaults_are_the_configs_settings(name: str) -> None:
    table = load_config(MODELS / name)["quantifier"]
    assert QuantifierSettings.from_config(table) == DEFAULT_SETTINGS
