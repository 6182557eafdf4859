"""The Siamese utility network: margin loss sign and closed form, pairs, training, splits."""

from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.nn.siamese import (
    PairFitSettings,
    SiameseUtilityNet,
    fit_pairs,
    graded_pairs,
    margin_ranking_loss,
    pairwise_accuracy,
)


def test_margin_loss_is_torchs_margin_ranking_loss_with_the_preferred_first() -> None:
    winner = torch.tensor([1.0, 0.5, 0.0, 2.0, -1.0], dtype=torch.float64)
    loser = torch.tensor([0.0, 0.45, 0.3, 2.0, -1.2], dtype=torch.float64)
    ours = margin_ranking_loss(winner, loser, margin=0.1, reduction="none")
    theirs = torch.nn.functional.margin_ranking_loss(
        winner, loser, torch.ones_like(winner), margin=0.1, reduction="none"
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-15)
    # by hand: max(0, 0.1 - (w - l))
    expected = torch.tensor([0.0, 0.05, 0.4, 0.1, 0.0], dtype=torch.float64)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-12)
    # zero exactly when the preferred answer leads by at least the margin
    assert bool(((ours == 0) == (winner - loser >= 0.1)).all())
    assert margin_ranking_loss(winner, loser, 0.1).item() == pytest.approx(0.11, abs=1e-12)
    assert margin_ranking_loss(winner, loser, 0.1, "sum").item() == pytest.approx(0.55, abs=1e-12)


def test_margin_loss_gradient_pushes_the_winner_up_and_the_loser_down() -> None:
    winner = torch.tensor([0.0], dtype=torch.float64, requires_grad=True)
    loser = torch.tensor([0.05], dtype=torch.float64, requires_grad=True)
    margin_ranking_loss(winner, loser, 0.1).backward()
    assert winner.grad is not None and loser.grad is not None
    assert winner.grad.item() == -1.0 and loser.grad.item() == 1.0  # descent raises the winner
    with pytest.raises(InputDataError):
        margin_ranking_loss(winner, loser, -0.1)
    with pytest.raises(InputDataError):
        margin_ranking_loss(winner, torch.zeros(2), 0.1)


def test_graded_pairs_by_hand() -> None:
    pairs = graded_pairs([[3, 1, 3], [2], [1, 4]])
    assert pairs.tolist() == [[0, 1], [2, 1], [5, 4]]
    assert graded_pairs([[1, 1]]).shape == (0, 2)


def test_split_forward_equals_the_network() -> None:
    net = SiameseUtilityNet(6, dropout=0.2, seed=3).double().eval()
    x = torch.randn(4, 5, 6, dtype=torch.float64)
    for count in (1, 2, 3):
        prefix, head = net.split(count)
        torch.testing.assert_close(head(prefix(x)), net(x), rtol=1e-12, atol=1e-12)
        linears = head.linears()
        assert linears == net.last_layers(count)
        weights = [(m.weight.unsqueeze(0), m.bias.unsqueeze(0)) for m in linears]
        hidden = prefix(x).reshape(-1, head.in_width)
        out = head.forward_with_weights(hidden, weights)
        torch.testing.assert_close(out.reshape(4, 5), net(x), rtol=1e-12, atol=1e-12)
        assert {id(p) for p in head.parameters()} <= {id(p) for p in net.parameters()}
    assert net.embed(x).shape == (4, 5, 10)


def test_masked_passes_are_thinned_networks_shared_by_all_rows() -> None:
    net = SiameseUtilityNet(6, (8, 4), dropout=0.5, seed=1).double()
    prefix, head = net.split(2)  # the head starts with the first layer's dropout
    masks = head.dropout_masks(7, torch.Generator().manual_seed(0))
    assert [m.shape for m in masks] == [(7, 8), (7, 4)]
    assert set(torch.unique(masks[0]).tolist()) <= {0.0, 2.0}
    x = torch.randn(5, 6, dtype=torch.float64)
    passes = head.forward_with_masks(prefix(x), masks)
    assert passes.shape == (7, 5)
    # pass s by hand: the same units dropped for every row
    with torch.no_grad():
        h = torch.relu(net.body[0]((x - net.input_mean.double()) / net.input_scale.double()))
        h = torch.relu(net.body[3](h * masks[0][2])) * masks[1][2]
        torch.testing.assert_close(passes[2], net.output(h).squeeze(-1), rtol=1e-12, atol=1e-12)
    # a subset of the rows gets exactly the same values
    torch.testing.assert_close(head.forward_with_masks(prefix(x[1:3]), masks), passes[:, 1:3])


