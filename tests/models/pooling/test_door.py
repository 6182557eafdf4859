"""The pooling model's door like the other models': the prior as the no-data posterior,
save/load round trips, ArviZ data on the installed line, lazy export from probrank.models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import probrank.models
from probrank import _arviz
from probrank.exceptions import InputDataError
from probrank.models._persist import MANIFEST_NAME
from probrank.models.pooling import PoolingModelSettings, PoolingRelevanceModel
from tests.models.pooling.test_model import _simulated

RUNS, TOPICS, DEPTH = 4, 8, 50
SIZE = 2 * RUNS + 2 * TOPICS + 5


@pytest.fixture
def fitted() -> tuple[PoolingRelevanceModel, np.ndarray, np.ndarray, np.ndarray]:
    ranks, topic, labels, _ = _simulated(3, n=800)
    settings = PoolingModelSettings(run_scale=1.5, num_samples=64)
    model = PoolingRelevanceModel(settings).fit(
        ranks[:, :600], topic[:600], labels[:600], num_topics=TOPICS, depth=DEPTH
    )
    return model, ranks[:, 600:], topic[600:], labels[600:]


def test_fit_on_no_items_is_the_prior() -> None:
    # moderate run scales, so that 40,000 draws resolve the shared mean's covariance
    settings = PoolingModelSettings(run_scale=2.0, retrieved_scale=2.0)
    model = PoolingRelevanceModel(settings).fit(
        np.zeros((RUNS, 0), dtype=np.int64), np.zeros(0), np.zeros(0), num_topics=3, depth=20
    )
    draws = model.sample_parameters(40_000, np.random.default_rng(0))
    blocks = model.parameter_blocks()
    # independent reference: the hierarchical prior's marginal variances in closed form
    # w_r = mu_w + N(0, run_scale^2), mu_w ~ N(0, hyper_scale^2); b1_t ~ N(0, topic_slope^2)
    expected = {
        "w": settings.run_scale**2 + settings.hyper_scale**2,
        "a": settings.topic_scale**2 + settings.hyper_scale**2,
        "b1_topic": settings.topic_slope_scale**2,
        "b_fused": settings.hyper_scale**2,
        "mu_c": settings.hyper_scale**2,
    }
    for name, variance in expected.items():
        values = draws[:, blocks[name]]
        np.testing.assert_allclose(values.var(axis=0), variance, rtol=0.03)
        np.testing.assert_allclose(values.mean(axis=0), 0.0, atol=0.05 * variance**0.5)
    # w_0 and w_1 share mu_w: their prior covariance is hyper_scale^2
    w = draws[:, blocks["w"]]
    np.testing.assert_allclose(np.cov(w[:, 0], w[:, 1])[0, 1], settings.hyper_scale**2, rtol=0.05)


def test_save_load_round_trip_gives_identical_predictions_and_draws(fitted, tmp_path) -> None:
    model, ranks, topic, _ = fitted
    folder = model.save(tmp_path / "pooling")
    loaded = PoolingRelevanceModel.load(folder)
    assert loaded.settings == model.settings
    np.testing.assert_array_equal(loaded.mean, model.mean)
    np.testing.assert_array_equal(loaded.covariance_factor, model.covariance_factor)
    np.testing.assert_array_equal(loaded.predict(ranks, topic), model.predict(ranks, topic))
    np.testing.assert_array_equal(
        loaded.posterior(ranks, topic, num_samples=30, seed=5),
        model.posterior(ranks, topic, num_samples=30, seed=5),
    )
    np.testing.assert_array_equal(
        loaded.run_curves(np.array([1, 10, 50])), model.run_curves(np.array([1, 10, 50]))
    )
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["state"] == {"num_runs": RUNS, "num_topics": TOPICS, "depth": DEPTH}
    assert manifest["weights"]["laplace"]["tensors"]["covariance_factor"] == {
        "shape": [SIZE, SIZE],
        "dtype": "float64",
    }
    # a loaded model refits from the saved MAP like the original
    more_ranks, more_topic, more_labels, _ = _simulated(4, n=300)
    again = model.fit(more_ranks, more_topic, more_labels, num_topics=TOPICS, depth=DEPTH)
    reloaded = loaded.fit(more_ranks, more_topic, more_labels, num_topics=TOPICS, depth=DEPTH)
    np.testing.assert_allclose(reloaded.mean, again.mean, rtol=0, atol=1e-9)


def test_load_refuses_damaged_folders(fitted, tmp_path) -> None:
    model, *_ = fitted
    with pytest.raises(InputDataError, match="not fitted"):
        PoolingRelevanceModel().save(tmp_path / "empty")
    folder = model.save(tmp_path / "pooling")
    manifest_file = folder / MANIFEST_NAME
    manifest = json.loads(manifest_file.read_text())
    manifest["state"]["num_topics"] = "eight"
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(InputDataError, match=r"state\.num_topics"):
        PoolingRelevanceModel.load(folder)
    manifest["state"]["num_topics"] = TOPICS + 1  # tensors no longer fit the shape
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(InputDataError, match="damaged saved model"):
        PoolingRelevanceModel.load(folder)
    manifest["state"]["num_topics"] = TOPICS
    manifest["settings"]["run_scale"] = -1.0
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(InputDataError, match="run_scale"):
        PoolingRelevanceModel.load(folder)
    with pytest.raises(InputDataError, match="no such folder"):
        PoolingRelevanceModel.load(tmp_path / "missing")


def test_to_inference_data_shapes_and_draws(fitted) -> None:
    model, *_ = fitted
    runs = [f"run{r}" for r in range(RUNS)]
    data = model.to_inference_data(num_samples=50, seed=2, run_names=runs)
    assert _arviz.is_arviz_data(data)
    posterior = _arviz.get_group(data, "posterior")
    assert posterior["w"].shape == (1, 50, RUNS)
    assert list(posterior["w"].coords["run"].values) == runs
    assert posterior["a"].shape == posterior["b1_topic"].shape == (1, 50, TOPICS)
    for name in ("b_fused", "b_share", "mu_w", "mu_c", "mu_a"):
        assert posterior[name].shape == (1, 50)
    # the same draws as sample_parameters with the same seed, block by block
    draws = model.sample_parameters(50, np.random.default_rng(2))
    for name, block in model.parameter_blocks().items():
        np.testing.assert_array_equal(
            np.asarray(posterior[name]).reshape(50, -1), draws[:, block], err_msg=name
        )
    assert not _arviz.has_group(data, "log_likelihood")


def test_to_inference_data_of_items_matches_posterior_and_log_likelihood(fitted) -> None:
    model, ranks, topic, labels = fitted
    data = model.to_inference_data(ranks, topic, labels, num_samples=40, seed=1)
    p_rel = np.asarray(_arviz.get_group(data, "posterior")["p_rel"])
    assert p_rel.shape == (1, 40, len(topic))
    np.testing.assert_allclose(
        p_rel[0], model.posterior(ranks, topic, num_samples=40, seed=1), rtol=0, atol=1e-15
    )
    loglik = np.asarray(_arviz.get_group(data, "log_likelihood")["rel"])
    reference = stats.bernoulli.logpmf(labels[None, :], p_rel[0])  # independent of the code
    np.testing.assert_allclose(loglik[0], reference, rtol=1e-9, atol=1e-12)
    observed = np.asarray(_arviz.get_group(data, "observed_data")["rel"])
    np.testing.assert_array_equal(observed, labels)


def test_to_inference_data_refuses_bad_input(fitted) -> None:
    model, ranks, topic, labels = fitted
    with pytest.raises(InputDataError, match="together"):
        model.to_inference_data(ranks)
    with pytest.raises(InputDataError, match="num_runs x n"):
        model.to_inference_data(ranks[:2], topic)
    with pytest.raises(InputDataError, match="0 or 1"):
        model.to_inference_data(ranks, topic, labels * 2)
    with pytest.raises(InputDataError, match="topic_names"):
        model.to_inference_data(topic_names=["t1"])
    with pytest.raises(InputDataError, match="not fitted"):
        PoolingRelevanceModel().to_inference_data()


def test_models_exports_the_pooling_model_lazily() -> None:
    assert probrank.models.PoolingRelevanceModel is PoolingRelevanceModel
    assert probrank.models.PoolingModelSettings is PoolingModelSettings
    assert {"PoolingRelevanceModel", "PoolingModelSettings"} <= set(probrank.models.__all__)
    assert "PoolingRelevanceModel" in dir(probrank.models)
    assert "PoolingRelevanceModel" in (probrank.models.__doc__ or "")


def test_repr(fitted) -> None:
    model, *_ = fitted
    assert repr(model) == f"PoolingRelevanceModel(fitted, runs={RUNS}, topics={TOPICS}, depth=50)"
    assert repr(PoolingRelevanceModel()) == "PoolingRelevanceModel(unfitted)"


def test_save_path_must_be_a_folder(fitted, tmp_path: Path) -> None:
    model, *_ = fitted
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(InputDataError):
        model.save(file)
