"""Simulation-based calibration: the machinery against closed forms, and exact inference paths
(NUTS on a conjugate model, the RFF GP head's Laplace posterior on a linear-Gaussian model)."""

from __future__ import annotations

import math

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine
from scipy import stats

from probrank.diagnostics.sbc import (
    Dispersion,
    coverage,
    dispersion,
    quantile_position,
    rank_statistic,
    run_sbc,
    sbc_from_draws,
    thin,
    uniformity_test,
)
from probrank.evaluation.bayesian import fit_comparison
from probrank.exceptions import InputDataError
from probrank.inference import fit_nuts
from probrank.nn.rff_gp import RFFGaussianProcess

PRIOR_N = 5  # observations of the conjugate normal-mean model: posterior N(sum y / 6, 1 / 6)


def _conjugate(width: float = 1.0, shift: float = 0.0, draws: int = 99):
    """``mu ~ N(0, 1)``, ``y_i ~ N(mu, 1)``; posterior draws with the exact mean and variance,
    then scaled about the mean by ``width`` and moved by ``shift`` posterior sds."""

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        mu = torch.randn(1, generator=generator, dtype=torch.float64)
        return mu, mu + torch.randn(PRIOR_N, generator=generator, dtype=torch.float64)

    def fit(y: torch.Tensor, seed: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        sd = (PRIOR_N + 1) ** -0.5
        eps = torch.randn(draws, 1, generator=generator, dtype=torch.float64)
        return y.sum() / (PRIOR_N + 1) + sd * (shift + width * eps)

    return simulate, fit


def test_exact_conjugate_draws_give_uniform_ranks_and_nominal_coverage():
    simulate, fit = _conjugate()
    result = run_sbc(simulate, fit, num_simulations=600, num_ranks=19, seed=1)
    (param,) = result.parameters()
    assert param.p_value > 0.01
    assert param.dispersion is Dispersion.CALIBRATED
    assert param.coverage_90 == pytest.approx(0.9, abs=0.04)
    assert param.coverage_50 == pytest.approx(0.5, abs=0.06)
    assert result.summary()["p_value"] > 0.01


@pytest.mark.parametrize(("width", "expected"), [(0.5, Dispersion.UNDER), (2.0, Dispersion.OVER)])
def test_mis_scaled_posterior_is_detected_in_the_right_direction(width, expected):
    simulate, fit = _conjugate(width=width)
    result = run_sbc(simulate, fit, num_simulations=600, num_ranks=19, seed=2)
    (param,) = result.parameters()
    assert param.dispersion is expected
    assert param.p_value < 1e-4
    # the truth's distance to the posterior mean is N(0, sd^2); the claimed interval is
    # width times too wide, so the central 90% interval covers 2 Phi(1.645 width) - 1
    for level, observed in ((0.5, param.coverage_50), (0.9, param.coverage_90)):
        z = stats.norm.ppf(0.5 + level / 2)
        assert observed == pytest.approx(2 * stats.norm.cdf(z * width) - 1, abs=0.05)


def test_shifted_posterior_is_biased_high():
    simulate, fit = _conjugate(shift=1.0)
    result = run_sbc(simulate, fit, num_simulations=400, num_ranks=19, seed=3)
    (param,) = result.parameters()
    assert param.dispersion is Dispersion.BIASED_HIGH  # draws above the truth: low ranks
    assert param.z_mean < -3


def test_rank_statistic_counts_draws_below_and_breaks_ties_at_random():
    draws = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    ranks = np.array(
        [rank_statistic([1.5, 1.0], draws, np.random.default_rng(s)) for s in range(400)]
    )
    assert (ranks[:, 0] == 2).all()
    # four ties: uniform on 0 .. 4
    counts = np.bincount(ranks[:, 1], minlength=5)
    assert stats.chisquare(counts).pvalue > 0.01
    assert quantile_position([1.5, 1.0], draws) == pytest.approx([0.5, 0.5])


def test_thin_keeps_evenly_spaced_draws_per_chain():
    draws = np.arange(2 * 10 * 1, dtype=float).reshape(2, 10, 1)
    kept = thin(draws, 4)
    assert kept[:, 0].tolist() == [0.0, 9.0, 10.0, 19.0]
    with pytest.raises(InputDataError, match="cannot keep"):
        thin(draws, 30)


def test_uniformity_test_matches_scipy_chisquare_over_bins():
    ranks = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9])
    statistic, p_value, bins = uniformity_test(ranks, 9, bins=5)
    expected = stats.chisquare([2, 2, 2, 2, 4])
    assert bins == 5
    assert statistic == pytest.approx(expected.statistic)
    assert p_value == pytest.approx(expected.pvalue)
    with pytest.raises(InputDataError, match="divide"):
        uniformity_test(ranks, 9, bins=3)
    with pytest.raises(InputDataError, match="ranks must lie"):
        uniformity_test([10], 9)


