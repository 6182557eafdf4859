"""One candidate posterior: every posterior (BradleyTerryLaplace included) is a
CandidateSetPosterior with a BoTorch model that conditions; the shared Newton solver's
predictive equals the GP-conditional closed form with K^-1; the last-layer Laplace conditions
exactly (equal to the weight-space Laplace of the last-layer deviation); UtilityModel on a head
conditions instead of raising."""

from __future__ import annotations

import pytest
import torch

from probrank.nn.heads import FitSettings, SNGPHead
from probrank.posteriors import (
    BradleyTerryLaplace,
    CandidateSetPosterior,
    HeadLaplacePosterior,
    PreferenceModel,
    PreferenceUtilityModel,
    UtilityModel,
)
from probrank.posteriors.newton import Link, difference_rows, laplace_fit
from tests.posteriors.conftest import KINDS, N, build, features

F64 = torch.float64


@pytest.mark.parametrize("kind", [*KINDS, "bradley_terry", "head"])
def test_every_posterior_is_the_one_candidate_posterior(kind: str, nets) -> None:  # type: ignore[no-untyped-def]
    x = features(N, 99)
    if kind == "bradley_terry":
        posterior: CandidateSetPosterior = BradleyTerryLaplace.from_features(x)
    elif kind == "head":
        head = SNGPHead(x.shape[-1], hidden=8, num_features=16).double().eval()
        posterior = HeadLaplacePosterior(head.posterior, x)
    else:
        posterior = build(kind, nets)
    assert isinstance(posterior, CandidateSetPosterior)
    assert isinstance(posterior, PreferenceModel)
    model = posterior.botorch_model()
    assert isinstance(model, PreferenceUtilityModel)
    torch.testing.assert_close(model.datapoints, x)
    conditioned = model.condition_on_observations(x[:2], torch.tensor([[1, 0]]))
    assert conditioned.members[0].comparisons == [(1, 0)]  # type: ignore[attr-defined]
    assert posterior.comparisons == []  # the original is left alone


def test_newton_predictive_equals_the_gp_conditional_with_the_inverse_kernel() -> None:
    generator = torch.Generator().manual_seed(0)
    z = torch.randn(7, 2, generator=generator, dtype=F64)
    k_all = torch.exp(-0.5 * torch.cdist(z, z) ** 2) + 1e-6 * torch.eye(7, dtype=F64)
    m_all = torch.randn(7, generator=generator, dtype=F64)
    k, m = k_all[:5, :5], m_all[:5]
    rows = difference_rows([(0, 1), (2, 1), (4, 3), (0, 4)], 5, scale=0.5)
    fit = laplace_fit(m, k, rows, Link.PROBIT)
    sigma = fit.covariance()
    # the Laplace covariance is (K^-1 + D^T Lambda D)^-1
    w = rows.T @ torch.diag(fit.sqrt_lambda**2) @ rows
    torch.testing.assert_close(
        sigma, torch.linalg.inv(torch.linalg.inv(k) + w), rtol=1e-7, atol=1e-9
    )
    mean, covariance = fit.predictive(m_all[5:], k_all[5:, :5], k_all[5:, 5:])
    k_inv = torch.linalg.inv(k)
    cross = k_all[5:, :5]
    expected_mean = m_all[5:] + cross @ k_inv @ (fit.mode - m)
    expected_cov = k_all[5:, 5:] - cross @ k_inv @ cross.T + cross @ k_inv @ sigma @ k_inv @ cross.T
    torch.testing.assert_close(mean, expected_mean, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(covariance, expected_cov, rtol=1e-6, atol=1e-8)


def test_last_layer_laplace_conditions_exactly(nets) -> None:  # type: ignore[no-untyped-def]
    """The last-layer Laplace after judgements equals the weight-space Laplace of ``delta``
    (``f = m(x) + phi(x)^T delta``, ``delta ~ N(0, I / lambda)``) refitted from scratch."""
    posterior = build("laplace", nets)  # prior_precision 0.5, residual 0.2, scale 0.05
    x = posterior.features
    judged = [(0, 1), (2, 1), (3, 4), (5, 0), (6, 7)]
    model = posterior.conditioned(x, torch.tensor([[0, 1]]))
    model.update_many(judged[1:])
    net = posterior.net  # type: ignore[attr-defined]
    with torch.no_grad():
        base, phi = net(x), net.embed(x)
    lam, jitter, scale = 0.5, posterior.jitter, 0.05
    rows = difference_rows(judged, N, scale)
    # reference: the residual and the nugget as an independent per-candidate variance
    residual = (0.2 + jitter) * torch.eye(N, dtype=F64)
    k = phi @ phi.T / lam + residual
    fit = laplace_fit(base, k, rows)
    reference = fit.covariance() + jitter * torch.eye(N, dtype=F64)
    got = model.posterior()
    torch.testing.assert_close(got.mean, fit.mode, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(got.covariance_matrix, reference, rtol=1e-5, atol=1e-8)


def test_utility_model_on_a_head_conditions_in_closed_form() -> None:
    x = torch.randn(60, 4, dtype=F64)
    head = SNGPHead(4, hidden=8, num_features=32, seed=0).double()
    head.fit(x, (x[:, 0] > 0).double(), FitSettings(epochs=2, batch_size=20))
    points = x[:5]
    comparisons = torch.tensor([[0, 1], [3, 2]])
    conditioned = UtilityModel(head).condition_on_observations(points, comparisons)
    direct = HeadLaplacePosterior(head.posterior, points, jitter=0.0)
    direct.update_many([(0, 1), (3, 2)])
    torch.testing.assert_close(
        conditioned.posterior(points).mean.squeeze(-1), direct.posterior().mean
    )


def test_distinct_rows_groups_exactly_equal_rows() -> None:
    from probrank.posteriors.preference import distinct_rows, identical_rows

    base = torch.randn(30, 700, dtype=F64)
    base[3, 0] = 0.0
    rows = torch.cat([base, base[[5, 3, 29]], -base[[7]]])
    rows[31, 0] = -0.0  # equal to +0.0
    distinct, index = distinct_rows(rows)
    assert distinct.shape[0] == 31
    torch.testing.assert_close(distinct[index], rows, rtol=0, atol=0)
    assert index[30] == index[5] and index[31] == index[3] and index[32] == index[29]
    same = identical_rows(rows.unsqueeze(0), base)
    expected = (rows.unsqueeze(-2) == base.unsqueeze(-3)).all(-1)
    assert torch.equal(same[0], expected)
