"""MC dropout draws whole functions: one mask per pass and unit, shared by every input row."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from probrank.exceptions import InputDataError
from probrank.nn.heads import FitSettings, MCDropoutHead
from probrank.nn.mc_dropout import dropout_masks, dropout_widths, forward_with_masks
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.neural import dropout_passes


def _stack() -> list[nn.Module]:
    torch.manual_seed(3)
    return [
        nn.Linear(4, 6).double(),
        nn.ReLU(),
        nn.Dropout(0.3),
        nn.Linear(6, 5).double(),
        nn.Tanh(),
        nn.Dropout(0.5),
        nn.Linear(5, 1).double(),
    ]


def test_masks_are_zero_or_the_inverse_keep_rate_per_pass_and_unit() -> None:
    stack = _stack()
    assert dropout_widths(stack, 4) == [6, 5]
    masks = dropout_masks(stack, 4, 200, torch.Generator().manual_seed(0))
    assert [tuple(m.shape) for m in masks] == [(200, 6), (200, 5)]
    for mask, keep in zip(masks, (0.7, 0.5), strict=True):
        values = set(mask.unique().tolist())
        assert values <= {0.0, 1.0 / keep}
        # mean of the scaled mask is 1 in expectation; 1200 / 1000 Bernoulli draws
        assert abs(float(mask.mean()) - 1.0) < 0.15
    again = dropout_masks(stack, 4, 200, torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip(masks, again, strict=True))


def test_a_pass_restricted_to_rows_equals_the_pass_over_those_rows_alone() -> None:
    stack = _stack()
    masks = dropout_masks(stack, 4, 7, torch.Generator().manual_seed(1))
    x = torch.randn(9, 4, dtype=torch.float64)
    full = forward_with_masks(stack, x, masks)
    part = forward_with_masks(stack, x[[2, 5, 5]], masks)
    assert full.shape == (7, 9, 1)
    # equal up to the round-off of matrix products over other row counts (float64)
    torch.testing.assert_close(part, full[:, [2, 5, 5]], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(part[:, 1], part[:, 2], rtol=0, atol=0)
    # a batch of question sets: `b x q x d` inputs, the same masks broadcast over the batch
    batched = forward_with_masks(stack, x.reshape(3, 3, 4), masks)
    torch.testing.assert_close(batched, full.reshape(7, 3, 3, 1), rtol=1e-12, atol=1e-12)
    with pytest.raises(InputDataError, match="2 dropout layers"):
        forward_with_masks(stack, x, masks[:1])
    with pytest.raises(InputDataError, match="positive integer"):
        dropout_masks(stack, 4, 0, torch.Generator())


def _head() -> MCDropoutHead:
    x = torch.randn(80, 5, dtype=torch.float64)
    head = MCDropoutHead(5, hidden=16, dropout=0.3, num_samples=30, prediction_seed=2).double()
    head.fit(x, (x[:, 0] > 0).double(), FitSettings(epochs=2, batch_size=16))
    return head


def test_identical_rows_have_covariance_equal_to_their_variance_in_the_head() -> None:
    # Regression: the head ran nn.Dropout in training mode, a fresh mask per row, so two
    # identical candidates got different values in one pass and their covariance fell below
    # their variance: the passes were not draws of one function.
    head = _head()
    row = torch.randn(1, 5, dtype=torch.float64)
    x = torch.cat([row, torch.randn(2, 5, dtype=torch.float64), row])
    posterior = head.posterior(x)
    covariance = posterior.covariance_matrix
    assert float(covariance[0, 0]) > 1e-8  # dropout moves the logit
    torch.testing.assert_close(covariance[0, 3], covariance[0, 0], rtol=1e-12, atol=0)
    torch.testing.assert_close(covariance[3, 3], covariance[0, 0], rtol=1e-12, atol=0)
    draws = head.sample_logits(x)
    torch.testing.assert_close(draws[:, 0], draws[:, 3], rtol=0, atol=0)


def test_the_head_scores_any_subset_with_the_same_passes() -> None:
    head = _head()
    x = torch.randn(6, 5, dtype=torch.float64)
    full = head.sample_logits(x)
    assert full.shape == (30, 6)
    subset = head.sample_logits(x[[4, 1]])
    torch.testing.assert_close(subset, full[:, [4, 1]], rtol=1e-12, atol=1e-14)
    state = torch.get_rng_state()
    head.predict_proba(x)
    assert torch.equal(torch.get_rng_state(), state)  # the masks come from their own generator


def test_the_siamese_passes_are_whole_function_draws_too() -> None:
    net = SiameseUtilityNet(5, (8, 4), dropout=0.3, seed=1).double()
    row = torch.randn(1, 5, dtype=torch.float64)
    x = torch.cat([row, torch.randn(3, 5, dtype=torch.float64), row])
    passes = dropout_passes(net, x, num_samples=25, seed=4)
    assert passes.shape == (25, 5)
    torch.testing.assert_close(passes[:, 0], passes[:, 4], rtol=0, atol=0)
    assert float(passes[:, 0].var()) > 0
