"""fit_svi: param-store hygiene, early stopping at the best epoch, ensembles."""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.inference.svi import FusedAdam, fit_svi


def _model(x: torch.Tensor) -> None:
    mu = pyro.param("mu", torch.tensor(0.0))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("x", dist.Normal(mu, 1.0), obs=x)


def _guide(x: torch.Tensor) -> None:
    pass


def test_param_store_left_as_found_and_state_returned() -> None:
    store = pyro.get_param_store()
    with store.scope():
        caller = pyro.param("caller", torch.tensor(3.0))
        pyro.param("mu", torch.tensor(-7.0))  # a leftover that fit_svi must not use
        result = fit_svi(
            _model,
            _guide,
            (torch.full((10,), 2.0),),
            max_epochs=50,
            optimizer=pyro.optim.Adam({"lr": 0.1}),
            progress=False,
        )
        assert set(store.keys()) == {"caller", "mu"}
        assert store["caller"] is caller
        torch.testing.assert_close(store["mu"].detach(), torch.tensor(-7.0))
    # training started from the model's own init (0), not from the leftover -7
    assert 1.5 < float(result.params["mu"]) <= 2.1
    assert set(result.param_state["params"]) == {"mu"}
    assert result.epochs_run == 50 and len(result.losses) == 50


def test_early_stopping_keeps_best_epoch() -> None:
    script = [5.0, 4.0, 3.0, 3.5, 4.0, 4.0, 4.0, 4.0, 2.0]
    seen: list[float] = []

    def metric() -> float:
        seen.append(float(pyro.param("mu").detach()))
        return script[len(seen) - 1]

    result = fit_svi(
        _model,
        _guide,
        (torch.full((4,), 10.0),),
        max_epochs=9,
        patience=3,
        metric=metric,
        optimizer=pyro.optim.SGD({"lr": 0.01}),
        progress=False,
    )
    assert result.best_epoch == 2
    assert result.epochs_run == 6  # epochs 3, 4, 5 without improvement
    assert result.history == script[:6]
    assert result.best_metric == pytest.approx(3.0)
    torch.testing.assert_close(result.params["mu"], torch.tensor(seen[2]))


def test_ensemble_members_keep_their_own_best_epoch() -> None:
    def model(x: torch.Tensor) -> None:
        mu = pyro.param("mu", torch.zeros(2))
        pyro.sample("x", dist.Normal(mu.unsqueeze(-1), 1.0).expand(x.shape).to_event(2), obs=x)

    scripts = torch.tensor([[3.0, 1.0, 2.0, 2.0, 2.0], [3.0, 2.0, 1.5, 1.0, 0.5]])
    seen: list[torch.Tensor] = []

    def metric() -> torch.Tensor:
        seen.append(pyro.param("mu").detach().clone())
        return scripts[:, len(seen) - 1]

    x = torch.stack([torch.full((6,), 5.0), torch.full((6,), -5.0)])
    result = fit_svi(
        model,
        _guide,
        (x,),
        data_dim=1,
        max_epochs=5,
        patience=torch.tensor([2, 2]),
        metric=metric,
        optimizer=pyro.optim.SGD({"lr": 0.01}),
        progress=False,
    )
    assert result.best_epoch == [1, 4]
    assert result.epochs_run == 5
    torch.testing.assert_close(result.params["mu"], torch.stack([seen[1][0], seen[4][1]]))


def test_minibatches_and_bad_input() -> None:
    calls: list[int] = []

    def model(x: torch.Tensor) -> None:
        calls.append(x.shape[0])
        _model(x)

    fit_svi(model, _guide, (torch.randn(10),), batch_size=4, max_epochs=1, progress=False)
    assert sorted(calls) == [2, 4, 4]
    with pytest.raises(InputDataError):
        fit_svi(_model, _guide, (torch.randn(3), torch.randn(4)), progress=False)
    with pytest.raises(InputDataError):
        fit_svi(_model, _guide, (torch.randn(3),), batch_size=0, progress=False)


