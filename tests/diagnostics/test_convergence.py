"""R-hat, ESS and divergence checks flag bad chains and pass good ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from probrank.diagnostics import check_convergence, to_inference_data
from probrank.exceptions import ConvergenceWarning, InputDataError
from probrank.inference.mcmc import NutsSamples


def _iid(chains: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    return torch.randn(chains, draws, 3, generator=generator, dtype=torch.float64)


def test_well_mixed_chains_pass_without_warning() -> None:
    generator = torch.Generator().manual_seed(0)
    data = to_inference_data({"w": _iid(4, 500, generator), "b": _iid(4, 500, generator)[..., 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        report = check_convergence(data)
    assert report.converged and not report.high_rhat and not report.low_ess
    assert (report.table["r_hat"] < 1.01).all()
    # 2000 independent draws: bulk ESS close to 2000
    assert (report.table["ess_bulk"] > 1500).all()


def test_unmixed_chains_warn_and_name_the_variables() -> None:
    generator = torch.Generator().manual_seed(1)
    w = _iid(4, 500, generator)
    w[:, :, 1] += torch.tensor([0.0, 0.0, 3.0, 3.0], dtype=torch.float64).view(4, 1)
    data = to_inference_data({"w": w})
    with pytest.warns(ConvergenceWarning, match=r"R-hat above 1.01.*w\[1\]") as record:
        report = check_convergence(data)
    assert "w[0]" not in str(record[0].message) and "w[2]" not in str(record[0].message)
    assert report.high_rhat == ["w[1]"] and not report.converged
    assert float(report.table.loc["w[1]", "r_hat"]) > 1.5


def test_sticky_chains_have_low_ess() -> None:
    # AR(1) chains with rho = 0.99: ESS about n (1 - rho) / (1 + rho) = 4 x 500 / 199 = 10
    generator = torch.Generator().manual_seed(2)
    noise = torch.randn(4, 500, generator=generator, dtype=torch.float64)
    chain = torch.zeros_like(noise)
    for t in range(1, 500):
        chain[:, t] = 0.99 * chain[:, t - 1] + noise[:, t] * (1 - 0.99**2) ** 0.5
    with pytest.warns(ConvergenceWarning, match="ESS below 400.*mu"):
        report = check_convergence(to_inference_data({"mu": chain}), rhat_max=10.0)
    assert report.low_ess == ["mu"]
    assert float(report.table.loc["mu", "ess_bulk"]) < 100


def test_divergences_are_counted() -> None:
    generator = torch.Generator().manual_seed(3)
    diverging = torch.zeros(4, 500, dtype=torch.bool)
    diverging[0, :3] = True
    samples = NutsSamples({"mu": _iid(4, 500, generator)[..., 0]}, diverging, torch.ones(4))
    with pytest.warns(ConvergenceWarning, match="3 divergent transitions"):
        report = check_convergence(to_inference_data(samples))
    assert report.divergences == 3 and not report.high_rhat
    quiet = check_convergence(to_inference_data(samples), max_divergences=5, warn=False)
    assert quiet.converged


def test_single_chain_checks_ess_only_and_bad_thresholds_are_refused() -> None:
    generator = torch.Generator().manual_seed(4)
    data = to_inference_data({"w": _iid(1, 1000, generator)[0]}, chains=False)
    report = check_convergence(data, warn=False)
    assert report.converged
    assert report.table["r_hat"].isna().all()
    np.testing.assert_array_less(800, report.table["ess_bulk"].to_numpy())
    with pytest.raises(InputDataError):
        check_convergence(data, rhat_max=0.5)
