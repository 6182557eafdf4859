"""The whole GPF pipeline on a tiny random transformer: encode -> heads -> probabilities ->
metrics (no real MiniLM, no shared data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from probrank.data.candidates import CandidateList
from probrank.exceptions import InputDataError
from probrank.experiments import settings_of
from probrank.experiments.gpf.frozen import run
from probrank.experiments.gpf.measures import HEADS, evaluate_head
from probrank.experiments.provenance import RunOutput
from tests.data.datasets.test_ubuntu_irc import write_fake_ubuntu
from tests.encoders.conftest import make_tiny_bert


def _config(tmp_path: Path) -> dict:
    ubuntu = tmp_path / "ubuntu"
    for split in ("train", "dev", "test"):
        write_fake_ubuntu(ubuntu / split, num_logs=2, num_lines=30)
    return {
        "experiment": {"protocol": "gpf_ranker", "title": "tiny", "quiet": True, "threads": 1},
        "data": {
            "train": "ubuntu:train",
            "validation": "ubuntu:dev",
            "test": "ubuntu:test",
            "ubuntu_dir": str(ubuntu),
            "ubuntu_dev_contexts": 20,
        },
        "encoder": {
            "name_or_path": str(make_tiny_bert(tmp_path / "bert")),
            "mode": "bi",
            "pooling": "mean",
            "max_length": 32,
            "cache_dir": str(tmp_path / "cache"),
        },
        "heads": {
            "hidden": 16,
            "epochs": [1, 3],
            "batch_size": 64,
            "lr": 3e-3,
            "mc_dropout": {"num_samples": 4},
            "ensemble": {"num_members": 2},
            "sngp": {"num_features": 32},
            "gpf": {"num_features": 32, "gamma": [1.0, 2.0], "lr": 1e-2},
        },
        "calibration": {"mean_field_factors": [0.0, 1.0], "temperature": True},
        "output": {"folder": "out"},
    }


def test_tiny_pipeline_end_to_end(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config_path = tmp_path / "tiny.toml"
    result = run(settings_of(config), config_path=config_path, seeds=2, smoke=False)
    assert list(result.values) == [row for h in HEADS for row in (h, f"{h}+T")]
    for head, measures in result.values.items():
        assert set(measures) == {"R10@1", "MAP", "MRR", "accuracy", "ECE", "Brier", "NLL"}
        for name, values in measures.items():
            assert len(values) == 2, (head, name)
            assert all(0.0 <= v <= (10.0 if name == "NLL" else 1.0) for v in values)
        # one relevant candidate per list: AP equals RR
        assert measures["MAP"] == pytest.approx(measures["MRR"], abs=1e-12)
    selected = result.extra["selected on validation"]
    for seed in (0, 1):
        assert selected[f"gpf (seed {seed})"]["gamma"] in (1.0, 2.0)
        assert selected[f"gpf (seed {seed})"]["lambda"] in (0.0, 1.0)
        assert selected[f"deterministic (seed {seed})"]["T"] == 1.0
        assert selected[f"sngp (seed {seed})"]["epochs"] in (1.0, 3.0)
        assert 0.05 <= selected[f"ensemble+T (seed {seed})"]["T"] <= 20.0
        # the +T family can only lower the validation NLL of the same checkpoints
        for head in HEADS:
            plain = selected[f"{head} (seed {seed})"]["val NLL"]
            assert selected[f"{head}+T (seed {seed})"]["val NLL"] <= plain + 1e-12
    RunOutput(tmp_path / "out", "tiny", {}).write(result)  # what run_experiment writes
    saved = json.loads((tmp_path / "out" / "tiny.json").read_text())
    assert saved["values"] == result.values
    assert (tmp_path / "out" / "tiny_reliability.png").stat().st_size > 1000
    # a second run reads every feature from the cache and gives the same numbers
    again = run(settings_of(config), config_path=config_path, seeds=2, smoke=False)
    assert again.values == result.values


def test_evaluate_head_against_hand_computed_values() -> None:
    lists = [
        CandidateList("q1", "q", ("a", "b", "c"), ("a", "b", "c"), (0, 1, 0), (0, 1, 0)),
        CandidateList("q2", "q", ("a", "b"), ("a", "b"), (1, 1), (1, 1)),
        CandidateList("q3", "q", ("a",), ("a",), (0,), (0,)),  # no relevant: not ranked
    ]
    probs = torch.tensor([0.9, 0.6, 0.1, 0.2, 0.7, 0.3], dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 1, 1, 0], dtype=torch.float64)
    values = evaluate_head(probs, labels, lists, ["MAP", "MRR", "accuracy", "Brier", "R10@1"])
    assert values["MRR"] == pytest.approx((1 / 2 + 1) / 2)
    assert values["MAP"] == pytest.approx((1 / 2 + 1) / 2)
    assert values["R10@1"] == pytest.approx((0 + 1 / 2) / 2)
    assert values["accuracy"] == pytest.approx(4 / 6)
    brier = float(((probs - labels) ** 2).mean())
    assert values["Brier"] == pytest.approx(brier)


def test_bad_config_raises(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["heads"]["names"] = ["gp"]
    with pytest.raises(InputDataError, match="unknown head 'gp'"):
        run(settings_of(config), config_path=tmp_path / "c.toml", seeds=1, smoke=True)
    config = _config(tmp_path)
    config["data"]["test"] = "trec:test"
    with pytest.raises(InputDataError, match="dataset:split"):
        run(settings_of(config), config_path=tmp_path / "c.toml", seeds=1, smoke=True)
    config = _config(tmp_path)
    config["heads"]["gpf"]["gamma"] = [0.0, 2.0]
    with pytest.raises(InputDataError, match="gamma"):
        run(settings_of(config), config_path=tmp_path / "c.toml", seeds=1, smoke=False)


def test_smoke_mode_runs_small_and_writes_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path)
    result = run(settings_of(config), config_path=tmp_path / "smoke.toml", seeds=1, smoke=True)
    assert [r for r in result.values if not r.endswith("+T")] == list(HEADS)
    assert all(len(v) == 1 for m in result.values.values() for v in m.values())
    assert not (tmp_path / "out").exists()


def test_a_heads_table_maps_onto_the_models_settings(tmp_path: Path) -> None:
    from probrank._config import build_settings
    from probrank.experiments.gpf.config import GPFRankerHeadsSettings
    from probrank.experiments.gpf.frozen import head_settings
    from probrank.models.gpf_ranker import GPFRankerSettings

    table = _config(tmp_path)["heads"]
    table["deterministic"] = {"loss": "focal", "gamma": 2.5}
    heads = build_settings(table, GPFRankerHeadsSettings)
    gpf = head_settings(heads, "gpf", [0.0, 1.0], smoke=False)
    assert gpf.gammas == (1.0, 2.0) and gpf.epochs == (1, 3) and gpf.lr == 1e-2
    assert (gpf.hidden, gpf.num_features, gpf.batch_size) == (16, 32, 64)
    assert gpf.mean_field_factors == (0.0, 1.0)
    mlp = head_settings(heads, "deterministic", [0.0], smoke=False)
    assert (mlp.loss, mlp.focal_gamma, mlp.lr) == ("focal", 2.5, 3e-3)
    assert head_settings(heads, "ensemble", [0.0], smoke=False).num_members == 2
    smoke = head_settings(heads, "gpf", [0.0], smoke=True)
    assert (smoke.epochs, smoke.gammas, smoke.num_features) == ((1,), (1.0,), 64)
    # what the tables leave out is the model's default (the one set of defaults)
    bare = head_settings(GPFRankerHeadsSettings(), "gpf", [0.0], smoke=False)
    default = GPFRankerSettings()
    assert (bare.gammas, bare.epochs, bare.batch_size) == (
        default.gammas,
        default.epochs,
        default.batch_size,
    )
