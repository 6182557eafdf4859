"""BayesianLinear inside ``pyro.plate`` and in float64 without ``.double()``."""

from __future__ import annotations

from collections.abc import Iterator

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import SVI, Trace_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.nn import PyroModule

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.likelihoods import binomial_proportion
from probrank.models.qlfusion import list_features, relevant_counts
from probrank.nn.bayesian_linear import BayesianLinear


@pytest.fixture(autouse=True)
def _clean_param_store() -> Iterator[None]:
    """Top-level layers share the param store's names ("weight_loc"): start and end clean."""
    pyro.clear_param_store()
    yield
    pyro.clear_param_store()


class _InPlate(PyroModule):
    """The layer called inside the data plate (the case that crashed)."""

    def __init__(self, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.output = BayesianLinear(3, 1, seed=0, dtype=dtype)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        with pyro.plate("lists", x.shape[0]):
            logits = self.output(x).squeeze(-1)
            return pyro.sample("k", binomial_proportion(10)(logits), obs=y)


def test_layer_inside_a_plate_samples_global_weights() -> None:
    # Regression: inside pyro.plate the weight was broadcast to `n x o x d` and the forward
    # pass crashed with a 3-D transpose error
    model = _InPlate()
    x = torch.randn(7, 3)
    trace = pyro.poutine.trace(model).get_trace(x)
    weight, bias = trace.nodes["output.weight"], trace.nodes["output.bias"]
    assert weight["value"].shape == (1, 3) and bias["value"].shape == (1,)
    assert weight["cond_indep_stack"] == () and bias["cond_indep_stack"] == ()
    assert [f.name for f in trace.nodes["k"]["cond_indep_stack"]] == ["lists"]
    # the likelihood is that of the weights the trace drew, applied to every list
    logits = x @ weight["value"][0] + bias["value"]
    expected = dist.Binomial(10, logits=logits).log_prob(trace.nodes["k"]["value"]).sum()
    trace.compute_log_prob()
    torch.testing.assert_close(trace.nodes["k"]["log_prob_sum"], expected)

    # the plates are active again after the layer: a later site is still inside them
    def plates(call_layer: bool) -> None:
        with pyro.plate("outer", 4, dim=-2), pyro.plate("inner", 5):
            if call_layer:
                model.output(torch.randn(4, 5, 3))
            pyro.sample("z", dist.Normal(0.0, 1.0))

    later, alone = (pyro.poutine.trace(plates).get_trace(c) for c in (True, False))
    assert later.nodes["z"]["cond_indep_stack"] == alone.nodes["z"]["cond_indep_stack"]
    assert later.nodes["z"]["value"].shape == (4, 5)


def test_layer_inside_a_plate_trains_with_an_autoguide() -> None:
    # an autoguide sees the weights as global sites and recovers the generating weights
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(400, 3, generator=generator)
    true_w = torch.tensor([1.0, -0.5, 0.25])
    y = dist.Binomial(10, logits=x @ true_w).sample()
    model = _InPlate()
    guide = AutoNormal(model, init_scale=0.05)
    svi = SVI(model, guide, pyro.optim.Adam({"lr": 0.05}), Trace_ELBO())
    pyro.clear_param_store()
    for _ in range(250):
        svi.step(x, y)
    median = guide.median(x, y)
    assert median["output.weight"].shape == (1, 3)
    torch.testing.assert_close(median["output.weight"][0], true_w, rtol=0, atol=0.1)
    pyro.clear_param_store()


def test_float64_inputs_without_double() -> None:
    layer = BayesianLinear(3, 2, seed=0)  # float32 parameters (the default dtype)
    x = torch.randn(5, 3, dtype=torch.float64)
    trace = pyro.poutine.trace(layer).get_trace(x)
    out = trace.nodes["_RETURN"]["value"]
    assert out.dtype == torch.float64
    w, b = trace.nodes["weight"]["value"], trace.nodes["bias"]["value"]
    torch.testing.assert_close(out, x @ w.double().T + b.double())
    assert layer.predictive(x, 4).dtype == torch.float64
    with pytest.raises(InputDataError, match="floating"):
        layer(torch.ones(5, 3, dtype=torch.long))


def test_dtype_follows_the_default_and_double() -> None:
    layer = BayesianLinear(3, 1, dtype=torch.float64)
    assert layer.weight_loc.dtype == torch.float64
    trace = pyro.poutine.trace(layer).get_trace(torch.randn(2, 3, dtype=torch.float64))
    assert trace.nodes["weight"]["value"].dtype == torch.float64  # the default prior follows
    pyro.clear_param_store()
    doubled = BayesianLinear(3, 1).double()
    trace = pyro.poutine.trace(doubled).get_trace(torch.randn(2, 3, dtype=torch.float64))
    assert trace.nodes["weight"]["value"].dtype == torch.float64
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert BayesianLinear(3, 1).weight_loc.dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


def test_qlfusion_inputs_in_float64_end_to_end() -> None:
    # Regression: list_features and relevant_counts were float32 only
    run = Run({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 1.0, "d": 0.5}}, name="r")
    qrels = Qrels({"q1": {"a": 1, "c": 1}, "q2": {"d": 1}}, name="j")
    x = list_features(run, ["q1", "q2"], 3, dtype=torch.float64)
    k = relevant_counts(run, qrels, ["q1", "q2"], 3, dtype=torch.float64)
    assert x.dtype == k.dtype == torch.float64
    torch.testing.assert_close(x, torch.tensor([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]]).double())
    torch.testing.assert_close(k, torch.tensor([2.0, 1.0], dtype=torch.float64))
    assert list_features(run, ["q1"], 3).dtype == torch.get_default_dtype()
    model = _InPlate(dtype=torch.float64)
    trace = pyro.poutine.trace(model).get_trace(x, k)
    trace.compute_log_prob()
    assert trace.nodes["k"]["log_prob"].dtype == torch.float64
    with pytest.raises(InputDataError, match="floating"):
        relevant_counts(run, qrels, ["q1"], 3, dtype=torch.long)
