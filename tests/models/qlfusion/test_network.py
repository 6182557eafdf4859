"""The QLFusion quantifier: inputs, the Pyro model, vectorised training."""

from __future__ import annotations

import pyro
import pytest
import torch
from pyro import poutine

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.models.qlfusion.network import (
    QLFusionNet,
    list_features,
    relevant_counts,
    train_quantifier,
)


def test_features_minmax_padding_missing_and_constant_lists() -> None:
    run = Run({"1": {"a": 3.0, "b": 1.0, "c": 2.0}, "2": {"x": 5.0, "y": 5.0}, "3": {}})
    x = list_features(run, ["1", "2", "3", "4"], depth=4)
    torch.testing.assert_close(x[0], torch.tensor([1.0, 0.5, 0.0, 0.0]))
    torch.testing.assert_close(x[1], torch.tensor([1.0, 1.0, 0.0, 0.0]))  # zero range -> 1
    torch.testing.assert_close(x[2:], torch.zeros(2, 4))  # empty list, missing topic
    assert torch.isfinite(x).all()
    qrels = Qrels({"1": {"a": 1, "c": 0, "b": 2}, "2": {"y": 1}})
    counts = relevant_counts(run, qrels, ["1", "2", "4"], depth=2)
    torch.testing.assert_close(counts, torch.tensor([1.0, 1.0, 0.0]))  # top 2 of "1": a, c


@pytest.mark.parametrize("bayesian", [True, False])
def test_model_sites_and_shapes(bayesian: bool) -> None:
    net = QLFusionNet(10, 4, num_models=3, bayesian=bayesian, loss=["binomial", "mse", "binomial"])
    x = torch.rand(3, 5, 10)
    counts = torch.randint(0, 11, (3, 5)).float()
    with pyro.get_param_store().scope():
        guide_trace = poutine.trace(net.guide).get_trace(x, counts)
        trace = poutine.trace(poutine.replay(net.model, trace=guide_trace)).get_trace(x, counts)
    latent = {n for n, s in guide_trace.nodes.items() if s["type"] == "sample"}
    assert latent == ({"output.weight", "output.bias"} if bayesian else set())
    assert trace.nodes["p_hat"]["value"].shape == (3, 5)
    trace.compute_log_prob()
    binomial = trace.nodes["k_rel"]["log_prob"]
    gaussian = trace.nodes["k_rel_mse"]["log_prob"]
    # each member contributes to exactly one likelihood
    assert (binomial[1] == 0).all() and (gaussian[0] == 0).all() and (gaussian[2] == 0).all()
    assert (binomial[0] != 0).all() and (gaussian[1] != 0).all()
    with pyro.get_param_store().scope():
        draws = net.predict(x, 7)
        assert len(pyro.get_param_store()) == 0  # prediction leaves no global state
    assert draws.shape == ((7, 3, 5) if bayesian else (1, 3, 5))
    assert ((draws > 0) & (draws < 1)).all()


def _synthetic(members: int, n: int, depth: int, generator: torch.Generator) -> dict:
    # Lists differ in the shape of their score curve (u ** a); the proportion of relevant
    # documents is the mean score, 1 / (1 + a), from 0.17 to 0.83.
    a = 0.2 + 4.8 * torch.rand(members, n, 1, generator=generator)
    u = torch.rand(members, n, depth, generator=generator) ** a
    x = u.sort(-1, descending=True).values
    p = (1 / (1 + a)).squeeze(-1)
    counts = torch.binomial(torch.full_like(p, float(depth)), p, generator=generator)
    return {"x": x, "counts": counts, "mask": torch.ones(members, n, dtype=torch.bool)}