def test_coverage_and_dispersion_closed_forms():
    positions = np.linspace(0.0, 1.0, 1001)
    assert coverage(positions, 0.9) == pytest.approx(0.9, abs=2e-3)
    with pytest.raises(InputDataError, match="level"):
        coverage(positions, 1.5)
    uniform = np.tile(np.arange(20), 50)
    direction, z_mean, z_var = dispersion(uniform, 19)
    assert direction is Dispersion.CALIBRATED
    assert abs(z_mean) < 1e-9 and abs(z_var) < 1
    ends = np.tile([0, 19], 200)
    assert dispersion(ends, 19)[0] is Dispersion.UNDER
    middle = np.tile([9, 10], 200)
    assert dispersion(middle, 19)[0] is Dispersion.OVER


def test_nuts_on_a_conjugate_model_passes_sbc():
    """NUTS (fit_nuts) on 40 conjugate normal-mean simulations fitted together (a plate over
    simulations: the posterior factorises, each marginal is exact)."""
    sims = 40

    def model(y: torch.Tensor | None = None) -> None:
        with pyro.plate("sims", sims, dim=-2):
            mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
            with pyro.plate("obs", PRIOR_N, dim=-1):
                pyro.sample("y", dist.Normal(mu.expand(sims, PRIOR_N), 1.0), obs=y)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        trace = poutine.trace(model).get_trace()
    truth = trace.nodes["mu"]["value"].reshape(sims, 1)
    y = trace.nodes["y"]["value"]
    samples = fit_nuts(
        model, y, num_samples=100, warmup_steps=100, num_chains=1, seed=4, full_mass=False
    )
    draws = samples["mu"].reshape(1, 100, sims, 1)
    result = sbc_from_draws(truth, draws, num_ranks=9, names=["mu"])
    (param,) = result.parameters()
    assert param.p_value > 0.01
    assert param.dispersion is Dispersion.CALIBRATED
    # against the closed form: the NUTS posterior means match sum(y) / 6
    exact = y.sum(-1) / (PRIOR_N + 1)
    assert samples["mu"].mean((0, 1)).reshape(sims) == pytest.approx(exact, abs=0.15)


def test_rff_gp_laplace_on_a_linear_gaussian_model_passes_sbc():
    """The RFF GP head's Laplace posterior is exact for a Gaussian likelihood."""
    n, features, noise = 15, 6, 0.25

    def simulate(generator: torch.Generator):
        gp = RFFGaussianProcess(2, features, likelihood="gaussian", noise=noise, seed=3).double()
        h = torch.randn(n + 2, 2, generator=generator, dtype=torch.float64)
        beta = torch.randn(features, generator=generator, dtype=torch.float64)
        f = gp.phi(h) @ beta
        y = f[:n] + math.sqrt(noise) * torch.randn(n, generator=generator, dtype=torch.float64)
        return f[n:], (gp, h, y)

    def fit(data, seed: int) -> torch.Tensor:
        gp, h, y = data
        output = gp.output
        output.reset_precision()
        output.accumulate_precision(gp.phi(h[:n]))
        # the MAP of a Gaussian likelihood: one Newton step from 0 with the exact precision
        with torch.no_grad():
            output.beta.copy_(output.covariance @ (gp.phi(h[:n]).T @ y) / noise)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return gp.posterior(h[n:]).sample(torch.Size([99]))

    result = run_sbc(simulate, fit, num_simulations=200, num_ranks=19, seed=5)
    for param in result.parameters():
        assert param.p_value > 0.01
        assert param.dispersion is Dispersion.CALIBRATED
        assert param.coverage_90 == pytest.approx(0.9, abs=0.06)