def test_fused_adam_matches_pyro_adam_per_parameter() -> None:
    # Adam is element-wise, so one fused optimizer over all parameters must give the same
    # trajectory as pyro.optim.Adam's one-optimizer-per-tensor (float64, 25 steps).
    def model(x: torch.Tensor) -> None:
        loc = pyro.param("loc", torch.zeros(3, dtype=torch.float64))
        scale = pyro.param(
            "scale", torch.ones(3, dtype=torch.float64), constraint=dist.constraints.positive
        )
        with pyro.plate("data", x.shape[0]):
            pyro.sample("x", dist.Normal(loc, scale).to_event(1), obs=x)

    x = torch.randn(40, 3, dtype=torch.float64) * 2 + 1
    results = []
    for optimizer in (pyro.optim.Adam({"lr": 0.05}), FusedAdam({"lr": 0.05})):
        result = fit_svi(model, _guide, (x,), optimizer=optimizer, max_epochs=25, progress=False)
        results.append(result)
    for name in ("loc", "scale"):
        torch.testing.assert_close(
            results[1].params[name], results[0].params[name], rtol=1e-10, atol=1e-12
        )
    torch.testing.assert_close(
        torch.tensor(results[1].losses), torch.tensor(results[0].losses), rtol=1e-10, atol=0.0
    )
    with pytest.raises(NotImplementedError):
        FusedAdam({"lr": 0.1}).get_state()


def test_fused_adam_skips_parameters_without_gradient() -> None:
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    optimizer = FusedAdam({"lr": 0.1})
    (a.sum() + b.sum()).backward()
    optimizer([a, b])
    after_both = b.detach().clone()
    a.sum().backward()
    optimizer([a])  # b took no part in this step: it must not move
    torch.testing.assert_close(b.detach(), after_both)
    assert float(a.detach()[0]) < float(after_both[0])  # a moved twice (descending on +1 gradients)


def test_the_global_param_store_is_unchanged_after_fit_svi() -> None:
    # fit_svi trains in a scoped store through Pyro's public API only: every name, tensor,
    # value and constraint of the caller's store is there afterwards, untouched, even when the
    # fitted model uses the same names and a PyroModule
    from pyro.distributions import constraints
    from pyro.infer.autoguide import AutoNormal

    from probrank.nn.bayesian_linear import BayesianLinear

    store = pyro.get_param_store()
    with store.scope():  # the test's own store, so that nothing leaks into other tests
        mu = pyro.param("mu", torch.tensor(-7.0))
        scale = pyro.param("scale", torch.tensor(2.0), constraint=constraints.positive)
        other = pyro.param("layer$$$weight_loc", torch.ones(2, 3))
        before = {name: value.detach().clone() for name, value in store.named_parameters()}
        tensors = dict(store.named_parameters())
        layer = BayesianLinear(3, 1, seed=0)
        layer._pyro_name = "layer"
        x = torch.randn(20, 3)
        y = x.sum(-1)

        def model(x: torch.Tensor, y: torch.Tensor) -> None:
            pyro.param("mu", torch.tensor(0.5))
            mean = layer(x).squeeze(-1)
            with pyro.plate("data", x.shape[0]):
                pyro.sample("y", dist.Normal(mean, 1.0), obs=y)

        fit_svi(
            model,
            AutoNormal(model),
            (x, y),
            max_epochs=5,
            patience=2,
            metric=lambda: 0.0,
            progress=False,
        )
        assert dict(store.named_parameters()).keys() == before.keys()
        for name, value in store.named_parameters():
            assert value is tensors[name]
            torch.testing.assert_close(value.detach(), before[name], rtol=0, atol=0)
        assert float(store["mu"].detach()) == float(mu.detach()) == -7.0
        torch.testing.assert_close(
            store["scale"].detach(), scale.detach(), rtol=1e-12, atol=0
        )  # the positive constraint still applies: 2.0 back from its unconstrained log
        assert store.get_state()["constraints"]["scale"] is constraints.positive
        assert store.param_name(tensors["mu"]) == "mu"
        assert store.param_name(other) == "layer$$$weight_loc"
