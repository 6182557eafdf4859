"""The multi-task model learns a synthetic filter + rank task; the Bayesian one reports
uncertainty and its deterministic twin does not."""

from __future__ import annotations

import pytest
import torch
from scipy import stats

from probrank.exceptions import InputDataError
from probrank.models.multitask.network import (
    MultiTaskData,
    MultiTaskNet,
    fit_multitask,
    predict_multitask,
)


def _questions(num_questions: int, seed: int, d: int = 6) -> tuple[MultiTaskData, list[int]]:
    # a hidden linear utility; grades 1..4 from its quartiles; label = grade >= 3
    generator = torch.Generator().manual_seed(seed)
    w = torch.tensor([1.5, -1.0, 0.5, 0.0, 0.0, 2.0], dtype=torch.float64)
    features, grades, groups = [], [], []
    for _ in range(num_questions):
        n = 6
        x = torch.randn(n, d, generator=generator, dtype=torch.float64)
        utility = x @ w + 0.3 * torch.randn(n, generator=generator, dtype=torch.float64)
        g = torch.bucketize(utility, torch.tensor([-1.5, 0.0, 1.5], dtype=torch.float64)) + 1
        groups.append(list(range(len(grades), len(grades) + n)))
        features.append(x)
        grades += g.tolist()
    labels = torch.tensor([int(g >= 3) for g in grades], dtype=torch.float64)
    pairs = MultiTaskData.pairs_from_grades(groups, grades)
    return MultiTaskData(torch.cat(features), labels, pairs), grades


def test_pairs_from_grades():
    pairs = MultiTaskData.pairs_from_grades([[0, 1, 2], [3, 4]], [1, 3, 3, 2, 1])
    assert pairs.tolist() == [[1, 0], [2, 0], [3, 4]]


@pytest.mark.parametrize("bayesian", [True, False])
def test_learns_filter_and_ranking(bayesian):
    train, _ = _questions(60, 0)
    val, _ = _questions(15, 1)
    test, grades = _questions(30, 2)
    net = MultiTaskNet(6, hidden=16, bayesian=bayesian, seed=0).double()
    best = fit_multitask(net, train, val, lr=1e-2, max_epochs=300, patience=30, seed=0)
    assert 0 <= best < 300
    probs, mean, std = predict_multitask(net, test.features, num_samples=100)
    accuracy = ((probs > 0.5).double() == test.labels).double().mean()
    assert accuracy > 0.85
    assert stats.spearmanr(mean.numpy(), grades).statistic > 0.8
    if bayesian:
        assert (std > 0).all()
    else:
        assert torch.equal(std, torch.zeros_like(std))


def test_bad_inputs():
    with pytest.raises(InputDataError, match="ranking_weight"):
        MultiTaskNet(3, ranking_weight=1.5)
    with pytest.raises(InputDataError, match="out of range"):
        MultiTaskData(torch.zeros(2, 3), torch.zeros(2), torch.tensor([[0, 5]]))
    with pytest.raises(InputDataError, match="`n x d`"):
        MultiTaskData(torch.zeros(2, 3), torch.zeros(3), torch.zeros(0, 2, dtype=torch.long))


def test_skip_connection_feeds_the_features_to_the_output_layer():
    net = MultiTaskNet(3, hidden=4, bayesian=True, skip=True, prior_scale=0.5, seed=0).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    h = net.features_to_hidden(x)
    assert h.shape == (5, 7)
    torch.testing.assert_close(h[:, 4:], x, rtol=0, atol=0)
    assert net.output is not None and net.output.in_features == 7
    # the prior's scale reaches the Bayesian layer's weight site
    prior = net.output._pyro_samples["weight"](net.output)  # type: ignore[operator]
    assert float(prior.base_dist.scale.max()) == pytest.approx(0.5)
    with pytest.raises(InputDataError, match="prior_scale"):
        MultiTaskNet(3, prior_scale=0.0)


def test_weight_decay_shrinks_the_hidden_layer_only():
    from probrank.models.multitask.network import _adam_args

    args = _adam_args(1e-3, 10.0)
    assert args("hidden_weight")["weight_decay"] == 10.0
    assert args("out_weight")["weight_decay"] == 10.0
    for name in ("output.weight_loc", "output.weight_scale", "hidden_bias", "log_a", "b"):
        assert args(name)["weight_decay"] == 0.0
    train, _ = _questions(30, 0)
    val, _ = _questions(10, 1)
    norms = {}
    for decay in (0.0, 1e3):
        net = MultiTaskNet(6, hidden=8, bayesian=False, seed=0).double()
        fit_multitask(net, train, val, lr=1e-2, weight_decay=decay, max_epochs=60, patience=60)
        norms[decay] = float(net.hidden_weight.detach().norm())
    assert norms[1e3] < 0.5 * norms[0.0]


def test_predictions_come_from_the_output_layers_guide_draws() -> None:
    # predict_multitask now goes through BayesianLinear.predictive: the same weight and bias
    # draws as the hand-rolled code it replaced (same generator, same order, bit for bit), and
    # the utilities are h W_s^T + b_s of those draws
    net = MultiTaskNet(6, hidden=8, seed=3).double()
    out = net.output
    assert out is not None
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():  # a fitted-looking guide: nonzero bias, varied scales
        for name in ("weight_loc", "weight_scale", "bias_loc", "bias_scale"):
            param = getattr(out, f"{name}_unconstrained")
            param.copy_(0.5 * torch.randn(param.shape, generator=generator, dtype=param.dtype))
    x = torch.randn(7, 6, generator=generator, dtype=torch.float64)
    probs, mean, std = predict_multitask(net, x, num_samples=50, seed=9)
    with torch.no_grad():
        h = net.features_to_hidden(x)
        loc, scale = out.weight_loc, out.weight_scale
        former = torch.Generator().manual_seed(9)
        eps = torch.randn((50, *loc.shape), generator=former, dtype=loc.dtype)
        bias_eps = torch.randn((50, 1), generator=former, dtype=loc.dtype)
        weight, bias = out.sample(50, seed=9)
        assert bias is not None
        torch.testing.assert_close(weight, loc + scale * eps, rtol=0, atol=0)
        torch.testing.assert_close(bias, out.bias_loc + out.bias_scale * bias_eps, rtol=0, atol=0)
        draws = weight.squeeze(1) @ h.T + bias
        torch.testing.assert_close(mean, draws.mean(0), rtol=0, atol=0)
        torch.testing.assert_close(std, draws.std(0), rtol=0, atol=0)
        expected = torch.sigmoid(net.filter_logits(draws)).mean(0)
    torch.testing.assert_close(probs, expected, rtol=0, atol=0)
