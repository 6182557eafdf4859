"""The optional cell effects of the pooling relevance model (``cell_effects``): a table over
(best rank by doubling of the depth) x (runs ranking the item by doubling), shared by topics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probrank import _arviz
from probrank.exceptions import InputDataError
from probrank.models._persist import MANIFEST_NAME
from probrank.models.pooling import PoolingModelSettings, PoolingRelevanceModel
from probrank.models.pooling.model import _newton_terms

RUNS, TOPICS, DEPTH = 5, 4, 20


def _pool(seed: int, n: int = 1500) -> tuple[np.ndarray, np.ndarray]:
    """Items of 4 topics ranked by 5 runs (depth 20), every item ranked by at least one."""
    rng = np.random.default_rng(seed)
    share = rng.uniform(0.1, 0.9, n)  # items differ in how many runs rank them
    ranks = np.where(rng.random((RUNS, n)) < share, rng.integers(1, DEPTH + 1, (RUNS, n)), 0)
    alone = ranks.max(axis=0) == 0
    ranks[rng.integers(0, RUNS, n)[alone], np.flatnonzero(alone)] = rng.integers(
        1, DEPTH + 1, alone.sum()
    )
    return ranks, rng.integers(0, TOPICS, n)


def _reference_cell(ranks: np.ndarray, depth: int) -> np.ndarray:
    """Each item's cell by loops and explicit bin edges (independent of the model's code)."""
    depth_edges = [1, 2, 4, 8, 16, 32, 64, 128, 256]  # row j: best rank in (e_{j-1}, e_j]
    runs = ranks.shape[0]
    count_edges = [0, 1, 2, 4, 8, 16, 32, 64, 128]
    count_edges = [e for e in count_edges if e < runs] + [runs]
    rows = next(j for j, e in enumerate(depth_edges) if e >= depth) + 1
    out = []
    for column in ranks.T:
        best = min(k for k in column if k > 0)
        row = min(next(j for j, e in enumerate(depth_edges) if best <= e), rows - 1)
        count = int((column > 0).sum())
        col = next(j for j in range(len(count_edges) - 1) if count <= count_edges[j + 1])
        out.append(row * (len(count_edges) - 1) + col)
    return np.array(out)


def _central_difference(
    design: np.ndarray, labels: np.ndarray, precision: np.ndarray, theta: np.ndarray, term: int
) -> np.ndarray:
    """Central differences (step 1e-5) along each parameter of ``_newton_terms(...)[term]``:
    the log posterior's gradient (term 0, `p`) or the gradient's Jacobian (term 1, `p x p`)."""
    step = 1e-5
    return np.array(
        [
            (
                _newton_terms(design, labels, precision, theta + step * e)[term]
                - _newton_terms(design, labels, precision, theta - step * e)[term]
            )
            / (2 * step)
            for e in np.eye(len(theta))
        ]
    )


def test_grid_labels_and_cells_match_a_loop_reference() -> None:
    rows, columns = PoolingRelevanceModel.cell_grid(17, 100)
    assert rows == ["1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65-100"]
    assert columns == ["1", "2", "3-4", "5-8", "9-16", "17"]
    assert PoolingRelevanceModel.cell_grid(63, 100)[1][-2:] == ["17-32", "33-63"]
    assert PoolingRelevanceModel.cell_grid(RUNS, DEPTH) == (
        ["1", "2", "3-4", "5-8", "9-16", "17-20"],
        ["1", "2", "3-4", "5"],
    )
    for runs, depth in [(RUNS, DEPTH), (17, 100), (2, 10)]:
        rng = np.random.default_rng(runs)
        ranks = np.where(rng.random((runs, 400)) < 0.3, rng.integers(1, depth + 1, (runs, 400)), 0)
        ranks[0, ranks.max(axis=0) == 0] = depth
        ranks[:, 0] = 1  # rank 1 in every run
        np.testing.assert_array_equal(
            PoolingRelevanceModel.cell_index(ranks, depth), _reference_cell(ranks, depth)
        )


def test_rank_only_grid_is_the_rows_of_the_full_grid() -> None:
    """``cell_counts=False``: one column, and each item's cell is its row of the full grid."""
    rows, columns = PoolingRelevanceModel.cell_grid(17, 100, counts=False)
    assert rows == PoolingRelevanceModel.cell_grid(17, 100)[0] and columns == ["any"]
    rng = np.random.default_rng(11)
    ranks = np.where(rng.random((17, 500)) < 0.3, rng.integers(1, 101, (17, 500)), 0)
    ranks[0, ranks.max(axis=0) == 0] = 100
    full_columns = len(PoolingRelevanceModel.cell_grid(17, 100)[1])
    np.testing.assert_array_equal(
        PoolingRelevanceModel.cell_index(ranks, 100, counts=False),
        _reference_cell(ranks, 100) // full_columns,
    )


