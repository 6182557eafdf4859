"""The end-to-end fine-tuning protocol on a tiny random transformer and generated logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probrank.exceptions import InputDataError
from probrank.experiments import settings_of
from probrank.experiments.gpf.finetune import run
from probrank.experiments.gpf.measures import FINE_TUNED_HEADS
from probrank.experiments.provenance import RunOutput
from tests.data.datasets.test_ubuntu_irc import write_fake_ubuntu
from tests.encoders.conftest import make_tiny_bert


def _config(tmp_path: Path) -> dict:
    ubuntu = tmp_path / "ubuntu"
    for split in ("train", "dev", "test"):
        write_fake_ubuntu(ubuntu / split, num_logs=1, num_lines=20)
    return {
        "experiment": {"protocol": "gpf_finetune", "title": "tiny", "quiet": True, "threads": 1},
        "data": {
            "train": "ubuntu:train",
            "validation": "ubuntu:dev",
            "test": "ubuntu:test",
            "shift": ["ubuntu:dev"],
            "ubuntu_dir": str(ubuntu),
            "ubuntu_train_contexts": 6,
            "ubuntu_dev_contexts": 5,
            "ubuntu_test_contexts": 5,
        },
        "encoder": {
            "name_or_path": str(make_tiny_bert(tmp_path / "bert")),
            "mode": "cross",
            "max_length": 24,
        },
        "heads": {
            "hidden": 8,
            "epochs": [1, 2],
            "batch_size": 8,
            "sngp": {"num_features": 16},
            "gpf": {"num_features": 16, "gamma": 1.0},
        },
        "calibration": {"mean_field_factors": [0.0, 1.0]},
        "output": {"folder": "out"},
    }


def test_tiny_fine_tuning_end_to_end(tmp_path: Path) -> None:
    config = _config(tmp_path)
    result = run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=False)
    rows = [f"{h}{s}" for h in FINE_TUNED_HEADS for s in ("", "+T")]
    assert list(result.values) == rows + [f"{r} [ubuntu:dev]" for r in rows]
    for measures in result.values.values():
        assert set(measures) == {"R10@1", "MAP", "MRR", "accuracy", "ECE", "Brier", "NLL"}
        for name, values in measures.items():
            assert len(values) == 1 and 0.0 <= values[0] <= (20.0 if name == "NLL" else 1.0)
        assert measures["MAP"] == pytest.approx(measures["MRR"], abs=1e-12)  # one true reply
    selected = result.extra["selected on validation"]
    assert selected["deterministic (seed 0)"]["T"] == 1.0
    assert selected["gpf (seed 0)"]["lambda"] in (0.0, 1.0)
    for head in FINE_TUNED_HEADS:
        assert selected[f"{head} (seed 0)"]["epochs"] in (1.0, 2.0)
        plain = selected[f"{head} (seed 0)"]["val NLL"]
        assert selected[f"{head}+T (seed 0)"]["val NLL"] <= plain + 1e-12
        # the shift set is the validation set here: its NLL is the selection's validation NLL
        nll = result.values[f"{head} [ubuntu:dev]"]["NLL"][0]
        assert nll == pytest.approx(plain, rel=1e-4)
    RunOutput(tmp_path / "out", "tiny", {}).write(result)  # what run_experiment writes
    saved = json.loads((tmp_path / "out" / "tiny.json").read_text())
    assert saved["values"] == result.values
    figure = (tmp_path / "out" / "tiny_reliability.png").read_bytes()
    assert figure.startswith(b"\x89PNG")
    width, height = (int.from_bytes(figure[i : i + 4], "big") for i in (16, 20))
    # rows: test and shift set; columns: plain and +T; 4.8 inches per panel at 80 dpi
    assert (width, height) == (2 * 384, 2 * 384)


def test_heads_without_a_single_fine_tuning_run_are_refused(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["heads"]["names"] = ["deterministic", "ensemble"]
    with pytest.raises(InputDataError, match="'ensemble' is not fine-tuned"):
        run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=True)
