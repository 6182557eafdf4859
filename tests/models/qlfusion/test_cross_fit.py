"""QLFusion's cross-fitting (``QLFusion.cross_fit``): folds over topics and held-out weights."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.data.folds import fold_indices
from probrank.exceptions import InputDataError
from probrank.fusion import fuse as plain_fuse
from probrank.models import QLFusion, QLFusionSettings
from probrank.models.qlfusion import relevant_counts

TINY = QLFusionSettings(
    depth=30, batch_sizes=(4,), max_epochs=3, patience=2, max_steps=20, posterior_samples=5,
    rf_trees=5, progress=False,
)  # fmt: skip
VARIANTS = ("qlfusion", "qlfusion_det", "qlfusion_lr", "qlfusion_lower")


@pytest.fixture(scope="module")
def collection():
    return score_distribution_runs(num_queries=13, num_runs=3, num_docs=80, depth=30, seed=5)


@pytest.fixture(scope="module")
def cross_fit(collection):
    model = QLFusion(TINY)
    return model.cross_fit(
        collection.runs, collection.qrels, folds=4, fold_seed=2, variants=VARIANTS, seed=1
    )


def test_folds_are_the_project_folds_and_every_list_is_weighted(collection, cross_fit) -> None:
    data = cross_fit.data
    assert data.folds == fold_indices(len(data.topics), 4, seed=2)
    runs = [r.name for r in collection.runs]
    for variant in VARIANTS:
        weights = cross_fit.weights(variant)
        assert list(weights) == runs
        for per_topic in weights.values():
            assert set(per_topic) == set(data.topics)
            assert all(0.0 <= w <= 1.0 for w in per_topic.values())


def test_test_mae_is_that_of_the_held_out_predictions(collection, cross_fit) -> None:
    data = cross_fit.data
    truth = {
        run.name: dict(
            zip(data.topics, relevant_counts(run, collection.qrels, data.topics, 30), strict=True)
        )
        for run in collection.runs
    }
    for variant in VARIANTS:
        weights = cross_fit.weights(variant)
        errors = [
            abs(w - float(truth[run][topic]) / 30)
            for run, per_topic in weights.items()
            for topic, w in per_topic.items()
        ]
        assert cross_fit.test_mae[variant] == pytest.approx(sum(errors) / len(errors), rel=1e-5)


def test_fuse_is_weighted_combsum_with_the_held_out_weights(collection, cross_fit) -> None:
    fused = cross_fit.fuse(collection.runs, "qlfusion_lower")
    expected = plain_fuse(
        collection.runs, "weighted", norm="minmax", depth=30,
        weights=cross_fit.weights("qlfusion_lower"), name="qlfusion_lower",
    )  # fmt: skip
    assert fused.as_dict() == expected.as_dict() and fused.name == "qlfusion_lower"


def test_groups_trained_apart_merge_to_the_same_numbers(collection, cross_fit) -> None:
    """The unit of parallel work: every training group run on its own (as the Ray executor
    does) and merged gives cross_fit's numbers bit for bit."""
    model = QLFusion(dataclasses.replace(TINY, seed=1))
    data = model.prepare_cross_fit(
        collection.runs, collection.qrels, folds=4, fold_seed=2, variants=VARIANTS
    )
    groups = model.training_groups(VARIANTS)
    assert [g.key for g in groups] == ["bayesian/scores", "deterministic/scores", "ridge"]
    results = [model.cross_fit_group(data, g) for g in reversed(groups)]
    merged = model.merge_cross_fit(data, VARIANTS, results)
    for variant in VARIANTS:
        assert torch.equal(merged.predictions[variant], cross_fit.predictions[variant])
    assert merged.coverage == cross_fit.coverage


def test_coverage_is_that_of_the_held_out_predictive_intervals(cross_fit) -> None:
    """Every neural variant reports the share of test lists inside its 50% / 90% posterior
    predictive intervals, recomputed here from its own draws and likelihood."""
    from probrank.models.qlfusion.predictive import interval_coverage, predictive_shares

    assert set(cross_fit.coverage) == {"qlfusion", "qlfusion_det", "qlfusion_lower"}
    test = cross_fit.data.test
    trained = cross_fit.quantifiers["qlfusion"]
    draws = trained.draws(test["x"], "binomial", TINY.posterior_samples, seed=1)
    shares = predictive_shares(draws, trained.net.likelihoods()[0], TINY.depth, seed=1)
    expected = interval_coverage(shares, test["counts"] / TINY.depth, test["mask"])
    assert cross_fit.coverage["qlfusion"] == expected
    assert 0.0 <= expected["coverage_50"] <= expected["coverage_90"] <= 1.0


def test_bad_requests_fail_before_training(collection) -> None:
    model = QLFusion(TINY)
    with pytest.raises(InputDataError, match="at least 3 folds, got 2"):
        model.cross_fit(collection.runs, collection.qrels, folds=2)
    with pytest.raises(InputDataError, match="unknown quantifier variants"):
        model.cross_fit(collection.runs, collection.qrels, folds=3, variants=["qlfusion_x"])


def test_settings_from_a_config_table_key_for_key() -> None:
    table = {"batch_sizes": [1, 2], "estimator": "local_reparam", "max_steps": 50}
    settings = QLFusionSettings.from_table(table, depth=20)
    assert settings.batch_sizes == (1, 2) and settings.depth == 20
    assert settings.estimator.value == "local_reparam"
    with pytest.raises(InputDataError, match="unknown QLFusion settings \\['lrr'\\]"):
        QLFusionSettings.from_table({"lrr": 0.1})
