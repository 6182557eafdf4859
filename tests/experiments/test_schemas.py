"""The protocols' config schemas: every shipped config loads; a typo, a wrong type and a missing
key are one-line errors naming the file, the line and the dotted key; the schemas list exactly
the keys the code reads."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest
import tomllib

from probrank.exceptions import InputDataError
from probrank.experiments import (
    PROTOCOLS,
    load_config,
    load_document,
    run_experiment,
    settings_of,
)
from probrank.experiments import schemas as s
from probrank.experiments.results import ExperimentResult
from probrank.models.interactive.settings import LaplaceSettings

MODELS = Path(__file__).resolve().parents[2] / "models"
SHIPPED = sorted(MODELS.glob("*/*.toml"))


def test_every_protocol_has_a_schema() -> None:
    assert set(s.SCHEMAS) == set(PROTOCOLS)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_config_loads_unchanged(path: Path) -> None:
    document = load_document(path)
    with open(path, "rb") as handle:
        assert document == tomllib.load(handle)  # checking does not alter the document
    settings = load_config(path)
    assert isinstance(settings, s.SCHEMAS[settings.experiment.protocol])
    assert settings == settings_of(document)
    for smoke in (False, True):  # the typed settings are frozen, the [smoke] merge included
        with pytest.raises(dataclasses.FrozenInstanceError):
            load_config(path, smoke=smoke).experiment.threads = 7  # type: ignore[misc]


def test_there_are_shipped_configs_of_every_protocol() -> None:
    protocols = {load_config(p).experiment.protocol for p in SHIPPED}
    assert protocols == set(PROTOCOLS)


def _edited(tmp_path: Path, source: str, old: str, new: str) -> Path:
    text = (MODELS / source).read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / Path(source).name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


CASES = [
    # (config, old text, new text, the line that holds it, expected message after "file:line: ")
    (
        "gpf_ranker/mediqa.toml",
        "epochs = [5, 10, 20, 40]  # the GP output starts at beta = 0 and needs more steps\n"
        "num_features = 1024\nspectral_bound = 0.95\nprior_precision = 1.0\ngamma",
        "epoch = [5, 10, 20, 40]\nnum_features = 1024\nspectral_bound = 0.95\n"
        "prior_precision = 1.0\ngamma",
        "epoch = [5, 10, 20, 40]",
        "heads.gpf.epoch: unknown key ([heads.gpf] takes: batch_size, dropout, epochs, gamma,",
    ),
    (
        "gpf_ranker/mediqa.toml",
        "num_samples = 10",
        'num_samples = "ten"',
        'num_samples = "ten"',
        "heads.mc_dropout.num_samples: expected an integer, got 'ten'",
    ),
    (
        "gpf_ranker/ubuntu.toml",
        'measures = ["R10@1"',
        'measures = ["R10@2"',
        "measures = ",
        "evaluation.measures: must be one of R10@1, MAP, MRR, accuracy, ECE, Brier, NLL, "
        "got 'R10@2'",
    ),
    (
        "gpf_ranker/mediqa_finetune.toml",
        "encoder_lr = 2e-5",
        "encoder_lr = 2e-5\nweight_decay = 0.01",
        "weight_decay = 0.01",
        "heads.weight_decay: unknown key",  # fine-tuning has no weight decay: it was ignored
    ),
    (
        "gpf_ranker/ubuntu_finetune.toml",
        'shift = ["mediqa:test"]',
        'shift = ["mediqa-test"]',
        "shift = ",
        "data.shift[0]: must be 'dataset:split' with dataset in ubuntu, mediqa, liveqa",
    ),
    (
        "interactive_ranker/liveqa.toml",
        "noises = [0.3]",
        "noise = [0.3]",
        "noise = [0.3]",
        "grid[0].noise: unknown key ([grid[0]] takes: noises, posteriors, strategies)",
    ),
    (
        "interactive_ranker/liveqa_noise.toml",
        'posteriors = ["mcdropout"]',
        'posteriors = ["mcdropuot"]',
        'posteriors = ["mcdropuot"]',
        "grid[1].posteriors: must be one of mcdropout, swag, laplace, ensemble, gppl",
    ),
    (
        "interactive_ranker/tune_laplace.toml",
        '"laplace.scale"',
        '"laplace.scael"',
        '"laplace.scael"',
        "tune.grid.\"laplace.scael\": [laplace] has no option 'scael'",
    ),
    (
        "interactive_ranker/tune_warm_start.toml",
        '"warm_start.lr" = [0.01, 0.03]',
        '"warm_start.lr" = [0.01, "fast"]',
        '"warm_start.lr"',
        "tune.grid.\"warm_start.lr\"[1]: expected a number, got 'fast'",
    ),
    (
        "mediqa_multitask/mediqa.toml",
        "top_n = 3",
        "top_n = 0",
        "top_n = 0",
        "entailment.top_n: must be >= 1, got 0",
    ),
    (
        "mediqa_multitask/mediqa.toml",
        "[baselines]",
        "[baseline]",
        "[baseline]",
        "baseline: unknown key (the top level takes: baselines, data, encoder, entailment,",
    ),
    (
        "qlfusion/robust03.toml",
        "max_epochs = 3",
        "max_epoch = 3",
        "max_epoch = 3",
        "smoke.quantifier.max_epoch: unknown key",
    ),
    (
        "qlfusion/clef_tar_2018.toml",
        "folds = 10",
        "folds = 2",
        "folds = 2",
        "protocol.folds: must be >= 3, got 2",
    ),
    (
        "qlfusion/clef_tar_2018.toml",
        "threads = 1",
        "threads = true",
        "threads = true",
        "experiment.threads: expected an integer, got True",
    ),
]


@pytest.mark.parametrize(
    ("source", "old", "new", "where", "expected"), CASES, ids=[c[4][:40] for c in CASES]
)
def test_bad_configs_name_file_line_and_key(
    tmp_path: Path, source: str, old: str, new: str, where: str, expected: str
) -> None:
    path = _edited(tmp_path, source, old, new)
    with pytest.raises(InputDataError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{path}:{_line_of(path, where)}: "
    assert message.startswith(prefix + expected), message


def test_missing_required_keys(tmp_path: Path) -> None:
    path = _edited(tmp_path, "gpf_ranker/ubuntu.toml", 'train = "ubuntu:train"\n', "")
    with pytest.raises(InputDataError, match=r"ubuntu\.toml:\d+: data\.train: missing"):
        load_config(path)
    path = _edited(tmp_path, "qlfusion/robust03.toml", 'shared = "fusion/robust03"', "")
    with pytest.raises(InputDataError, match=r"data\.shared: missing: \[data\] needs 'shared'"):
        load_config(path)
    path.write_text('[experiment]\ntitle = "x"\n')
    with pytest.raises(InputDataError, match=r":1: experiment\.protocol: must be one of"):
        load_config(path)


def test_interactive_option_files(tmp_path: Path) -> None:
    options = tmp_path / "options.toml"
    options.write_text("[laplace]\nscale = 0.5\n[warm_start]\nhidden = [20, 5]\n")
    settings = load_config(options, protocol="interactive")
    assert isinstance(settings, s.InteractiveExperimentSettings)
    assert settings.laplace == LaplaceSettings(scale=0.5)
    assert settings.ranker.warm_start.hidden == (20, 5)  # the model's settings object
    with pytest.raises(InputDataError, match=r"experiment\.protocol: must be one of"):
        load_config(options)  # an experiment needs its protocol
    with pytest.raises(InputDataError, match=r"warm_start\.hidden\[1\]: expected an integer"):
        options.write_text('[warm_start]\nhidden = [20, "five"]\n')
        load_config(options, protocol="interactive")
    with pytest.raises(InputDataError, match="reads 'interactive' configs, got 'gpf_ranker'"):
        load_config(MODELS / "gpf_ranker" / "ubuntu.toml", protocol="interactive")


def _field_names(kind: type) -> set[str]:
    return {f.name for f in dataclasses.fields(kind)}


def test_schemas_list_the_keys_the_code_reads() -> None:
    from probrank.experiments.gpf import config as g
    from probrank.experiments.qlfusion_cv.config import Quantifier
    from probrank.models.interactive.settings import OPTION_TABLES
    from probrank.models.qlfusion import QLFusionSettings
    from probrank.nn.heads import DeepEnsembleHead, MCDropoutHead, MLPHead, SNGPHead

    set_elsewhere = {"depth", "seed", "progress"}  # [protocol] depth, --seeds, --quiet
    assert _field_names(Quantifier) == _field_names(QLFusionSettings) - set_elsewhere
    option_tables = {f.name for f in dataclasses.fields(s.InteractiveExperimentSettings)}
    assert set(OPTION_TABLES) <= option_tables

    def params(kind: type) -> set[str]:
        return set(inspect.signature(kind.__init__).parameters) - {"self", "in_features", "seed"}

    assert _field_names(g.MLPHeadSettings) == params(MLPHead)
    assert _field_names(g.GPHeadSettings) | {"loss", "gamma"} == params(SNGPHead)
    mc_dropout = _field_names(g.FrozenMCDropoutSettings) - _field_names(g.FrozenFitSettings)
    assert mc_dropout == params(MLPHead) | params(MCDropoutHead) - {"kwargs"}
    ensemble = _field_names(g.FrozenEnsembleSettings) - _field_names(g.FrozenFitSettings)
    assert ensemble == params(MLPHead) | params(DeepEnsembleHead) - {"kwargs"}


def _capture(config: Any, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    return ExperimentResult("captured", {"threads": {"n": [config.experiment.threads]}})


def test_run_experiment_threads_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROTOCOLS, "qlfusion_cv", f"{__name__}:_capture")
    config = MODELS / "qlfusion" / "robust03.toml"
    assert run_experiment(config, seeds=1).values["threads"]["n"] == [1]  # the config's
    assert run_experiment(config, seeds=1, threads=3).values["threads"]["n"] == [3]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputDataError, match="threads must be a positive integer"):
            run_experiment(config, seeds=1, threads=bad)  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="seeds must be a positive integer"):
        run_experiment(config, seeds=0)
