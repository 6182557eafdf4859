"""Bayesian comparison of runs: the truncated normal against scipy, the NumPy potential against
Pyro's, NUTS against the exact posterior of the conjugate normal case, a run against itself,
Robust03 posterior means against the observed means, and the result's bookkeeping."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
import torch
from pyro.infer.mcmc.util import initialize_model
from pyro.ops.integrator import potential_grad
from scipy import stats

from probrank.data.trec import Qrels, Run
from probrank.evaluation import Evaluator, bayesian_compare, bayesian_compare_scores
from probrank.evaluation.bayesian_model import (
    ComparisonPriors,
    UnitTruncatedNormal,
    comparison_model,
)
from probrank.evaluation.bayesian_potential import ComparisonPotential
from probrank.evaluation.bayesian_sampler import check_draws
from probrank.exceptions import ConvergenceWarning, InputDataError

F64 = torch.float64


def _truncnorm(loc: np.ndarray, scale: np.ndarray) -> stats.rv_continuous:
    return stats.truncnorm((0 - loc) / scale, (1 - loc) / scale, loc=loc, scale=scale)


LOCS = np.array([-40.0, -3.0, -0.5, 0.0, 0.3, 0.5, 0.9, 1.2, 4.0, 50.0])
SCALES = np.array([1.0, 0.1, 0.2, 0.05, 0.3, 1.0, 0.02, 0.5, 0.7, 1.0])


def test_truncated_normal_matches_scipy():
    dist = UnitTruncatedNormal(torch.tensor(LOCS), torch.tensor(SCALES))
    ref = _truncnorm(LOCS, SCALES)
    for y in (0.0, 1e-6, 0.01, 0.5, 0.99, 1.0):
        got = dist.log_prob(torch.full((LOCS.size,), y, dtype=F64)).numpy()
        np.testing.assert_allclose(got, ref.logpdf(y), rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(dist.mean.numpy(), ref.mean(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(dist.variance.numpy(), ref.var(), rtol=1e-7, atol=1e-15)
    for u in (1e-12, 0.1, 0.5, 0.9, 1 - 1e-9):
        got = dist.icdf(torch.full((LOCS.size,), u, dtype=F64)).numpy()
        np.testing.assert_allclose(got, ref.ppf(u), rtol=1e-9, atol=1e-12)


def test_truncated_normal_quantiles_beyond_float_underflow():
    # the mass lies 300 scales below 0: Phi of the bounds underflows, the quantile does not
    dist = UnitTruncatedNormal(torch.tensor([-30.0], dtype=F64), torch.tensor([0.1], dtype=F64))
    u = torch.tensor([0.25, 0.5, 0.75], dtype=F64)
    ref = _truncnorm(np.array([-30.0]), np.array([0.1]))
    np.testing.assert_allclose(dist.icdf(u).numpy(), ref.ppf(u.numpy()), rtol=1e-6)


def test_truncated_normal_samples_follow_the_cdf():
    torch.manual_seed(1)
    dist = UnitTruncatedNormal(torch.tensor(0.1, dtype=F64), torch.tensor(0.2, dtype=F64))
    draws = dist.sample((4000,)).numpy()
    assert draws.min() >= 0.0 and draws.max() <= 1.0
    assert stats.kstest(draws, _truncnorm(np.array(0.1), np.array(0.2)).cdf).pvalue > 0.01


@pytest.mark.parametrize("likelihood", ["truncated-normal", "normal"])
@pytest.mark.parametrize(
    "priors",
    [
        ComparisonPriors(),
        ComparisonPriors(known_level=0.3, known_topic_scale=0.2, known_noise=0.1),
        ComparisonPriors(level_loc=0.2, topic_scale=1.0, noise_concentration=3.0),
    ],
)
def test_numpy_potential_equals_pyro_potential(likelihood, priors):
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=(2, 3, 7))
    scores[0, 0, 0], scores[1, 2, 3] = 0.0, 1.0  # values at the bounds
    init, pyro_potential, _, _ = initialize_model(
        comparison_model, model_args=(torch.tensor(scores), likelihood, priors)
    )
    potential = ComparisonPotential(scores, likelihood, priors)
    assert set(init) == set(potential.slices)
    for _ in range(3):
        point = {k: torch.randn(v.shape, dtype=F64) * 0.5 for k, v in init.items()}
        grads, value = potential_grad(pyro_potential, point)
        theta = np.concatenate([point[k].numpy().ravel() for k in potential.slices])
        ours, our_grad = potential.value_and_grad(theta)
        want_grad = np.concatenate([grads[k].numpy().ravel() for k in potential.slices])
        assert ours == pytest.approx(float(value), rel=1e-12)
        np.testing.assert_allclose(our_grad, want_grad, rtol=1e-9, atol=1e-10)


def _exact_normal_differences(scores, noise, level, topic_scale, effect_scale):
    """Mean and covariance of alpha_s - alpha_0 (s >= 1) under the normal model with known
    noise, level and topic spread, from dense Gaussian algebra over (alpha, topics).

    The effects are parametrised by a Helmert basis of the sum-zero vectors (not the one the
    package uses): their prior, Normal(0, c^2 (I - 11'/S)), does not depend on the basis."""
    num_systems, num_topics = scores.shape
    helmert = np.zeros((num_systems, num_systems - 1))
    for k in range(1, num_systems):
        helmert[:k, k - 1] = 1.0
        helmert[k, k - 1] = -k
        helmert[:, k - 1] /= math.sqrt(k * (k + 1))
    size = num_systems - 1 + num_topics
    design = np.zeros((num_systems * num_topics, size))
    for s in range(num_systems):
        for t in range(num_topics):
            design[s * num_topics + t, : num_systems - 1] = helmert[s]
            design[s * num_topics + t, num_systems - 1 + t] = 1.0
    prior_mean = np.concatenate([np.zeros(num_systems - 1), np.full(num_topics, level)])
    prior_precision = np.diag(
        np.concatenate(
            [np.full(num_systems - 1, effect_scale**-2), np.full(num_topics, topic_scale**-2)]
        )
    )
    precision = prior_precision + design.T @ design / noise**2
    covariance = np.linalg.inv(precision)
    mean = covariance @ (prior_precision @ prior_mean + design.T @ scores.ravel() / noise**2)
    contrast = np.zeros((num_systems - 1, size))
    for s in range(1, num_systems):
        contrast[s - 1, : num_systems - 1] = helmert[s] - helmert[0]
    return contrast @ mean, contrast @ covariance @ contrast.T


def test_nuts_matches_the_exact_posterior_of_the_conjugate_normal_case():
    rng = np.random.default_rng(3)
    num_topics, noise, level, spread = 20, 0.1, 0.4, 0.2
    topics = level + spread * rng.normal(size=num_topics)
    effects = np.array([0.0, 0.03, -0.05])
    scores = effects[:, None] + topics[None, :] + noise * rng.normal(size=(3, num_topics))
    priors = ComparisonPriors(known_noise=noise, known_level=level, known_topic_scale=spread)
    result = bayesian_compare_scores(
        scores[None],
        systems=["a", "b", "c"],
        measures=["m"],
        likelihood="normal",
        priors=priors,
        num_chains=2,
        warmup_steps=200,
        num_samples=600,
        seed=0,
    )
    mean, cov = _exact_normal_differences(scores, noise, level, spread, priors.effect_scale)
    values = result.expected("m")
    for index, system in enumerate(["b", "c"]):
        sd = math.sqrt(cov[index, index])
        diff = values[:, index + 1] - values[:, 0]
        pair = result.pair("m", system)
        assert abs(pair.mean_difference - mean[index]) < 0.12 * sd
        assert diff.std() == pytest.approx(sd, rel=0.1)
        low, high = mean[index] + np.array([-1, 1]) * stats.norm.ppf(0.975) * sd
        assert pair.interval == pytest.approx((low, high), abs=0.2 * sd)
        assert pair.p_better == pytest.approx(stats.norm.cdf(mean[index] / sd), abs=0.04)
    # the joint posterior of the two differences: their correlation too
    exact_corr = cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1])
    draws = values[:, 1:] - values[:, :1]
    assert np.corrcoef(draws.T)[0, 1] == pytest.approx(exact_corr, abs=0.08)