def _toy(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(240, 8, generator=generator, dtype=torch.float64)
    utility = x @ torch.linspace(-1.0, 1.0, 8, dtype=torch.float64) + 0.5 * torch.tanh(x[:, 0])
    grades = [(utility[k : k + 8] * 2).round().tolist() for k in range(0, 240, 8)]
    return x, utility, graded_pairs(grades)


def test_warm_start_learns_a_tiny_synthetic_ranking() -> None:
    x, _, pairs = _toy(0)
    train, held_out = pairs[: len(pairs) * 3 // 4], pairs[len(pairs) * 3 // 4 :]
    net = SiameseUtilityNet(8, (16, 4), dropout=0.0, seed=0).double()
    with torch.no_grad():
        before = pairwise_accuracy(net(x), held_out)
    options = PairFitSettings(epochs=15, batch_size=32, lr=0.05, weight_decay=1e-4, seed=0)
    result = fit_pairs(net, x, train, options)
    with torch.no_grad():
        after = pairwise_accuracy(net(x), held_out)
    assert result.losses[-1] < 0.2 * result.losses[0]
    assert after > 0.9 and after > before + 0.2


def test_fit_is_deterministic_and_leaves_the_global_rng_alone() -> None:
    x, _, pairs = _toy(1)
    states = []
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    for _ in range(2):
        torch.manual_seed(123)
        net = SiameseUtilityNet(8, (16, 4), dropout=0.3, seed=5).double()
        fit_pairs(net, x, pairs, PairFitSettings(epochs=3, seed=9))
        states.append(net.state_dict())
        assert torch.equal(torch.rand(1), expected_next)
    for key in states[0]:
        assert torch.equal(states[0][key], states[1][key])


def test_prior_penalty_pulls_towards_the_anchor_in_closed_form() -> None:
    # every pair meets the margin, so only the Gaussian prior acts: one plain SGD step moves
    # theta to theta - lr * lambda * (theta - anchor)
    net = SiameseUtilityNet(2, (3,), dropout=0.0, seed=0).double()
    with torch.no_grad():
        net.output.bias.fill_(0.0)
    x = torch.tensor([[10.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    with torch.no_grad():
        if net(x)[0] < net(x)[1]:
            x = x.flip(0)
    anchor = {k: torch.zeros_like(v) for k, v in net.named_parameters()}
    before = {k: v.detach().clone() for k, v in net.named_parameters()}
    pairs = torch.tensor([[0, 1]])
    with torch.no_grad():
        margin = float(net(x)[0] - net(x)[1]) / 2
    options = PairFitSettings(
        epochs=1, lr=0.1, momentum=0.0, weight_decay=0.5, margin=margin, anchor=anchor
    )
    fit_pairs(net, x, pairs, options)
    for name, value in net.named_parameters():
        torch.testing.assert_close(value, before[name] * (1 - 0.1 * 0.5), rtol=1e-12, atol=1e-14)


def test_early_stop_when_every_margin_is_met() -> None:
    x, _, _ = _toy(2)
    net = SiameseUtilityNet(8, (16, 4), dropout=0.0, seed=0).double()
    with torch.no_grad():
        scores = net(x)
    order = torch.argsort(scores, descending=True)
    pairs = torch.stack([order[:5], order[-5:]], dim=1)  # already ranked far apart
    before = {k: v.detach().clone() for k, v in net.named_parameters()}
    result = fit_pairs(net, x, pairs, PairFitSettings(epochs=4, stop_at_zero_loss=True, margin=0.0))
    assert result.losses == []
    for name, value in net.named_parameters():
        assert torch.equal(value, before[name])


def test_bad_inputs() -> None:
    x = torch.randn(4, 3)
    net = SiameseUtilityNet(3)
    with pytest.raises(InputDataError):
        fit_pairs(net, x, torch.tensor([[0, 4]]))
    with pytest.raises(InputDataError):
        fit_pairs(net, x, torch.tensor([[1, 1]]))
    with pytest.raises(InputDataError):
        fit_pairs(net, x, torch.zeros(0, 2, dtype=torch.long))
    with pytest.raises(InputDataError):
        SiameseUtilityNet(3, dropout=1.0)
    with pytest.raises(InputDataError):
        SiameseUtilityNet(3, activation="gelu")
    with pytest.raises(InputDataError):
        pairwise_accuracy(torch.zeros(3), torch.zeros(0, 2, dtype=torch.long))