@pytest.mark.parametrize(("smooth", "counts"), [(None, True), (0.5, True), (0.5, False)])
def test_design_logits_gradient_and_hessian_agree_with_cells(smooth, counts) -> None:
    ranks, topics = _pool(0, n=300)
    rng = np.random.default_rng(1)
    labels = (rng.random(300) < 0.3).astype(float)
    settings = PoolingModelSettings(
        cell_effects=True, cell_smooth_scale=smooth, run_scale=3.0, cell_counts=counts
    )
    model = PoolingRelevanceModel(settings).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    design = model._design(ranks, topics, DEPTH)
    precision = model._prior_precision(RUNS, TOPICS, DEPTH)
    size = 2 * RUNS + 2 * TOPICS + 5 + (6 * 4 if counts else 6)
    assert design.shape == (300, size) and precision.shape == (size, size)
    theta = rng.normal(0.0, 0.7, size)
    # the Newton fit's linear predictor is the logits the model predicts and samples with
    np.testing.assert_allclose(design @ theta, model.logits(ranks, topics, theta), atol=1e-12)
    _, gradient, hessian = _newton_terms(design, labels, precision, theta)
    numeric_grad = _central_difference(design, labels, precision, theta, term=0)
    np.testing.assert_allclose(gradient, numeric_grad, rtol=1e-6, atol=1e-6)
    numeric_hess = -_central_difference(design, labels, precision, theta, term=1)
    np.testing.assert_allclose(hessian, numeric_hess, rtol=1e-5, atol=1e-6)
    # at the fitted MAP the gradient vanishes
    _, at_map, _ = _newton_terms(design, labels, precision, model.mean)
    assert np.max(np.abs(at_map)) < 1e-6


def test_cell_prior_is_independent_cells_plus_neighbour_differences() -> None:
    settings = PoolingModelSettings(cell_effects=True, cell_scale=0.8, cell_smooth_scale=0.3)
    model = PoolingRelevanceModel(settings)
    precision = model._cell_precision(RUNS, DEPTH)
    g = np.random.default_rng(2).normal(size=(6, 4))  # rows: depth bins, columns: run counts
    quadratic = (g**2).sum() / 0.8**2
    quadratic += ((np.diff(g, axis=0) ** 2).sum() + (np.diff(g, axis=1) ** 2).sum()) / 0.3**2
    np.testing.assert_allclose(g.ravel() @ precision @ g.ravel(), quadratic, rtol=1e-12)
    # the cells' prior block sits after the base parameters, uncoupled from them
    full = model._prior_precision(RUNS, TOPICS, DEPTH)
    base = 2 * RUNS + 2 * TOPICS + 5
    np.testing.assert_array_equal(full[base:, base:], precision)
    assert not np.any(full[:base, base:])