def _synthetic_collection(num_topics: int, seed: int) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for t in range(num_topics):
        docs = [f"d{t}-{i}" for i in range(15)]
        qrels[f"q{t}"] = {d: int(rng.random() < 0.3) for d in docs}
        run[f"q{t}"] = {d: float(rng.normal()) for d in docs}
    return Qrels(qrels), Run(run, name="a")


@pytest.mark.filterwarnings("ignore::probrank.exceptions.ConvergenceWarning")  # short chains
def test_a_run_compared_with_itself_is_equivalent():
    qrels, run = _synthetic_collection(15, seed=4)
    copy = Run(run.as_dict(), name="a-copy")
    result = bayesian_compare(
        qrels, [run, copy], ["AP"], num_chains=2, warmup_steps=100, num_samples=150
    )
    for measure in result.measures:
        pair = result.pair(measure, "a-copy")
        assert pair.observed_difference == pytest.approx(0.0, abs=1e-15)
        assert abs(pair.mean_difference) < 2e-3
        assert pair.interval[0] < 0.0 < pair.interval[1]
        assert -0.01 < pair.interval[0] and pair.interval[1] < 0.01
        assert pair.p_better == pytest.approx(0.5, abs=0.1)
        assert pair.p_equivalent > 0.99


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore::probrank.exceptions.ConvergenceWarning")
def test_robust03_posterior_means_agree_with_observed_means(shared_data):
    folder = shared_data / "fusion" / "robust03"
    names = ["pircRBa1", "aplrob03a", "uwmtCR0"]
    runs = [Run.read(folder / "runs" / f"input.{name}.gz") for name in names]
    qrels = Qrels.read(folder / "qrels.txt")
    measures = ["AP", "P@10"]
    result = bayesian_compare(
        qrels, runs, measures, num_chains=2, warmup_steps=100, num_samples=150, seed=1
    )
    evaluator = Evaluator(qrels, measures)
    observed = {run.name: evaluator(run) for run in runs}  # trec_eval's `all` (mean) values
    for measure in measures:
        for run in runs[1:]:
            want = observed[run.name][measure] - observed[runs[0].name][measure]
            pair = result.pair(measure, run.name)
            assert pair.observed_difference == pytest.approx(want, abs=1e-12)
            assert abs(pair.mean_difference - want) < 0.005


