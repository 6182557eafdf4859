"""ArviZ's conventions, on the installed line (0.x on Python 3.11, 1.x on 3.12+): summary tables
equal ``az.summary``, HDIs equal ``az.hdi``, containers are the line's own, NUTS draws convert
with ``chains=True``, and predictions of unobserved sites are kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyro
import pyro.distributions as dist
import pytest
import torch

from probrank._arviz import ARVIZ_1, container_type, get_group, has_group
from probrank._arviz import arviz as az
from probrank.diagnostics import eti, from_pyro, hdi, summarize, summary, to_inference_data
from probrank.exceptions import InputDataError
from probrank.inference.mcmc import NutsSamples
from tests.diagnostics.arviz_columns import summary_columns


def _draws(chains: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(chains)
    return {
        "w": torch.randn(chains, 300, 2, 3, generator=generator, dtype=torch.float64),
        "scale": torch.distributions.Gamma(2.0, 1.0).sample((chains, 300)).double(),
    }


def _arviz_options(options: dict[str, object]) -> dict[str, object]:
    """The installed ``az.summary``'s keywords for probrank's ``options``."""
    if "hdi_prob" in options and ARVIZ_1:  # 1.x: an HDI of that mass
        return {"ci_prob": options["hdi_prob"], "ci_kind": "hdi"}
    if "ci_prob" in options and not ARVIZ_1:  # 0.x: its only interval, an HDI
        return {"hdi_prob": options["ci_prob"]}
    return dict(options)


@pytest.mark.parametrize("chains", [1, 2, 4])
@pytest.mark.parametrize(
    "options", [{}, {"hdi_prob": 0.8}, {"ci_prob": 0.8}, {"round_to": "none"}, {"round_to": 3}]
)
def test_summary_is_arviz_summary(chains: int, options: dict[str, object]) -> None:
    # Regression: summary had a 0.90 HDI named hdi_low/hdi_high by its own rule (up to 0.24
    # from az.hdi at 300 draws) and no mcse columns; on ArviZ 1.x it called 0.x's keywords
    data = to_inference_data(_draws(chains))
    assert isinstance(data, container_type())
    table = summary(data, **options)  # type: ignore[arg-type]
    reference = az.summary(data, **_arviz_options(options))  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
    assert table.attrs["chains"] == chains and table.attrs["draws"] == 300
    if not options:  # the line's default interval: 0.94 HDI (0.x), 0.89 ETI (1.x)
        assert list(table.columns) == summary_columns()
        assert list(table.columns)[2:4] == (
            ["eti89_lb", "eti89_ub"] if ARVIZ_1 else ["hdi_3%", "hdi_97%"]
        )


def test_eti_is_the_equal_tailed_quantiles() -> None:
    draws = np.random.default_rng(1).gamma(2.0, 1.0, size=400)
    low, high = eti(draws, 0.9)
    np.testing.assert_allclose([low, high], np.quantile(draws, [0.05, 0.95]), rtol=1e-12)
    if ARVIZ_1:
        np.testing.assert_array_equal([low, high], az.eti(draws, prob=0.9))
    with pytest.raises(InputDataError):
        summary(to_inference_data(_draws(2)), hdi_prob=0.8, ci_prob=0.9)


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
        keyword = "prob" if ARVIZ_1 else "hdi_prob"
        np.testing.assert_array_equal(hdi(draws, prob), az.hdi(draws, **{keyword: prob}))
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


def test_plate_indices_are_not_predictive_variables() -> None:
    # Regression (issue 31): the plate's index (int64 "items") sat in posterior_predictive, so
    # az.summary(group="posterior_predictive") listed NaN R-hat rows with a RuntimeWarning
    def model(y: torch.Tensor | None = None, n: int = 4) -> None:
        mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
        with pyro.plate("items", n):
            pyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    draws = {"mu": torch.randn(2, 100, generator=torch.Generator().manual_seed(0))}
    data = from_pyro(model, torch.zeros(4), posterior_samples=draws, seed=0)
    assert list(get_group(data, "posterior_predictive").data_vars) == ["y"]
    assert list(get_group(data, "log_likelihood").data_vars) == ["y"]
    table = summary(data, group="posterior_predictive", round_to="none")
    assert len(table) == 4 and table["r_hat"].notna().all()
