"""GPFRanker.fit_fine_tuned and GPFRanker.fit_top_layers (the fine-tuned and top-layers regimes
of the GPF protocols): equal to the regimes' training helpers followed by the selection by hand,
the checkpoint with the lowest validation NLL chosen, the evaluation sets scored there."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import torch

from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.transformer import TransformerEncoder
from probrank.evaluation.calibration import negative_log_likelihood
from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker import (
    DropoutScope,
    Family,
    FineTuneSettings,
    GPFRanker,
    GPFRankerSettings,
    RegimeFit,
    TopLayerSplit,
    TopLayersSettings,
    fine_tuning,
    select,
    top_layers,
)
from probrank.nn.calibration import select_calibration
from tests.models.conftest import learnable_lists

FAMILIES = (Family.PLAIN, Family.TEMPERATURE)
GPF = GPFRankerSettings(
    head="gpf",
    hidden=8,
    num_features=16,
    gammas=(1.0, 2.0),
    mean_field_factors=(0.0, 1.0),
    prior_precision=2.0,
    seed=5,
)


@pytest.fixture(scope="module")
def data() -> dict[str, list]:
    torch.manual_seed(0)
    return {
        "train": learnable_lists(4, 0, size=5),
        "validation": learnable_lists(3, 1, size=5),
        "test": learnable_lists(3, 2, size=5),
    }


def _cross_encoder(path: Path) -> TransformerEncoder:
    return TransformerEncoder(
        path, mode="cross", max_length=24, batch_size=8, freeze=False, show_progress=False
    )


def _by_hand_fine_tuned(
    settings: GPFRankerSettings, training: FineTuneSettings, path: Path, data: dict, seed: int
) -> tuple[list, dict]:
    splits = {name: fine_tuning.pair_split(name, lists) for name, lists in data.items()}
    kept = []
    for options in settings.head_options():
        kept += fine_tuning._fine_tune_checkpoints(
            settings.head.value,
            {**options, "seed": seed},
            seed,
            training,
            partial(_cross_encoder, path),
            splits["train"],
            splits["validation"],
            {"test": splits["test"], "again": splits["validation"]},
        )
    return kept, splits


@pytest.fixture(scope="module")
def fine_tuned(tiny_bert_path: Path, data: dict) -> tuple[RegimeFit, list, dict]:
    training = FineTuneSettings(epochs=(2, 1), batch_size=8, lr=1e-2, encoder_lr=1e-3)
    fit = GPFRanker(GPF).fit_fine_tuned(
        data["train"],
        data["validation"],
        {"test": data["test"], "again": data["validation"]},
        training=training,
        encoder=partial(_cross_encoder, tiny_bert_path),
        seed=7,
    )
    kept, splits = _by_hand_fine_tuned(GPF, training, tiny_bert_path, data, 7)
    return fit, kept, splits


def test_fit_fine_tuned_equals_the_training_helper_selected_by_hand(fine_tuned) -> None:
    fit, kept, splits = fine_tuned
    checkpoints = [checkpoint for checkpoint, _ in kept]
    # two gammas x two epochs, each checkpoint with the test and the second validation scores
    assert [(c.options["gamma"], c.epochs) for c in checkpoints] == [
        (1.0, 1),
        (1.0, 2),
        (2.0, 1),
        (2.0, 2),
    ]
    assert list(fit.selections) == [("gpf", Family.PLAIN), ("gpf", Family.TEMPERATURE)]
    labels = splits["validation"].labels
    for family in FAMILIES:
        expected = select("gpf", checkpoints, labels, family, (0.0, 1.0))
        chosen = fit.selections[("gpf", family)]
        assert chosen.settings == expected.settings
        assert torch.equal(chosen.checkpoint.val_mean, expected.checkpoint.val_mean)
        scored = next(p for c, p in kept if c is expected.checkpoint)
        predictions = fit.predictions[("gpf", family)]
        assert list(predictions) == ["test", "again"]
        for name, (mean, variance) in scored.items():
            probability, got_variance = predictions[name]
            assert torch.equal(probability, expected.calibration.probability(mean, variance))
            assert torch.equal(got_variance, variance)
    assert torch.equal(
        fit.probability("test"), fit.predictions[("gpf", Family.TEMPERATURE)]["test"][0]
    )


def test_fine_tuned_selection_is_the_lowest_validation_nll(fine_tuned, data: dict) -> None:
    fit, kept, splits = fine_tuned
    labels = splits["validation"].labels.double()
    n_test = sum(len(item.candidates) for item in data["test"])
    for family in FAMILIES:
        nlls = [
            select_calibration(
                c.val_mean,
                c.val_variance,
                labels,
                factors=[0.0, 1.0],
                temperature=family is Family.TEMPERATURE,
            ).nll
            for c, _ in kept
        ]
        chosen = fit.selections[("gpf", family)]
        assert chosen.val_nll == min(nlls)
        first = kept[nlls.index(min(nlls))][0]  # ties: the earlier one
        assert (chosen.checkpoint.options, chosen.checkpoint.epochs) == (
            first.options,
            first.epochs,
        )
        probability, variance = fit.predictions[("gpf", family)]["test"]
        assert probability.shape == variance.shape == (n_test,)
        assert probability.dtype == variance.dtype == torch.float64
        assert bool(((probability > 0) & (probability < 1)).all()) and bool((variance >= 0).all())
        # scoring the validation set again at the chosen checkpoint gives the chosen NLL
        again, _ = fit.predictions[("gpf", family)]["again"]
        nll = negative_log_likelihood(again.numpy(), labels.long().numpy())
        assert nll == pytest.approx(chosen.val_nll, rel=1e-6)
    plain = fit.selections[("gpf", Family.PLAIN)]
    assert fit.selections[("gpf", Family.TEMPERATURE)].val_nll <= plain.val_nll + 1e-12


def test_fit_fine_tuned_is_seeded(tiny_bert_path: Path, data: dict) -> None:
    settings = GPFRankerSettings(head="deterministic", hidden=8, seed=7)
    training = FineTuneSettings(epochs=(1,), batch_size=8)
    runs = [
        GPFRanker(settings).fit_fine_tuned(
            data["train"],
            data["validation"],
            {"test": data["test"]},
            training=training,
            encoder=partial(_cross_encoder, tiny_bert_path),
            families=[Family.PLAIN],
        )
        for _ in range(2)
    ]
    assert list(runs[0].selections) == [("deterministic", Family.PLAIN)]
    assert torch.equal(runs[0].probability("test"), runs[1].probability("test"))
    assert runs[0].selections[("deterministic", Family.PLAIN)].settings["T"] == 1.0


@pytest.mark.parametrize("head", ["mc_dropout", "ensemble"])
def test_fine_tuning_refuses_heads_without_one_run(head: str, data: dict) -> None:
    with pytest.raises(InputDataError, match=f"{head!r} is not fine-tuned"):
        GPFRanker(GPFRankerSettings(head=head)).fit_fine_tuned(data["train"], data["validation"])


# -- the top-layers regime ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hidden_encoder(tiny_bert_path: Path, tmp_path_factory: pytest.TempPathFactory):
    encoder = HiddenStateEncoder(
        tiny_bert_path,
        frozen_layers=1,
        max_length=24,
        batch_size=8,
        dtype="float32",
        cache_dir=tmp_path_factory.mktemp("hidden-cache"),
        show_progress=False,
    )
    return encoder


@pytest.fixture(scope="module")
def splits(hidden_encoder, data: dict) -> dict[str, TopLayerSplit]:
    return {name: TopLayerSplit.encode(hidden_encoder, name, lists) for name, lists in data.items()}


def _by_hand_top_layers(settings, training, encoder, splits, rows, seed):
    runs = [
        top_layers._Run(
            settings.head.value, rows, {k: v for k, v in o.items() if k != "seed"}, training
        )
        for o in settings.head_options()
    ]
    checkpoints: dict[str, list] = {}
    for run in runs:
        trained = top_layers._train_run(
            run, seed, encoder, splits["train"], splits["validation"], encoder.batch_size, False
        )
        for row, kept in trained.items():
            checkpoints.setdefault(row, []).extend(kept)
    selections = {
        (row, family): select(
            row, kept, splits["validation"].labels, family, settings.mean_field_factors
        )
        for row, kept in checkpoints.items()
        for family in FAMILIES
    }
    targets = {"test": splits["test"], "again": splits["validation"]}
    scored = top_layers._score(runs[0], selections, seed, encoder, targets, encoder.batch_size)
    return checkpoints, selections, scored


@pytest.mark.parametrize(
    ("settings", "rows", "scope"),
    [
        (GPF, None, DropoutScope.HEAD),
        (
            GPFRankerSettings(head="mc_dropout", hidden=8, num_samples=3, prediction_seed=1),
            ("mc_dropout", "deterministic"),
            DropoutScope.TOP_LAYERS,
        ),
    ],
    ids=["gpf", "mc_dropout"],
)
def test_fit_top_layers_equals_the_training_helper_selected_by_hand(
    settings, rows, scope, hidden_encoder, splits, data: dict
) -> None:
    training = TopLayersSettings(
        epochs=(1, 2), batch_size=8, encoder_lr=1e-4, layer_spectral_bound=1.0, scope=scope
    )
    fit = GPFRanker(settings).fit_top_layers(
        hidden_encoder,
        data["train"],  # lists: encoded here (read back from the cache)
        splits["validation"],
        {"test": splits["test"], "again": splits["validation"]},
        training=training,
        rows=rows,
        seed=3,
    )
    served = ("deterministic", "mc_dropout") if rows else (settings.head.value,)
    checkpoints, selections, scored = _by_hand_top_layers(
        settings, training, hidden_encoder, splits, served, 3
    )
    assert list(fit.selections) == [(row, family) for row in served for family in FAMILIES]
    assert list(fit.predictions) == list(scored)
    for key, expected in selections.items():
        chosen = fit.selections[key]
        assert chosen.settings == expected.settings
        assert chosen.val_nll == min(
            select(key[0], [c], splits["validation"].labels, key[1], (0.0, 1.0)).val_nll
            for c in checkpoints[key[0]]
        )
        for name, split in (("test", "test"), ("again", "validation")):
            for got, want in zip(fit.predictions[key][name], scored[key][name], strict=True):
                assert torch.equal(got, want)
                assert got.dtype == torch.float64 and got.shape == (len(splits[split].labels),)
        # the chosen state, reloaded, scores the validation set as it did in training
        again, _ = fit.predictions[key]["again"]
        nll = negative_log_likelihood(again.numpy(), splits["validation"].labels.long().numpy())
        assert nll == pytest.approx(chosen.val_nll, rel=1e-5)
    if settings.head.value == "gpf":
        gammas = {c.options["gamma"] for c in checkpoints["gpf"]}
        assert gammas == {1.0, 2.0}
        assert {c.epochs for c in checkpoints["gpf"]} == {1, 2}
    else:  # the deterministic row is the same network without dropout: no variance
        assert not bool(fit.predictions[("deterministic", Family.PLAIN)]["test"][1].any())


def test_top_layers_refuses_what_it_does_not_train(hidden_encoder, splits) -> None:
    with pytest.raises(InputDataError, match="'ensemble' is not trained on the top layers"):
        GPFRanker(GPFRankerSettings(head="ensemble")).fit_top_layers(
            hidden_encoder, splits["train"], splits["validation"]
        )
    with pytest.raises(InputDataError, match="rows of the sngp head"):
        GPFRanker(GPFRankerSettings(head="sngp")).fit_top_layers(
            hidden_encoder, splits["train"], splits["validation"], rows=["deterministic"]
        )
    with pytest.raises(InputDataError, match="families must not be empty"):
        GPFRanker(GPFRankerSettings(head="sngp")).fit_top_layers(
            hidden_encoder, splits["train"], splits["validation"], families=[]
        )


# -- settings of a protocol's [heads] table --------------------------------------------------


def test_settings_of_a_heads_table() -> None:
    heads = {
        "hidden": 32,
        "dropout": 0.2,
        "epochs": [1, 2],
        "encoder_lr": 1e-4,
        "gpf": {"gamma": [1.0, 3.0], "num_features": 64, "layer_spectral_bound": 1.0},
        "sngp": {"gamma": 2.0, "loss": "focal", "hidden": 16},
    }
    gpf = GPFRankerSettings.from_heads_table("gpf", heads, mean_field_factors=[0.0])
    assert (gpf.hidden, gpf.dropout, gpf.num_features) == (32, 0.2, 64)
    assert gpf.gammas == (1.0, 3.0) and gpf.mean_field_factors == (0.0,)
    sngp = GPFRankerSettings.from_heads_table("sngp", heads, defaults={"num_features": 8})
    assert (sngp.hidden, sngp.focal_gamma, sngp.loss, sngp.num_features) == (16, 2.0, "focal", 8)
    one = GPFRankerSettings.from_heads_table("gpf", {}, defaults={"gammas": (2.0,)})
    assert one.gammas == (2.0,)
    mc = GPFRankerSettings.from_heads_table(
        "deterministic", heads, head="mc_dropout", num_samples=4
    )
    assert mc.head.value == "mc_dropout" and mc.num_samples == 4
    training = TopLayersSettings.from_table({**heads, **heads["gpf"], "scope": "top_layers"})
    assert training.epochs == (1, 2) and training.layer_spectral_bound == 1.0
    assert training.scope is DropoutScope.TOP_LAYERS and training.pooling.value == "mean"
    with pytest.raises(InputDataError, match="layer_spectral_bound must be positive"):
        TopLayersSettings(layer_spectral_bound=0.0)