@pytest.fixture(scope="module")
def three_systems():
    rng = np.random.default_rng(5)
    topics = rng.uniform(0.1, 0.7, size=40)
    effects = np.array([0.0, 0.15, 0.02])
    scores = np.clip(effects[:, None] + topics + 0.05 * rng.normal(size=(3, 40)), 0, 1)
    with warnings.catch_warnings():  # short chains: this fit is for bookkeeping checks
        warnings.simplefilter("ignore", ConvergenceWarning)
        return scores[None], bayesian_compare_scores(
            scores[None],
            systems=["a", "b", "c"],
            measures=["m"],
            num_chains=2,
            warmup_steps=150,
            num_samples=200,
            seed=2,
        )


def test_pairwise_probabilities_and_p_best_are_consistent(three_systems):
    _, result = three_systems
    table, best = result.p_better("m"), result.p_best("m")
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((table + table.T)[off], 1.0, atol=1e-12)
    assert best.sum() == pytest.approx(1.0, abs=1e-12)
    assert best[1] > 0.99 and table[1, 0] > 0.99 and table[1, 2] > 0.99
    pair = result.pair("m", "b")
    assert pair.p_better == pytest.approx(table[1, 0], abs=1e-12)
    assert result.pair("m", "c", baseline="b").p_better == pytest.approx(table[2, 1], abs=1e-12)


def test_json_shape_and_ranking(three_systems):
    _, result = three_systems
    out = result.to_json()
    assert list(out) == ["m"] and list(out["m"]) == ["b", "c"]
    for entry in out["m"].values():
        assert set(entry) == {"mean_difference", "interval", "p_better", "p_equivalent"}
        assert len(entry["interval"]) == 2 and entry["interval"][0] <= entry["interval"][1]
    ranking = result.ranking_json()["m"]
    assert set(ranking["p_best"]) == {"a", "b", "c"}
    assert set(ranking["p_better"]["a"]) == {"b", "c"}


def test_same_seed_same_draws():
    scores = np.random.default_rng(6).uniform(size=(1, 2, 8))
    options = {"systems": ["a", "b"], "measures": ["m"], "num_chains": 1}
    with pytest.warns(ConvergenceWarning):
        first = bayesian_compare_scores(scores, **options, warmup_steps=30, num_samples=30)
    with pytest.warns(ConvergenceWarning):
        again = bayesian_compare_scores(scores, **options, warmup_steps=30, num_samples=30)
    np.testing.assert_array_equal(first.draws, again.draws)


