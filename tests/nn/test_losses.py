from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.nn.losses import binary_focal_loss, make_loss


def test_focal_loss_matches_its_definition() -> None:
    logits = torch.tensor([-2.0, -0.3, 0.0, 1.5, 4.0], dtype=torch.float64)
    labels = torch.tensor([0, 1, 1, 0, 1])
    p = torch.sigmoid(logits)
    pt = torch.where(labels == 1, p, 1 - p)
    for gamma in (1.0, 2.0, 5.0):
        expected = (-((1 - pt) ** gamma) * torch.log(pt)).mean()
        torch.testing.assert_close(
            binary_focal_loss(logits, labels, gamma), expected, rtol=1e-12, atol=1e-12
        )


def test_gamma_zero_is_cross_entropy_and_focal_downweights_easy_items() -> None:
    logits = torch.randn(50, dtype=torch.float64)
    labels = (torch.rand(50) > 0.5).long()
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.double())
    torch.testing.assert_close(binary_focal_loss(logits, labels, 0.0), bce, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(make_loss("bce")(logits, labels), bce, rtol=1e-12, atol=1e-12)
    per_item = binary_focal_loss(logits, labels, 2.0, reduction="none")
    per_bce = binary_focal_loss(logits, labels, 0.0, reduction="none")
    assert torch.all(per_item <= per_bce)


def test_focal_gradient_is_correct() -> None:
    logits = torch.randn(6, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 1, 1, 0, 1, 0])
    assert torch.autograd.gradcheck(lambda z: binary_focal_loss(z, labels, 2.0), (logits,))


def test_bad_options_raise() -> None:
    for gamma in (-1.0, 0.0, 0.9):
        with pytest.raises(InputDataError, match="gamma"):
            make_loss("focal", gamma=gamma)
    make_loss("focal", gamma=1.0)
    with pytest.raises(InputDataError, match="loss"):
        make_loss("hinge")