def test_paired_bayesian_comparison_passes_sbc():
    """The comparison model's default (``fit_comparison``, ``likelihood="paired"``): ranks of
    both systems' expected measures and their difference on normal per-topic values."""
    topics = 30

    def simulate(generator: torch.Generator):
        mu = 0.2 + 0.4 * torch.rand(2, generator=generator, dtype=torch.float64)
        sd = 0.1 + 0.2 * torch.rand(2, generator=generator, dtype=torch.float64)
        rho = 0.9 * float(torch.rand((), generator=generator))
        cov = torch.tensor([[1.0, rho], [rho, 1.0]], dtype=torch.float64) * sd.outer(sd)
        noise = torch.randn(topics, 2, generator=generator, dtype=torch.float64)
        values = mu + noise @ torch.linalg.cholesky(cov).T
        return torch.cat([mu, mu[1:] - mu[:1]]), values.numpy()

    def fit(values: np.ndarray, seed: int) -> torch.Tensor:
        draws = fit_comparison(values, likelihood="paired", seed=seed, num_draws=200)
        return torch.as_tensor(np.concatenate([draws, draws[:, 1:] - draws[:, :1]], 1))

    result = run_sbc(simulate, fit, num_simulations=150, num_ranks=9, seed=6)
    for param in result.parameters():
        assert param.p_value > 0.01
        assert param.dispersion is Dispersion.CALIBRATED


def test_bad_inputs_raise_input_data_error():
    with pytest.raises(InputDataError, match="parameters"):
        rank_statistic([0.0, 1.0], np.zeros((5, 3)))
    with pytest.raises(InputDataError, match="finite"):
        rank_statistic([0.0], np.array([[np.nan]]))
    with pytest.raises(InputDataError, match="truth N x P"):
        sbc_from_draws(np.zeros((3, 2)), np.zeros((10, 3, 1)), num_ranks=4)
    simulate, fit = _conjugate()
    with pytest.raises(InputDataError, match="num_simulations"):
        run_sbc(simulate, fit, num_simulations=0, num_ranks=9)


def test_pit_of_calibrated_ranks_is_uniform_and_of_narrow_ones_is_not():
    calibrated = run_sbc(*_conjugate(), num_simulations=600, num_ranks=19, seed=4)
    narrow = run_sbc(*_conjugate(width=0.5), num_simulations=600, num_ranks=19, seed=4)
    pit = calibrated.pit(seed=0)
    assert pit.shape == (600, 1) and (pit > 0).all() and (pit < 1).all()
    # the rank is the PIT's cell: floor(pit * (L + 1)) gives it back
    np.testing.assert_array_equal(np.floor(pit * 20).astype(int), calibrated.ranks)
    assert stats.kstest(pit[:, 0], "uniform").pvalue > 0.01
    assert stats.kstest(narrow.pit(seed=0)[:, 0], "uniform").pvalue < 1e-4
    np.testing.assert_array_equal(calibrated.pit(seed=3), calibrated.pit(seed=3))


def test_plot_sbc_draws_arviz_pit_ecdf_panels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import image

    from probrank._arviz import pit_ecdf_figure
    from probrank.diagnostics import plot_sbc

    result = run_sbc(*_conjugate(), num_simulations=100, num_ranks=9, seed=5)
    result.names = ["mu"]
    path = plot_sbc(result, tmp_path / "sbc.png", title="conjugate normal")
    assert path.exists() and image.imread(path).shape[0] > 100
    pit = result.pit()
    figure = pit_ecdf_figure({"a": pit[:, 0], "b": pit[:, 0]})
    assert len([ax for ax in figure.axes if ax.has_data()]) == 2  # one panel a parameter
    with pytest.raises(InputDataError):
        pit_ecdf_figure({})