def test_short_chains_warn_and_say_so():
    scores = np.random.default_rng(7).uniform(size=(1, 2, 10))
    with pytest.warns(ConvergenceWarning, match="ESS below 400"):
        result = bayesian_compare_scores(
            scores, systems=["a", "b"], measures=["m"], num_chains=2, warmup_steps=20,
            num_samples=20,
        )  # fmt: skip
    assert not result.convergence.converged
    assert "NOT converged" in result.describe()


def test_convergence_check_flags_stuck_and_passes_independent_draws():
    rng = np.random.default_rng(9)
    good = check_draws({"x": rng.normal(size=(4, 500, 3))}, divergences=0)
    assert good.converged and good.max_rhat < 1.01 and good.min_ess > 1000
    stuck = check_draws({"x": np.ones((2, 50, 1))}, divergences=0)  # a chain that never moved
    assert not stuck.converged and any("R-hat" in m for m in stuck.messages)
    shifted = rng.normal(size=(4, 500, 1))
    shifted[0] += 1.0  # one chain elsewhere
    assert not check_draws({"x": shifted}, divergences=2).converged
    assert "2 divergent transitions" in check_draws({"x": shifted}, divergences=2).messages


def test_convergence_names_each_failed_criterion_and_is_strict_json():
    rng = np.random.default_rng(10)
    one_chain = check_draws({"x": rng.normal(size=(1, 2000, 2))}, divergences=0)
    assert not one_chain.converged
    assert one_chain.messages == ["R-hat undefined with one chain (needs >= 2)"]
    assert one_chain.as_json()["max_rhat"] is None  # not NaN
    walk = np.cumsum(rng.normal(size=(4, 300, 1)), axis=1)  # a random walk: low bulk ESS
    check = check_draws({"x": walk}, divergences=3)
    assert any(m.startswith("bulk ESS below 400") for m in check.messages)
    assert "3 divergent transitions" in check.messages
    assert json.loads(json.dumps(check.as_json(), allow_nan=False))["divergences"] == 3


TN = {"likelihood": "truncated-normal"}


def _scores_with(value: float) -> np.ndarray:
    scores = np.full((1, 2, 3), 0.5)
    scores[0, 1, 0] = value  # system "b", first topic
    return scores


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scores": _scores_with(1.5), **TN}, "m of b on topic #1 is 1.5, not in [0, 1]"),
        ({"scores": _scores_with(-0.1), **TN}, "m of b on topic #1 is -0.1, not in [0, 1]"),
        ({"scores": _scores_with(math.nan), **TN}, "m of b on topic #1 is nan, not in [0, 1]"),
        ({"scores": _scores_with(math.inf)}, "m of b on topic #1 is inf, not finite"),
        ({"systems": ["a", "a"]}, "distinct names"),
        ({"systems": ["a"], "scores": np.zeros((1, 1, 3))}, "at least one other run"),
        ({"scores": np.zeros((1, 2, 1))}, "at least 2 shared topics"),
        ({"rope": 0.0}, "rope must be a finite number > 0"),
        ({"rope": -1.0}, "rope must be a finite number > 0"),
        ({"interval": 1.0}, "interval must be in (0, 1)"),
        ({"likelihood": "beta"}, "likelihood must be one of"),
        ({"measures": ["m", "n"]}, "2 measures"),
    ],
)
def test_bad_input_is_an_input_data_error(change, message):
    arguments = {"scores": np.full((1, 2, 3), 0.5), "systems": ["a", "b"], "measures": ["m"]}
    with pytest.raises(InputDataError, match=re.escape(message)):
        bayesian_compare_scores(**{**arguments, **change})


def test_counts_and_priors_are_refused():
    qrels, run = _synthetic_collection(5, seed=8)
    other = Run(run.as_dict(), name="b")
    with pytest.raises(InputDataError, match="NumRet are counts"):
        bayesian_compare(qrels, [run, other], ["AP", "NumRet"])
    with pytest.raises(InputDataError, match="at least one other run"):
        bayesian_compare(qrels, [run], ["AP"])
    with pytest.raises(InputDataError, match="known_noise must be a finite number > 0"):
        ComparisonPriors(known_noise=0.0)