def test_training_learns_and_selects_batch_size_on_validation() -> None:
    g = torch.Generator().manual_seed(0)
    train, val = _synthetic(2, 32, 20, g), _synthetic(2, 10, 20, g)
    with pyro.get_param_store().scope():
        before = set(pyro.get_param_store().keys())
        trained = train_quantifier(
            train,
            val,
            losses=["binomial", "mse"],
            batch_sizes=[8, 16],
            lr=0.02,
            max_epochs=40,
            patience=5,
            seed=0,
            progress=False,
        )
        assert set(pyro.get_param_store().keys()) == before
    assert trained.val_mae.shape == (2, 2, 2)
    assert trained.chosen.shape == (2, 2)
    # the chosen batch size is the argmin of validation MAE
    best = trained.val_mae.min(0).values
    picked = trained.val_mae.gather(0, trained.chosen.unsqueeze(0)).squeeze(0)
    torch.testing.assert_close(picked, best)
    test = _synthetic(2, 30, 20, g)
    p_hat = trained.predict(test["x"], "binomial", 20)
    assert p_hat.shape == (2, 30)
    mae = (p_hat - test["counts"] / 20).abs().mean()
    baseline = (train["counts"].mean() / 20 - test["counts"] / 20).abs().mean()
    assert mae < 0.8 * baseline  # better than predicting the training mean
    with pytest.raises(InputDataError):
        train_quantifier(train, {**val, "mask": torch.zeros(2, 10, dtype=torch.bool)})


@pytest.mark.parametrize("layer_norm", [True, False])
def test_row_groups_compute_only_the_used_rows(layer_norm: bool) -> None:
    net = QLFusionNet(12, 5, num_models=5, layer_norm=layer_norm, total_count=40, seed=1).double()
    x = torch.rand(5, 4, 12, dtype=torch.float64)
    groups = [(2, 1), (3, 4)]  # members 0-1 use their first row, members 2-4 all four
    with pyro.get_param_store().scope():
        full = net.features(x)
        grouped = net.features(x, groups)
    torch.testing.assert_close(grouped[:2, :1], full[:2, :1], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grouped[2:], full[2:], rtol=1e-12, atol=1e-12)
    assert bool((grouped[:2, 1:] == 0).all())  # padding rows are not computed
    assert net.total_count == 40
    with pytest.raises(InputDataError):
        net.features(x, [(2, 1), (2, 4)])  # groups must cover the members


def test_members_stop_improving_after_their_own_epoch_limit() -> None:
    g = torch.Generator().manual_seed(1)
    train, val = _synthetic(2, 16, 20, g), _synthetic(2, 8, 20, g)
    with pyro.get_param_store().scope():
        trained = train_quantifier(
            train, val, batch_sizes=[2, 8], lr=0.05, max_epochs=3, patience=50, seed=0,
            progress=False,
        )  # fmt: skip
    # batch size 8 takes 2 steps per epoch, batch size 2 takes 8: the loop runs 12 periods
    # of 2 steps for the small batches, but no member may pick an epoch past its third
    assert trained.fit.epochs_run == 12
    assert int(trained.best_epoch.max()) <= 2


def test_predict_draws_are_the_former_hand_rolled_draws() -> None:
    # predict now goes through BayesianLinear.predictive; same seed, the same numbers as the
    # hand-rolled draws it replaced (bit for bit)
    net = QLFusionNet(10, 4, num_models=3, seed=1)
    out = net.output
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():  # a fitted-looking guide: nonzero bias, varied scales
        for name in ("weight_loc", "weight_scale", "bias_loc", "bias_scale"):
            param = getattr(out, f"{name}_unconstrained")
            param.copy_(0.5 * torch.randn(param.shape, generator=generator))
    x = torch.rand(3, 5, 10, generator=generator)
    with pyro.get_param_store().scope():
        draws = net.predict(x, 9, seed=4)
        hidden = net.features(x)
        w_loc, w_scale = out.weight_loc, out.weight_scale
        b_loc, b_scale = out.bias_loc, out.bias_scale
        former = torch.Generator().manual_seed(4)
        eps_w = torch.randn((9, *w_loc.shape), generator=former)
        eps_b = torch.randn((9, *b_loc.shape), generator=former)
        weight = w_loc + w_scale * eps_w
        bias = b_loc + b_scale * eps_b
        logits = torch.matmul(hidden.unsqueeze(0), weight.transpose(-1, -2)) + bias.unsqueeze(-2)
        expected = torch.sigmoid(logits.squeeze(-1)).detach()
    assert draws.shape == (9, 3, 5)
    torch.testing.assert_close(draws, expected, rtol=0, atol=0)
