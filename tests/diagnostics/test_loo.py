"""PSIS-LOO: agrees with exact leave-one-out and prefers the likelihood that made the data."""

from __future__ import annotations

import numpy as np
import pyro.distributions as dist
import pytest
import torch

from probrank._arviz import ARVIZ_1, build
from probrank._arviz import arviz as az
from probrank.diagnostics import compare_models, loo, loo_verdict, to_inference_data
from probrank.exceptions import InputDataError

N_TRIALS = 50


def _counts(overdispersed: bool, lists: int, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    if overdispersed:  # mean 0.3, concentration 5
        return dist.BetaBinomial(1.5, 3.5, total_count=N_TRIALS).sample((lists,)).double()
    return dist.Binomial(N_TRIALS, probs=torch.tensor(0.3)).sample((lists,)).double()


def _binomial_fit(counts: torch.Tensor, draws: int) -> object:
    """Exact posterior of a common p under a Beta(1, 1) prior, with pointwise log-likelihoods."""
    alpha, beta = 1 + counts.sum(), 1 + (N_TRIALS - counts).sum()
    p = dist.Beta(alpha, beta).sample((draws,)).double()
    loglik = dist.Binomial(N_TRIALS, probs=p.unsqueeze(-1)).log_prob(counts)
    return to_inference_data(
        {"p": p},
        chains=False,
        log_likelihood={"k": loglik},
        observed_data={"k": counts},
        dims={"k": ["query"]},
    )


def _beta_binomial_fit(counts: torch.Tensor, draws: int) -> object:
    """Grid posterior of (p, log c) under flat priors, with pointwise log-likelihoods."""
    p_grid = (torch.arange(200, dtype=torch.float64) + 0.5) / 200
    c_grid = torch.linspace(np.log(0.5), np.log(500.0), 120, dtype=torch.float64).exp()
    p, c = torch.meshgrid(p_grid, c_grid, indexing="ij")
    terms = dist.BetaBinomial(
        (c * p).unsqueeze(-1), (c * (1 - p)).unsqueeze(-1), total_count=N_TRIALS
    ).log_prob(counts)
    log_post = terms.sum(-1).reshape(-1)
    index = torch.multinomial(torch.softmax(log_post, 0), draws, replacement=True)
    p_draw, c_draw = p.reshape(-1)[index], c.reshape(-1)[index]
    loglik = dist.BetaBinomial(
        (c_draw * p_draw).unsqueeze(-1), (c_draw * (1 - p_draw)).unsqueeze(-1), N_TRIALS
    ).log_prob(counts)
    return to_inference_data(
        {"p": p_draw, "concentration": c_draw},
        chains=False,
        log_likelihood={"k": loglik},
        observed_data={"k": counts},
    )


def test_psis_loo_matches_exact_leave_one_out_of_a_conjugate_model() -> None:
    counts = _counts(False, 40, seed=0)
    result = loo(_binomial_fit(counts, 4000))
    # exact: p(y_i | y_-i) is beta-binomial with the posterior of the other lists
    alpha = 1 + counts.sum() - counts
    beta = 1 + (N_TRIALS - counts).sum() - (N_TRIALS - counts)
    exact = dist.BetaBinomial(alpha, beta, total_count=N_TRIALS).log_prob(counts).sum()
    np.testing.assert_allclose(result.elpd_loo, float(exact), rtol=0, atol=0.1)
    assert result.num_observations == 40 and result.bad_k == 0
    assert 0.5 < result.p_loo < 1.6  # one parameter
    assert result.se > 0


def test_loo_prefers_beta_binomial_on_overdispersed_counts() -> None:
    counts = _counts(True, 40, seed=1)
    models = {
        "binomial": _binomial_fit(counts, 2000),
        "beta-binomial": _beta_binomial_fit(counts, 2000),
    }
    table = compare_models(models)
    # Regression: the columns were renamed (elpd); now ArviZ's own table comes first, column
    # for column and value for value, then probrank's checks
    reference = az.compare(models)
    elpd, p = ("elpd", "p") if ARVIZ_1 else ("elpd_loo", "p_loo")  # the line's own names
    assert elpd in table.columns and p in table.columns
    assert list(table.columns) == [
        *reference.columns, "bad_k", "num_observations", "max_r_hat", "min_ess_bulk",
        "min_ess_tail", "divergences",
    ]  # fmt: skip
    numeric = ["rank", elpd, p, "elpd_diff", "se", "dse"]
    np.testing.assert_allclose(
        table[numeric].to_numpy(float), reference[numeric].to_numpy(float), rtol=1e-9
    )
    assert table.index[0] == "beta-binomial"
    assert table.attrs["reliable"] and (table["bad_k"] == 0).all()
    assert (table["num_observations"] == 40).all()
    difference = abs(table.loc["binomial", "elpd_diff"])  # 1.x: negative for worse models
    assert difference > 2 * table.loc["binomial", "dse"] and difference > 50
    np.testing.assert_allclose(table["weight"].sum(), 1.0, atol=1e-6)


def test_high_pareto_k_is_reported_not_hidden() -> None:
    # Regression (tutorial 1 reported LOO as if trustworthy while every Pareto-k warning
    # fired): log-likelihoods -2 z^2, z ~ N(0, 1), give importance ratios exp(2 z^2) with tail
    # P(ratio > t) ~ t^(-1/4), i.e. Pareto k = 4 for every observation (> 0.7).
    counts = _counts(False, 30, seed=2)
    z = torch.randn(300, 30, dtype=torch.float64)
    bad = to_inference_data(
        {"p": torch.rand(300, dtype=torch.float64)},
        chains=False,
        log_likelihood={"k": -2.0 * z**2},
        observed_data={"k": counts},
    )
    result = loo(bad)
    assert result.bad_k == 30 and not result.reliable
    assert result.problems[0] == "Pareto k > 0.7 for 100% of observations"
    assert loo(_binomial_fit(counts, 2000)).reliable
    table = compare_models({"good": _binomial_fit(counts, 2000), "bad": bad})
    assert table.loc["bad", "bad_k"] == 30 and table.loc["good", "bad_k"] == 0
    assert table.attrs["reliable"] is False
    if not ARVIZ_1:  # 0.x's compare flags it too (1.x's table has no warning column)
        assert bool(table.loc["bad", "warning"])
    verdict = loo_verdict(table)
    assert verdict.startswith(
        "PSIS-LOO is NOT reliable for bad (Pareto k > 0.7 for 100% of observations"
    )
    assert "not evidence" in verdict
    both_bad = compare_models({"bad": bad, "also bad": bad})
    assert loo_verdict(both_bad).startswith("PSIS-LOO is NOT reliable for any model")
    good = compare_models({"a": _binomial_fit(counts, 2000), "b": _binomial_fit(counts, 2000)})
    assert good.attrs["reliable"] and loo_verdict(good).startswith("PSIS-LOO is reliable")


def test_verdict_checks_convergence_not_only_pareto_k() -> None:
    # Regression: loo_verdict printed "PSIS-LOO is reliable" for a fit with R-hat 1.94 because
    # it read only Pareto k. Same exact log-likelihoods (every k small), but the posterior
    # draws come from two chains stuck in different places, or diverged.
    counts = _counts(False, 30, seed=3)
    alpha, beta = 1 + counts.sum(), 1 + (N_TRIALS - counts).sum()
    p = dist.Beta(alpha, beta).sample((2, 1000)).double()
    loglik = dist.Binomial(N_TRIALS, probs=p.unsqueeze(-1)).log_prob(counts)
    stuck = p.clone()
    stuck[1] += 0.2  # chain 1 elsewhere: R-hat far above 1.01
    diverging = torch.zeros(2, 1000, dtype=torch.bool)
    diverging[0, :3] = True

    def fit(draws: torch.Tensor, divergent: torch.Tensor) -> object:
        return to_inference_data(
            {"p": draws}, log_likelihood={"k": loglik}, observed_data={"k": counts},
            sample_stats={"diverging": divergent},
        )  # fmt: skip

    good = fit(p, torch.zeros(2, 1000, dtype=torch.bool))
    assert loo(good).reliable and loo(good).bad_k == 0
    unmixed = loo(fit(stuck, torch.zeros(2, 1000, dtype=torch.bool)))
    assert unmixed.bad_k == 0 and unmixed.max_r_hat is not None and unmixed.max_r_hat > 1.5
    assert not unmixed.reliable and unmixed.problems[0].startswith("R-hat ")
    table = compare_models({"good": good, "unmixed": fit(stuck, diverging)})
    assert table.loc["unmixed", "divergences"] == 3 and table.loc["good", "divergences"] == 0
    assert table.attrs["reliable"] is False
    verdict = loo_verdict(table)
    assert verdict.startswith("PSIS-LOO is NOT reliable for unmixed (R-hat ")
    assert "3 divergent transitions" in verdict and "good" not in verdict
    assert "reliable" not in loo_verdict(table).replace("NOT reliable", "")
    both_good = compare_models({"a": good, "b": good})
    assert loo_verdict(both_good).startswith("PSIS-LOO is reliable: every Pareto k <= 0.7, R-hat")


def test_loo_needs_log_likelihoods() -> None:
    data = to_inference_data({"p": torch.rand(100)}, chains=False)
    with pytest.raises(InputDataError, match="log_likelihood"):
        loo(data)
    with pytest.raises(InputDataError):
        compare_models({"only": data})
    both = to_inference_data(
        {"p": torch.rand(100)},
        chains=False,
        log_likelihood={"a": -torch.rand(100, 3), "b": -torch.rand(100, 3)},
    )
    with pytest.raises(InputDataError, match="var_name"):
        loo(both)
    assert loo(both, var_name="a").num_observations == 3


def test_independent_draws_need_no_posterior_group() -> None:
    """``reff=1.0`` (independent draws, e.g. a guide's) gives what ArviZ computes from a
    one-chain posterior group, without one (and without its convergence summary)."""
    rng = np.random.default_rng(0)
    log_lik = rng.normal(-3.0, 0.3, size=(1, 400, 25))
    with_posterior = loo(
        build({"posterior": {"mu": rng.normal(size=(1, 400))}, "log_likelihood": {"y": log_lik}})
    )
    without = loo(build({"log_likelihood": {"y": log_lik}}), reff=1.0)
    assert without.elpd_loo == pytest.approx(with_posterior.elpd_loo, rel=1e-12)
    assert without.se == pytest.approx(with_posterior.se, rel=1e-12)
    np.testing.assert_allclose(without.pareto_k, with_posterior.pareto_k)
    assert without.max_r_hat is None and without.min_ess_bulk is None


def test_models_of_different_observations_are_not_compared() -> None:
    # Regression (issue 31): compare_models ranked models fitted to different observations
    counts = _counts(False, 40, seed=4)
    other = _counts(False, 40, seed=5)
    with pytest.raises(InputDataError, match="same observations"):
        compare_models({"a": _binomial_fit(counts, 500), "b": _binomial_fit(other, 500)})
    fewer = _counts(False, 30, seed=4)
    with pytest.raises(InputDataError, match="same observations"):
        compare_models({"a": _binomial_fit(counts, 500), "b": _binomial_fit(fewer, 500)})


def test_a_point_posterior_has_its_exact_loo_on_both_lines() -> None:
    # every draw the same: elpd_i is the log-likelihood and p_loo is 0 (ArviZ 1.x refuses
    # such data: probrank computes the exact value); k is inf on both lines (as 0.x has it)
    values = np.tile(np.array([-1.0, -2.0, -0.5]), (1, 100, 1))
    noisy = values.copy()
    noisy[:, :, 0] += np.random.default_rng(0).normal(scale=0.1, size=(1, 100))
    exact = loo(build({"log_likelihood": {"y": values}}), reff=1.0)
    assert exact.elpd_loo == pytest.approx(-3.5, abs=1e-12) and exact.p_loo == 0.0
    assert np.isinf(exact.pareto_k).all() and not exact.reliable
    mixed = loo(build({"log_likelihood": {"y": noisy}}), reff=1.0)
    alone = loo(build({"log_likelihood": {"y": noisy[:, :, :1]}}), reff=1.0)
    assert mixed.elpd_loo == pytest.approx(alone.elpd_loo - 2.5, rel=1e-12)
    assert mixed.p_loo == pytest.approx(alone.p_loo, rel=1e-9)
    assert (
        mixed.pareto_k[0] == pytest.approx(alone.pareto_k[0]) and np.isinf(mixed.pareto_k[1:]).all()
    )


def test_loo_is_the_installed_arviz_loo() -> None:
    # the installed line's own numbers, under its own field names (0.x elpd_loo/p_loo, 1.x
    # elpd/p), in probrank's LooResult
    fit = _binomial_fit(_counts(False, 30, seed=6), 1000)
    ours = loo(fit)
    theirs = az.loo(fit, pointwise=True)
    elpd, p = (theirs.elpd, theirs.p) if ARVIZ_1 else (theirs["elpd_loo"], theirs["p_loo"])
    assert ours.elpd_loo == pytest.approx(float(elpd), rel=1e-12)
    assert ours.p_loo == pytest.approx(float(p), rel=1e-12)
    assert ours.se == pytest.approx(float(theirs.se), rel=1e-12)
    np.testing.assert_allclose(ours.pareto_k, np.asarray(theirs.pareto_k).ravel(), rtol=1e-12)