def test_rank_only_prior_is_a_random_walk_over_the_best_rank() -> None:
    settings = PoolingModelSettings(
        cell_effects=True, cell_scale=0.8, cell_smooth_scale=0.3, cell_counts=False
    )
    precision = PoolingRelevanceModel(settings)._cell_precision(RUNS, DEPTH)
    g = np.random.default_rng(3).normal(size=6)  # one effect per doubling of the best rank
    quadratic = (g**2).sum() / 0.8**2 + (np.diff(g) ** 2).sum() / 0.3**2
    np.testing.assert_allclose(g @ precision @ g, quadratic, rtol=1e-12)


def test_cells_off_keeps_the_old_layout_and_cells_held_at_zero_give_its_fit() -> None:
    ranks, topics = _pool(3)
    labels = (np.random.default_rng(4).random(ranks.shape[1]) < 0.3).astype(float)
    old = PoolingRelevanceModel(PoolingModelSettings(run_scale=3.0)).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    assert old.mean.shape == (2 * RUNS + 2 * TOPICS + 5,) and "cell" not in old.parameter_blocks()
    # a cell prior so tight that the cells stay at 0 leaves the other parameters' MAP
    pinned = PoolingRelevanceModel(
        PoolingModelSettings(run_scale=3.0, cell_effects=True, cell_scale=1e-6)
    ).fit(ranks, topics, labels, num_topics=TOPICS, depth=DEPTH)
    blocks = pinned.parameter_blocks()
    assert blocks["cell"] == slice(len(old.mean), len(old.mean) + 24)
    assert np.max(np.abs(pinned.mean[blocks["cell"]])) < 1e-8
    np.testing.assert_allclose(pinned.mean[: len(old.mean)], old.mean, atol=1e-6)
    np.testing.assert_allclose(pinned.predict(ranks, topics), old.predict(ranks, topics), atol=1e-7)


def test_cells_learn_a_relevance_pattern_the_smooth_curves_cannot() -> None:
    """Relevance that drops for items ranked by exactly 2 runs (whatever their ranks) and
    jumps at best ranks 9-16: held-out P(relevant) per cell is far closer with the cells."""
    ranks, topics = _pool(5, n=8000)
    truth_model = PoolingRelevanceModel(PoolingModelSettings(cell_effects=True))
    truth_model._shape = (RUNS, TOPICS, DEPTH)
    theta = np.zeros(2 * RUNS + 2 * TOPICS + 5 + 24)
    theta[2 * RUNS + 2 * TOPICS] = 0.8  # b1: the fused evidence
    theta[2 * RUNS : 2 * RUNS + TOPICS] = -1.0  # topic offsets
    cells = np.zeros((6, 4))
    cells[:, 1] = -2.5  # ranked by exactly 2 runs
    cells[4, :] = 1.5  # best rank 9-16
    theta[-24:] = cells.ravel()
    logits = truth_model.logits(ranks, topics, theta)
    truth = 1.0 / (1.0 + np.exp(-logits))
    labels = (np.random.default_rng(6).random(len(truth)) < truth).astype(float)
    train, held = slice(0, 6000), slice(6000, None)
    errors, item_errors = {}, {}
    cell = PoolingRelevanceModel.cell_index(ranks[:, held], DEPTH)
    for on in (False, True):
        model = PoolingRelevanceModel(PoolingModelSettings(cell_effects=on)).fit(
            ranks[:, train], topics[train], labels[train], num_topics=TOPICS, depth=DEPTH
        )
        predicted = model.predict(ranks[:, held], topics[held])
        gap = np.bincount(cell, predicted - truth[held], minlength=24)
        errors[on] = np.abs(gap).sum() / len(cell)  # mean |expected - true| per cell, per item
        item_errors[on] = np.mean(np.abs(predicted - truth[held]))
    # measured (seeds 5, 6): per cell 0.041 without, 0.016 with; per item 0.045, 0.024
    assert errors[True] < 0.025 and errors[False] > 2 * errors[True]
    assert item_errors[True] < 0.7 * item_errors[False]


