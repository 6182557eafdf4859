"""``load_config`` returns a protocol's typed, frozen settings: one nested dataclass per table,
the protocols' defaults filled in, the model tables as the models' settings objects, the
``[smoke]`` tables merged by one function, and unknown keys still one-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from probrank.exceptions import InputDataError
from probrank.experiments import load_config, load_document, settings_of
from probrank.experiments import schemas as s
from probrank.experiments.cascade.config import SecondStageSettings
from probrank.experiments.interactive.config import REPORTED_ROUNDS, GridCellSettings
from probrank.experiments.mediqa.config import THRESHOLDS, multitask_settings
from probrank.experiments.qlfusion_cv.config import DEFAULT_MEASURES
from probrank.models import QLFusionSettings
from probrank.models.gpf_ranker import DEFAULT_MEAN_FIELD_FACTORS, GPFRankerSettings
from probrank.models.interactive.settings import InteractiveRankerSettings
from probrank.models.multitask.model import MultiTaskSettings
from probrank.models.qlfusion import VARIANTS

MODELS = Path(__file__).resolve().parents[2] / "models"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_cascade_config_gets_the_documented_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, '[experiment]\nprotocol = "cascade"\n[collection]\nname = "vaswani"\n')
    settings = load_config(path)
    assert isinstance(settings, s.CascadeExperimentSettings)
    assert settings.experiment.threads == 2 and settings.experiment.quiet is False
    assert settings.experiment.executor == "local" and settings.experiment.title is None
    first = settings.first_stage
    assert (first.k, first.k1, first.b) == (1000, 1.2, 0.75)
    assert (first.method, first.stemmer, first.stopwords) == ("robertson", "porter", "english_plus")
    second = settings.second_stage
    assert (second.model, second.depth, second.folds) == ("gpf", 100, 5)
    assert second.pair_features is True and second.dense_features is False
    assert second.gpf == GPFRankerSettings()  # the model's settings object, not a copy
    assert second.multitask == MultiTaskSettings()
    ranking = settings.ranking
    assert (ranking.criterion, ranking.alpha, ranking.risk_aversion) == ("cvar", 0.1, 1.0)
    assert ranking.num_draws == 1000 and settings.evaluation.n_bins == 10
    assert (settings.output.folder, settings.output.save) == ("results", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.ranking.alpha = 0.5  # type: ignore[misc]


def test_model_tables_are_the_models_settings(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[experiment]\nprotocol = "cascade"\n[collection]\nname = "vaswani"\n'
        "[second_stage.gpf]\ngammas = [2.0]\nepochs = [5, 10]\nhidden = 64\n",
    )
    gpf = load_config(path).second_stage.gpf  # type: ignore[union-attr]
    assert gpf == GPFRankerSettings(gammas=(2.0,), epochs=(5, 10), hidden=64)
    assert isinstance(SecondStageSettings().gpf, GPFRankerSettings)


def test_qlfusion_interactive_mediqa_and_gpf_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, '[experiment]\nprotocol = "qlfusion_cv"\n[data]\npath = "x"\n')
    qlfusion = load_config(path)
    assert isinstance(qlfusion, s.QLFusionExperimentSettings)
    assert qlfusion.experiment.threads == 1
    protocol = qlfusion.protocol
    assert (protocol.folds, protocol.fold_seed, protocol.depth, protocol.top_runs) == (
        10,
        0,
        100,
        6,
    )
    assert protocol.measures == list(DEFAULT_MEASURES) and protocol.variants == list(VARIANTS)
    assert (qlfusion.data.qrels, qlfusion.data.runs) == ("qrels.txt", "runs/*")
    assert qlfusion.data.on_duplicate == "error"
    assert qlfusion.quantifier == QLFusionSettings()

    path = _write(tmp_path, '[experiment]\nprotocol = "interactive"\n')
    interactive = load_config(path)
    assert isinstance(interactive, s.InteractiveExperimentSettings)
    assert interactive.data.dataset == "liveqa-med" and interactive.data.split == "test"
    assert interactive.evaluation.rounds == list(REPORTED_ROUNDS)
    assert interactive.grid == [GridCellSettings()] and interactive.tune is None
    assert interactive.grid[0].posteriors == ["laplace"] and interactive.grid[0].noises == [0.3]
    assert interactive.ranker == InteractiveRankerSettings()

    path = _write(tmp_path, '[experiment]\nprotocol = "mediqa_multitask"\n')
    mediqa = load_config(path)
    assert isinstance(mediqa, s.MediqaMultitaskExperimentSettings)
    assert mediqa.experiment.threads is None  # this process's torch threads
    assert mediqa.model == multitask_settings({}) and mediqa.model.thresholds == THRESHOLDS
    assert mediqa.baselines.max_k == 10 and mediqa.evaluation.bootstrap == 1000
    assert mediqa.entailment.enabled and mediqa.entailment.first_stage == 20

    path = _write(
        tmp_path,
        '[experiment]\nprotocol = "gpf_ranker"\n[data]\ntrain = "mediqa:train"\n'
        'validation = "mediqa:validation"\ntest = "mediqa:test"\n',
    )
    gpf = load_config(path)
    assert isinstance(gpf, s.GPFRankerExperimentSettings)
    assert gpf.calibration.mean_field_factors == list(DEFAULT_MEAN_FIELD_FACTORS)
    assert gpf.calibration.temperature is True and gpf.data.ubuntu_train_contexts == 0
    assert gpf.heads.names == ["deterministic", "mc_dropout", "ensemble", "sngp", "gpf"]
    assert gpf.heads.gpf is None  # a head without a table: the shared keys, else the model's


def test_an_integer_given_for_a_float_is_a_float(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[experiment]\nprotocol = "interactive"\n[laplace]\nscale = 2\n[[grid]]\nnoises = [1]\n',
    )
    settings = load_config(path)
    assert isinstance(settings, s.InteractiveExperimentSettings)
    assert settings.laplace.scale == 2.0 and isinstance(settings.laplace.scale, float)
    assert settings.grid[0].noises == [1.0] and isinstance(settings.grid[0].noises[0], float)


def test_smoke_merges_the_smoke_tables() -> None:
    path = MODELS / "qlfusion" / "robust03.toml"
    document = load_document(path)
    full = load_config(path)
    smoke = load_config(path, smoke=True)
    assert isinstance(full, s.QLFusionExperimentSettings)
    assert isinstance(smoke, s.QLFusionExperimentSettings)
    assert set(document["smoke"]) == {"data", "protocol", "quantifier"}
    for table in document["smoke"]:
        for key, value in document["smoke"][table].items():
            merged = getattr(getattr(smoke, table), key)
            assert merged == (tuple(value) if isinstance(merged, tuple) else value), (table, key)
    assert smoke.quantifier.max_steps == 10
    assert full.quantifier == QLFusionSettings(likelihood="binomial")  # the card's
    # keys the [smoke] tables leave alone keep the config's values
    assert smoke.data.qrels == full.data.qrels and smoke.experiment == full.experiment
    assert smoke.protocol.measures == full.protocol.measures
    assert smoke == settings_of(document, smoke=True)


def test_smoke_overrides_of_a_written_config(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[experiment]\nprotocol = "qlfusion_cv"\n[data]\npath = "runs"\nqrels = "a.txt"\n'
        "[protocol]\nfolds = 5\ndepth = 50\n[smoke.protocol]\nfolds = 3\ntopics = 9\n"
        '[smoke.data]\nqrels = "b.txt"\n',
    )
    full, smoke = load_config(path), load_config(path, smoke=True)
    assert isinstance(full, s.QLFusionExperimentSettings)
    assert isinstance(smoke, s.QLFusionExperimentSettings)
    assert (full.protocol.folds, full.protocol.topics, full.data.qrels) == (5, None, "a.txt")
    assert (smoke.protocol.folds, smoke.protocol.topics, smoke.data.qrels) == (3, 9, "b.txt")
    assert smoke.protocol.depth == 50 and smoke.data.path == "runs"
    assert full.quantifier.depth == smoke.quantifier.depth == 50  # [protocol] depth


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[experiment]\nprotocol = "cascade"\n[collection]\nname = "vaswani"\n'
         "[first_stage]\nkk = 3\n", "first_stage.kk"),
        ('[experiment]\nprotocol = "qlfusion_cv"\n[data]\npath = "x"\n'
         "[smoke.protocol]\nfold = 3\n", "smoke.protocol.fold"),
        ('[experiment]\nprotocol = "cascade"\n[collection]\nname = "vaswani"\n'
         "[second_stage.gpf]\ngamma = [2.0]\n", "second_stage.gpf.gamma"),
    ],
)  # fmt: skip
def test_an_unknown_key_names_the_file_line_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = _write(tmp_path, text)
    line = len(text.splitlines())
    for smoke in (False, True):
        with pytest.raises(InputDataError) as caught:
            load_config(path, smoke=smoke)
        assert str(caught.value).startswith(f"{path}:{line}: {key}: unknown key")
