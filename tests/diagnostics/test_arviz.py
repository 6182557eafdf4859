"""Posterior draws to ArviZ: shapes, names, summaries."""

from __future__ import annotations

import pytest
import torch

from probrank.diagnostics.arviz import output_layer_dims, summary, to_inference_data
from probrank.exceptions import InputDataError


def test_mcmc_draws_with_named_dims_and_rhat() -> None:
    dims, coords = output_layer_dims("output", 4, 1)
    draws = {"output.weight": torch.randn(2, 100, 1, 4), "output.bias": torch.randn(2, 100, 1)}
    data = to_inference_data(draws, dims=dims, coords=coords)
    posterior = data.posterior
    assert dict(posterior.sizes) == {"chain": 2, "draw": 100, "output": 1, "hidden": 4}
    assert posterior["output.weight"].dims == ("chain", "draw", "output", "hidden")
    table = summary(data)
    assert list(table.columns) == [
        "mean",
        "sd",
        "hdi_low",
        "hdi_high",
        "ess_bulk",
        "ess_tail",
        "r_hat",
    ]
    assert len(table) == 5
    assert ((table["r_hat"] > 0.9) & (table["r_hat"] < 1.1)).all()


def test_guide_draws_have_one_chain_and_no_rhat() -> None:
    data = to_inference_data({"w": torch.randn(50, 3)}, chains=False)
    assert dict(data.posterior.sizes)["chain"] == 1
    table = summary(data, hdi_prob=0.8)
    assert list(table.columns) == ["mean", "sd", "hdi_low", "hdi_high"]
    assert (table["hdi_low"] < table["hdi_high"]).all()


def test_bad_draws() -> None:
    with pytest.raises(InputDataError):
        to_inference_data({})
    with pytest.raises(InputDataError):
        to_inference_data({"a": torch.randn(2, 10), "b": torch.randn(3, 10)})
