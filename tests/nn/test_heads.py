from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.nn.heads import (
    POINT_MASS_VARIANCE,
    DeepEnsembleHead,
    FitSettings,
    GPFHead,
    HeadKind,
    MCDropoutHead,
    MLPHead,
    SNGPHead,
    build_head,
)
from probrank.nn.losses import binary_focal_loss


def _toy(n: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, 6)
    y = (x[:, 0] - x[:, 1] + 0.3 * torch.randn(n) > 0).float()
    return x, y


@pytest.mark.parametrize("kind", list(HeadKind))
def test_every_head_learns_and_gives_probabilities_and_posteriors(kind: HeadKind) -> None:
    x, y = _toy()
    head = build_head(kind, 6, hidden=32, **({"num_features": 256} if "g" in kind.value else {}))
    history = head.fit(x, y, FitSettings(epochs=8, batch_size=100, lr=5e-3, seed=1))
    assert history[-1] < history[0]
    test_x, test_y = _toy(300)
    p = head.predict_proba(test_x)
    assert p.shape == (300,) and torch.all((p > 0) & (p < 1))
    assert ((p > 0.5).float() == test_y).float().mean() > 0.8
    post = head.posterior(test_x.reshape(30, 10, 6))
    assert post.mean.shape == (30, 10)
    assert post.lazy_covariance_matrix.shape == (30, 10, 10)


def test_mc_dropout_is_reproducible_and_stochastic() -> None:
    x, y = _toy()
    head = MCDropoutHead(6, hidden=16, dropout=0.3, num_samples=10)
    head.fit(x, y, FitSettings(epochs=2))
    samples = head.sample_logits(x[:5])
    assert samples.shape == (10, 5)
    assert samples.std(0).min() > 0
    torch.testing.assert_close(head.sample_logits(x[:5]), samples, rtol=0, atol=0)


def test_ensemble_members_differ_and_prediction_averages_them() -> None:
    x, y = _toy()
    head = DeepEnsembleHead(6, num_members=5, hidden=16)
    head.fit(x, y, FitSettings(epochs=2))
    logits = head.sample_logits(x[:4])
    assert logits.shape == (5, 4) and logits.std(0).min() > 0
    torch.testing.assert_close(
        head.predict_proba(x[:4]), torch.sigmoid(logits).mean(0), rtol=1e-6, atol=1e-7
    )


def test_gpf_is_sngp_with_focal_loss() -> None:
    head = GPFHead(6, gamma=3.0, hidden=8, num_features=32)
    logits, labels = torch.randn(10), (torch.rand(10) > 0.5).float()
    torch.testing.assert_close(head.loss(logits, labels), binary_focal_loss(logits, labels, 3.0))


def test_sngp_probability_is_the_mean_field_of_its_predictive() -> None:
    x, y = _toy()
    head = SNGPHead(6, hidden=16, num_features=128).double()
    head.fit(x.double(), y.double(), FitSettings(epochs=3))
    mean, var = head.predictive(x[:8].double())
    expected = torch.sigmoid(mean / torch.sqrt(1 + torch.pi / 8 * var))
    torch.testing.assert_close(head.predict_proba(x[:8].double()), expected, rtol=1e-12, atol=0)
    assert torch.all(var > 0) and torch.all(var < 1.0)  # below the prior variance (about 1)


@pytest.mark.parametrize("form", ["corrected", "paper"])
def test_momentum_precision_with_the_default_momentum(form: str) -> None:
    x, y = _toy(800)
    options = FitSettings(epochs=4, batch_size=50, lr=1e-3)
    head = SNGPHead(6, hidden=16, num_features=64, precision_update="momentum", momentum_form=form)
    head = head.double()
    assert head.momentum == 0.999
    head.fit(x.double(), y.double(), options)
    momentum = head.gp.output.precision.clone()
    head.compute_precision(x.double())
    exact = head.gp.output.precision
    error = float(torch.linalg.norm(momentum - exact) / torch.linalg.norm(exact))
    if form == "corrected":
        # features move during training, so the running mean over 64 steps lags a little
        assert error < 0.15
    else:
        # eq. 5 verbatim: the prior has decayed to 0.999^64 and the data term tends to one
        # batch's worth (50 of 800 items), far below the exact pass
        trace_ratio = float(torch.trace(momentum) / torch.trace(exact))
        assert trace_ratio < 0.5 and error > 0.5


def test_gamma_below_one_is_rejected() -> None:
    for gamma in (0.0, 0.5, float("nan")):
        with pytest.raises(InputDataError, match="gamma"):
            GPFHead(6, gamma=gamma, hidden=8, num_features=16)
        with pytest.raises(InputDataError, match="gamma"):
            build_head("gpf", 6, gamma=gamma)
    GPFHead(6, gamma=1.0, hidden=8, num_features=16)


@pytest.mark.parametrize("kind", list(HeadKind))
def test_probability_is_the_calibrated_mean_field_of_logit_predictive(kind: HeadKind) -> None:
    x, y = _toy(200)
    options = {"num_features": 64} if kind.value in ("sngp", "gpf") else {}
    head = build_head(kind, 6, hidden=8, **options)
    head.fit(x, y, FitSettings(epochs=2, batch_size=50))
    mean, variance = head.logit_predictive(x[:20])
    factor = 0.7
    if hasattr(head, "mean_field_factor"):
        head.mean_field_factor = factor  # type: ignore[attr-defined]
    else:
        torch.testing.assert_close(variance, torch.zeros(20), rtol=0, atol=0)
    head.temperature = 1.7  # type: ignore[attr-defined]
    expected = torch.sigmoid(mean / (1.7 * torch.sqrt(1 + factor * variance)))
    torch.testing.assert_close(head.predict_proba(x[:20]), expected, rtol=1e-5, atol=1e-6)


def test_deterministic_posterior_can_be_sampled_by_botorch() -> None:
    from botorch.posteriors import GPyTorchPosterior

    x, y = _toy(200)
    head = build_head("deterministic", 6, hidden=8)
    head.fit(x, y, FitSettings(epochs=1))
    mvn = head.posterior(x[:12].reshape(3, 4, 6))
    draws = GPyTorchPosterior(mvn).rsample(torch.Size([5]))
    assert draws.shape == (5, 3, 4, 1)
    # draws scatter by sqrt(1e-6) = 0.001 around the logits: 6 sd bounds them
    torch.testing.assert_close(
        draws.squeeze(-1) - mvn.mean, torch.zeros(5, 3, 4), rtol=0, atol=6e-3
    )
    torch.testing.assert_close(
        mvn.variance, torch.full((3, 4), POINT_MASS_VARIANCE), rtol=1e-6, atol=0
    )


def test_ensemble_trained_in_lockstep_equals_members_trained_alone() -> None:
    x, y = _toy(300)
    options = FitSettings(epochs=3, batch_size=64, seed=4)
    ensemble = DeepEnsembleHead(6, num_members=2, hidden=8, dropout=0.2, seed=1)
    epochs_seen: list[int] = []
    ensemble.fit(x, y, options, on_epoch_end=epochs_seen.append)
    assert epochs_seen == [1, 2, 3]
    for m, member in enumerate(ensemble.members):
        alone = MLPHead(6, hidden=8, dropout=0.2, seed=1 + m)
        alone.fit(x, y, FitSettings(epochs=3, batch_size=64, seed=4 + m))
        for a, b in zip(alone.parameters(), member.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_unknown_head_raises() -> None:
    with pytest.raises(InputDataError, match="head"):
        build_head("gaussian_process", 3)