def test_save_load_and_arviz_with_cells(tmp_path) -> None:
    ranks, topics = _pool(7, n=600)
    labels = (np.random.default_rng(8).random(600) < 0.3).astype(float)
    settings = PoolingModelSettings(
        cell_effects=True, cell_scale=1.3, cell_smooth_scale=0.7, num_samples=32
    )
    model = PoolingRelevanceModel(settings).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    folder = model.save(tmp_path / "model")
    loaded = PoolingRelevanceModel.load(folder)
    assert loaded.settings == settings
    assert loaded.parameter_blocks() == model.parameter_blocks()
    np.testing.assert_array_equal(loaded.mean, model.mean)
    np.testing.assert_array_equal(
        loaded.posterior(ranks, topics, 16, seed=2), model.posterior(ranks, topics, 16, seed=2)
    )
    data = loaded.to_inference_data(ranks[:, :10], topics[:10], labels[:10], seed=1)
    posterior = _arviz.get_group(data, "posterior")
    assert posterior["cell"].dims == ("chain", "draw", "best_rank", "runs_ranking")
    assert posterior["cell"].shape == (1, 32, 6, 4)
    assert list(posterior["runs_ranking"].values) == ["1", "2", "3-4", "5"]
    draws = loaded.sample_parameters(32, np.random.default_rng(1))
    np.testing.assert_array_equal(
        posterior["cell"].values[0].reshape(32, -1), draws[:, loaded.parameter_blocks()["cell"]]
    )
    # the saved settings decide the size: a manifest that drops the cells no longer fits
    manifest = folder / MANIFEST_NAME
    data_json = json.loads(manifest.read_text())
    data_json["settings"]["cell_effects"] = False
    manifest.write_text(json.dumps(data_json))
    with pytest.raises(InputDataError, match="damaged saved model"):
        PoolingRelevanceModel.load(folder)


def test_save_load_and_arviz_with_rank_only_cells(tmp_path) -> None:
    ranks, topics = _pool(12, n=600)
    labels = (np.random.default_rng(13).random(600) < 0.3).astype(float)
    settings = PoolingModelSettings(
        cell_effects=True, cell_smooth_scale=0.3, cell_counts=False, num_samples=16
    )
    model = PoolingRelevanceModel(settings).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    loaded = PoolingRelevanceModel.load(model.save(tmp_path / "model"))
    assert loaded.settings == settings and loaded.settings.cell_counts is False
    np.testing.assert_array_equal(loaded.predict(ranks, topics), model.predict(ranks, topics))
    posterior = _arviz.get_group(loaded.to_inference_data(seed=1), "posterior")
    assert posterior["cell"].shape == (1, 16, 6, 1)
    assert list(posterior["runs_ranking"].values) == ["any"]


def test_refit_with_cells_turned_on_restarts_from_zero() -> None:
    ranks, topics = _pool(9, n=500)
    labels = (np.random.default_rng(10).random(500) < 0.3).astype(float)
    model = PoolingRelevanceModel(PoolingModelSettings()).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    model.settings = PoolingModelSettings(cell_effects=True)
    model.fit(ranks, topics, labels, num_topics=TOPICS, depth=DEPTH)
    fresh = PoolingRelevanceModel(PoolingModelSettings(cell_effects=True)).fit(
        ranks, topics, labels, num_topics=TOPICS, depth=DEPTH
    )
    np.testing.assert_allclose(model.mean, fresh.mean, atol=1e-6)


def test_cell_settings_validate() -> None:
    with pytest.raises(InputDataError, match="cell_scale"):
        PoolingModelSettings(cell_scale=0.0)
    with pytest.raises(InputDataError, match="cell_smooth_scale"):
        PoolingModelSettings(cell_smooth_scale=-1.0)
    with pytest.raises(InputDataError, match="cell_effects"):
        PoolingModelSettings(cell_effects="yes")  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="cell_counts"):
        PoolingModelSettings(cell_counts="no")  # type: ignore[arg-type]
