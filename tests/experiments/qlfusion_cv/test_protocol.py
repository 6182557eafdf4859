"""The ``qlfusion_cv`` protocol end to end (smoke) and its configs' settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probrank.experiments import load_config
from probrank.experiments.qlfusion_cv.protocol import TABLE_1, run
from probrank.models import QLFusionSettings

MODELS = Path(__file__).resolve().parents[3] / "models" / "qlfusion"
CONFIG = MODELS / "robust03.toml"


@pytest.mark.integration
def test_smoke_protocol_end_to_end(shared_data: Path) -> None:
    config = load_config(CONFIG, smoke=True)
    result = run(config, config_path=CONFIG, seeds=1, smoke=True, progress=False)
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
def test_the_settings_defaults_are_the_configs_settings(name: str) -> None:
    """``probrank fuse`` and the model use QLFusionSettings' defaults: those of the cards (but
    the likelihood: the cards keep the paper's binomial, the default is the latent
    beta-binomial)."""
    card = QLFusionSettings(likelihood="binomial")
    assert load_config(MODELS / name).quantifier == card
    smoke = load_config(MODELS / name, smoke=True).quantifier
    assert smoke.max_steps == 10 and smoke.batch_sizes == (4, 16) and smoke.depth == 100


@pytest.mark.parametrize(
    ("line", "replacement", "message"),
    [
        ("lr = 5e-4", "lr = -1.0", r"quantifier\.lr: lr must be positive, got -1\.0"),
        ('estimator = "flipout"', 'estimator = "nope"', r"quantifier\.estimator: must be one"),
        ("hidden = 32", "depth = 50", r"quantifier\.depth: unknown key"),
    ],
)
def test_the_quantifier_table_is_checked_by_the_settings(
    tmp_path: Path, line: str, replacement: str, message: str
) -> None:
    """``[quantifier]`` maps key for key onto QLFusionSettings: its own checks reject a bad
    value (naming the key and line); ``depth`` belongs to ``[protocol]``."""
    from probrank.exceptions import InputDataError

    text = CONFIG.read_text(encoding="utf-8")
    assert line in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(line, replacement, 1), encoding="utf-8")
    with pytest.raises(InputDataError, match=message):
        load_config(bad)
