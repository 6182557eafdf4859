"""The top-layers protocol on a tiny random transformer and generated logs; its shipped configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

from probrank.exceptions import InputDataError
from probrank.experiments import load_document, settings_of
from probrank.experiments.gpf.top_layers import run
from probrank.experiments.provenance import RunOutput
from tests.data.datasets.test_ubuntu_irc import write_fake_ubuntu
from tests.encoders.conftest import make_tiny_bert

MODELS = Path(__file__).resolve().parents[3] / "models" / "gpf_ranker"
HEADS = ("deterministic", "mc_dropout", "sngp", "gpf")


def _config(tmp_path: Path, scope: str = "head") -> dict:
    ubuntu = tmp_path / "ubuntu"
    for split in ("train", "dev", "test"):
        write_fake_ubuntu(ubuntu / split, num_logs=1, num_lines=20)
    return {
        "experiment": {"protocol": "gpf_top_layers", "title": "tiny", "quiet": True, "threads": 1},
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
            "frozen_layers": 1,
            "max_length": 24,
            "batch_size": 8,
            "cache_dir": str(tmp_path / "cache"),
        },
        "heads": {
            "names": list(HEADS),
            "hidden": 8,
            "epochs": [1, 2],
            "batch_size": 8,
            "encoder_lr": 1e-4,
            "mc_dropout": {"num_samples": 3, "scope": scope},
            "sngp": {"num_features": 16, "layer_spectral_bound": 1.0},
            "gpf": {"num_features": 16, "gamma": [1.0, 2.0], "layer_spectral_bound": 1.0},
        },
        "calibration": {"mean_field_factors": [0.0, 1.0]},
    }


def test_tiny_top_layer_fine_tuning(tmp_path: Path) -> None:
    config = _config(tmp_path)
    result = run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=False)
    rows = [f"{h}{s}" for h in HEADS for s in ("", "+T")]
    assert list(result.values) == rows + [f"{r} [ubuntu:dev]" for r in rows]
    for measures in result.values.values():
        assert set(measures) == {"R10@1", "MAP", "MRR", "accuracy", "ECE", "Brier", "NLL"}
        for name, values in measures.items():
            assert len(values) == 1 and 0.0 <= values[0] <= (20.0 if name == "NLL" else 1.0)
    selected = result.extra["selected on validation"]
    assert selected["deterministic (seed 0)"]["T"] == 1.0
    assert selected["gpf (seed 0)"]["gamma"] in (1.0, 2.0)
    assert selected["gpf (seed 0)"]["lambda"] in (0.0, 1.0)
    for head in HEADS:
        assert selected[f"{head} (seed 0)"]["epochs"] in (1.0, 2.0)
        plain = selected[f"{head} (seed 0)"]["val NLL"]
        assert selected[f"{head}+T (seed 0)"]["val NLL"] <= plain + 1e-12
        # the shift set is the validation set here: its NLL is the selection's validation NLL,
        # so the test-time scoring reruns exactly the chosen checkpoint
        nll = result.values[f"{head} [ubuntu:dev]"]["NLL"][0]
        assert nll == pytest.approx(plain, rel=1e-4)
    variance = result.extra[next(k for k in result.extra if k.startswith("mean predictive"))]
    assert set(variance) == {"sngp", "gpf"}
    assert all(v >= 0 for by_split in variance.values() for v in by_split.values())
    RunOutput(tmp_path / "out", "tiny", {}).write(result)  # what run_experiment writes
    saved = json.loads((tmp_path / "out" / "tiny.json").read_text())
    assert saved["values"] == result.values
    assert (tmp_path / "out" / "tiny_reliability.png").read_bytes().startswith(b"\x89PNG")
    # the hidden states were cached once: a second run reads them and gives the same numbers
    shards = sorted((tmp_path / "cache").glob("*/hidden-*.pt"))
    assert shards
    stamps = [p.stat().st_mtime_ns for p in shards]
    again = run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=False)
    assert again.values == result.values
    assert [p.stat().st_mtime_ns for p in shards] == stamps


def test_mc_dropout_through_the_top_layers(tmp_path: Path) -> None:
    config = _config(tmp_path, scope="top_layers")
    config["heads"]["names"] = ["mc_dropout"]
    result = run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=True)
    assert list(result.values) == [
        "mc_dropout",
        "mc_dropout+T",
        "mc_dropout [ubuntu:dev]",
        "mc_dropout+T [ubuntu:dev]",
    ]


def test_heads_it_does_not_train_are_refused(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["heads"]["names"] = ["deterministic", "ensemble"]
    with pytest.raises(InputDataError, match="'ensemble' is not trained"):
        run(settings_of(config), config_path=tmp_path / "tiny.toml", seeds=1, smoke=True)


MEDIQA_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Set>{}</Set>
"""
MEDIQA_QUESTION = """
  <Question QID="{qid}"><QuestionText>how do i fix the sound driver</QuestionText><AnswerList>
    <Answer AID="{qid}_1" SystemRank="1" ReferenceRank="1" ReferenceScore="4">
      <AnswerText>install the kernel update and reboot</AnswerText></Answer>
    <Answer AID="{qid}_2" SystemRank="2" ReferenceRank="2" ReferenceScore="1">
      <AnswerText>no</AnswerText></Answer>
  </AnswerList></Question>"""


