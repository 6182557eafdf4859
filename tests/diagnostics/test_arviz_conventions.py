"""ArviZ's conventions: summary tables equal ``az.summary``, HDIs equal ``az.hdi``, NUTS draws
convert with ``chains=True``, and predictions of unobserved sites are kept."""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pyro
import pyro.distributions as dist
import pytest
import torch

from probrank.diagnostics import from_pyro, hdi, summarize, summary, to_inference_data
from probrank.diagnostics._data import get_group, has_group
from probrank.exceptions import InputDataError
from probrank.inference.mcmc import NutsSamples


def _draws(chains: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(chains)
    return {
        "w": torch.randn(chains, 300, 2, 3, generator=generator, dtype=torch.float64),
        "scale": torch.distributions.Gamma(2.0, 1.0).sample((chains, 300)).double(),
    }


@pytest.mark.parametrize("chains", [1, 2, 4])
@pytest.mark.parametrize("options", [{}, {"hdi_prob": 0.8}, {"round_to": "none"}])
def test_summary_is_arviz_summary(chains: int, options: dict[str, object]) -> None:
    # Regression: summary had a 0.90 HDI named hdi_low/hdi_high by its own rule (up to 0.24
    # from az.hdi at 300 draws) and no mcse columns
    data = to_inference_data(_draws(chains))
    table = summary(data, **options)  # type: ignore[arg-type]
    reference = az.summary(data, **options)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
    assert table.attrs["chains"] == chains and table.attrs["draws"] == 300
    default_mass = az.rcParams["stats.ci_prob"]
    if not options:
        low = f"hdi_{100 * (1 - default_mass) / 2:g}%"
        assert list(table.columns)[:4] == ["mean", "sd", low, f"hdi_{100 - float(low[4:-1]):g}%"]
        assert list(table.columns)[4:] == [
            "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat",
        ]  # fmt: skip


def test_summarize_nuts_samples_equals_arviz_and_keeps_divergences() -> None:
    diverging = torch.zeros(2, 300, dtype=torch.bool)
    diverging[0, 5] = True
    samples = NutsSamples(_draws(2), diverging, torch.ones(2))
    table = summarize(samples)
    pd.testing.assert_frame_equal(table, az.summary(to_inference_data(samples)))
    assert table.attrs["divergences"] == 1


def test_hdi_is_arviz_hdi() -> None:
    draws = np.random.default_rng(0).gamma(2.0, 1.0, size=300)
    for prob in (None, 0.5, 0.9):
        np.testing.assert_array_equal(hdi(draws, prob), az.hdi(draws, hdi_prob=prob))
    with pytest.raises(InputDataError):
        hdi(draws, 1.5)


def test_nuts_samples_accept_chains_true_as_documented() -> None:
    # Regression: TypeError "from_draws() got multiple values for keyword argument 'chains'"
    samples = NutsSamples(_draws(2), torch.zeros(2, 300, dtype=torch.bool), torch.ones(2))
    data = to_inference_data(samples, chains=True)
    assert dict(get_group(data, "posterior").sizes)["chain"] == 2
    with pytest.raises(InputDataError, match="chain dimension"):
        to_inference_data(samples, chains=False)


def _regression(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    w = pyro.sample("w", dist.Normal(torch.zeros(2, dtype=x.dtype), 1.0).to_event(1))
    with pyro.plate("data", x.shape[0]):
        return pyro.sample("y", dist.Normal(x @ w, 0.1), obs=y)


def test_from_pyro_keeps_the_predicted_site_of_new_inputs() -> None:
    # Regression: from_pyro(model, X_new, None, posterior_samples=s) silently dropped "y"
    x_new = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    w = torch.randn(2, 50, 2, dtype=torch.float64)
    samples = NutsSamples({"w": w}, torch.zeros(2, 50, dtype=torch.bool), torch.ones(2))
    data = from_pyro(_regression, x_new, None, posterior_samples=samples, seed=0)
    predicted = get_group(data, "posterior_predictive")["y"].values
    assert predicted.shape == (2, 50, 3)
    # each predicted draw is N(x w_s, 0.1): the residual's sd is 0.1 (300 draws: +-5%)
    residual = predicted - torch.einsum("nd,csd->csn", x_new, w).numpy()
    np.testing.assert_allclose(residual.std(), 0.1, rtol=0.15)
    assert not has_group(data, "log_likelihood") and not has_group(data, "observed_data")
    # S x ... draws (one chain) are accepted as well; a wrong shape names the site
    flat = from_pyro(_regression, x_new, None, posterior_samples={"w": w.reshape(100, 2)})
    assert get_group(flat, "posterior_predictive")["y"].shape == (1, 100, 3)
    with pytest.raises(InputDataError, match="'w'"):
        from_pyro(_regression, x_new, None, posterior_samples={"w": w.reshape(100, 2, 1)})