def test_the_shipped_ubuntu_config_runs_its_smoke_path(tmp_path: Path) -> None:
    # the shipped config as it is (heads, MC-dropout scope, gamma, layer spectral bound,
    # calibration, the shift row), with a tiny model and generated data in place of MiniLM,
    # Ubuntu IRC and MEDIQA
    config = load_document(MODELS / "ubuntu_top_layers.toml")
    tiny = _config(tmp_path)
    mediqa = tmp_path / "mediqa"
    mediqa.mkdir()
    questions = "".join(MEDIQA_QUESTION.format(qid=q) for q in range(1, 4))
    (mediqa / "test-with-labels.xml").write_text(MEDIQA_XML.format(questions))
    config["data"].update(ubuntu_dir=tiny["data"]["ubuntu_dir"], mediqa_dir=str(mediqa))
    config["encoder"].update(
        name_or_path=tiny["encoder"]["name_or_path"],
        frozen_layers=1,  # of the tiny model's 2
        max_length=24,  # its 64 positions
        cache_dir=tiny["encoder"]["cache_dir"],
    )
    config["experiment"]["quiet"] = True
    result = run(
        settings_of(config), config_path=tmp_path / "ubuntu_top_layers.toml", seeds=1, smoke=True
    )
    rows = [f"{h}{s}" for h in ("deterministic", "mc_dropout", "gpf") for s in ("", "+T")]
    assert list(result.values) == rows + [f"{r} [mediqa:test]" for r in rows]
    measures = set(config["evaluation"]["measures"])
    assert all(set(v) == measures and len(v["ECE"]) == 1 for v in result.values.values())
    run_settings = {r["head"]: r for r in result.settings["runs"]}
    assert run_settings["gpf"]["layer_spectral_bound"] == 1.0
    assert run_settings["gpf"]["options"]["num_features"] == 64  # smoke: a small GP
    assert result.settings["encoder"]["device"] == "cpu"
    selected = result.extra["selected on validation"]
    assert selected["gpf (seed 0)"]["epochs"] == 1.0  # smoke: one epoch
    assert selected["gpf (seed 0)"]["gamma"] == 1.0


@pytest.mark.parametrize("name", ["ubuntu", "mediqa"])
def test_the_gpu_config_changes_only_the_device_and_the_frozen_layers(name: str) -> None:
    cpu = load_document(MODELS / f"{name}_top_layers.toml")
    gpu = load_document(MODELS / f"{name}_all_layers_gpu.toml")
    assert cpu["encoder"].pop("frozen_layers") == 5 and gpu["encoder"].pop("frozen_layers") == 0
    assert cpu["encoder"].pop("device") == "cpu" and gpu["encoder"].pop("device") == "cuda"
    for config in (cpu, gpu):
        config["experiment"].pop("title")
    assert gpu == cpu
    with open(MODELS / f"{name}_top_layers.toml", "rb") as handle:
        assert tomllib.load(handle)["experiment"]["protocol"] == "gpf_top_layers"
