"""GPFRanker.botorch_model conditions on judgements and labels in closed form: equal to the
weight-space Laplace refit of the RFF GP head's output weights, order-free, without touching
the head, for every head; fantasize and qKG run on it."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import qKnowledgeGradient
from botorch.sampling.pairwise_samplers import PairwiseSobolQMCNormalSampler
from torch import Tensor

from probrank.encoders.transformer import TransformerEncoder
from probrank.models import GPFRanker, GPFRankerSettings
from probrank.models.gpf_ranker.botorch import head_model
from probrank.nn.heads import FitSettings, HeadKind, SNGPHead, build_head
from probrank.posteriors.preference import PreferenceUtilityModel
from tests.models.conftest import learnable_lists

F64 = torch.float64
D = 5


@pytest.fixture()
def sngp() -> SNGPHead:
    """A float64 SNGP head (32 random features) fitted on a learnable toy label."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(80, D, generator=generator)
    y = (x[:, 0] + 0.3 * torch.randn(80, generator=generator) > 0).float()
    head = SNGPHead(D, hidden=8, num_features=32, seed=0)
    head.fit(x, y, FitSettings(epochs=3, batch_size=16, seed=0))
    return head.double().eval()


def _weight_space_refit(
    head: SNGPHead, points: Tensor, rows: Tensor, X: Tensor
) -> tuple[Tensor, Tensor]:
    """Reference: Newton over the output weights ``beta`` (L dims, dense) with the head's
    Laplace posterior ``N(beta_hat, P^-1)`` as the prior and the likelihood
    ``sum log sigmoid(rows f(points))``; the predictive mean and covariance at ``X``."""
    output = head.gp.output
    with torch.no_grad():
        phi, phi_x = head.phi(points), head.phi(X)
    bias = output.bias.detach()
    precision = output.precision.to(F64)
    beta0 = output.beta.detach().to(F64)
    beta = beta0.clone()
    j = rows @ phi  # c x L
    for _ in range(100):
        z = j @ beta + rows @ bias.expand(points.shape[0])
        grad = j.T @ torch.sigmoid(-z) - precision @ (beta - beta0)
        w = torch.sigmoid(z) * torch.sigmoid(-z)
        hessian = precision + j.T @ (w.unsqueeze(-1) * j)
        step = torch.linalg.solve(hessian, grad)
        beta = beta + step
        if float(step.abs().max()) < 1e-13:
            break
    z = j @ beta + rows @ bias.expand(points.shape[0])
    w = torch.sigmoid(z) * torch.sigmoid(-z)
    covariance = torch.linalg.inv(precision + j.T @ (w.unsqueeze(-1) * j))
    return phi_x @ beta + bias, phi_x @ covariance @ phi_x.T


def test_conditioning_equals_the_weight_space_laplace_refit(sngp: SNGPHead) -> None:
    points = torch.randn(6, D, dtype=F64)
    model = head_model(sngp, D)
    judged = torch.tensor([[0, 1], [2, 1], [3, 4], [0, 5], [5, 2]])
    labels = torch.tensor([[1.0], [0.0], [1.0], [0.0], [0.0], [1.0]], dtype=F64)
    before = {k: v.clone() for k, v in sngp.state_dict().items()}
    conditioned = model.condition_on_observations(points, judged)
    conditioned = conditioned.condition_on_observations(points, labels)
    rows = torch.zeros(11, 6, dtype=F64)
    for r, (w, ell) in enumerate(judged.tolist()):
        rows[r, w], rows[r, ell] = 1.0, -1.0
    for i, y in enumerate(labels.reshape(-1).tolist()):
        rows[5 + i, i] = 2 * y - 1
    X = torch.cat([points[:3], torch.randn(4, D, dtype=F64)])
    mean, covariance = _weight_space_refit(sngp, points, rows, X)
    posterior = conditioned.posterior(X)
    torch.testing.assert_close(posterior.mean.squeeze(-1), mean, rtol=1e-7, atol=1e-8)
    torch.testing.assert_close(posterior.covariance_matrix, covariance, rtol=1e-6, atol=1e-8)
    # the head is not refitted, and the unconditioned model is unchanged
    for key, value in sngp.state_dict().items():
        assert torch.equal(value, before[key]), key
    prior = sngp.posterior(X)
    torch.testing.assert_close(model.posterior(X).mean.squeeze(-1), prior.mean)


def test_ten_rounds_one_at_a_time_equal_all_at_once(sngp: SNGPHead) -> None:
    points = torch.randn(8, D, dtype=F64)
    generator = torch.Generator().manual_seed(1)
    rounds = [torch.randperm(8, generator=generator)[:2] for _ in range(10)]
    model = head_model(sngp, D, points)
    for pair in rounds:
        model = model.condition_on_observations(points[pair], torch.tensor([[0, 1]]))
    together = head_model(sngp, D, points).condition_on_observations(points, torch.stack(rounds))
    one, both = model.posterior(points), together.posterior(points)
    torch.testing.assert_close(one.mean, both.mean, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(one.covariance_matrix, both.covariance_matrix, rtol=1e-8, atol=1e-10)
    assert model.members[0].comparisons == [(int(a), int(b)) for a, b in rounds]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", [h.value for h in HeadKind])
def test_every_head_conditions_and_learns_the_judged_order(kind: str) -> None:
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(40, D, generator=generator)
    y = (x[:, 0] > 0).float()
    options = {"hidden": 8}
    if kind in ("sngp", "gpf"):
        options["num_features"] = 32
    head = build_head(kind, D, **options)
    head.fit(x, y, FitSettings(epochs=2, batch_size=16, seed=0))
    points = x[:4].double()
    model = head_model(head, D, jitter=1e-9)
    mean = model.posterior(points).mean.squeeze(-1)
    low, high = int(mean.argmin()), int(mean.argmax())
    judged = model.condition_on_observations(points, torch.tensor([[low, high]] * 3))
    after = judged.posterior(points).mean.squeeze(-1)
    assert isinstance(judged, PreferenceUtilityModel)
    assert float(after[low] - after[high]) > float(mean[low] - mean[high])
    variance = judged.posterior(points[[low]]).variance
    assert float(variance) <= float(model.posterior(points[[low]]).variance) + 1e-12


@pytest.mark.filterwarnings("ignore:.*has known numerical issues")
def test_gpf_ranker_fantasizes_and_runs_qkg(tiny_encoder: TransformerEncoder) -> None:
    settings = GPFRankerSettings(
        hidden=16, num_features=64, epochs=(3,), gammas=(2.0,), batch_size=32
    )
    ranker = GPFRanker(settings, tiny_encoder).fit(learnable_lists(16, seed=0))
    x = ranker.features(learnable_lists(1, seed=3)).double()  # 6 candidates
    model = ranker.botorch_model(x)
    pairs = torch.tensor([(i, j) for i in range(6) for j in range(i + 1, 6)])
    sampler = PairwiseSobolQMCNormalSampler(torch.Size([4]), seed=0)
    fantasy = model.fantasize(x[pairs[:3]], sampler)
    assert fantasy.batch_shape == (4, 3)
    # a fantasy is the model conditioned on the drawn comparison
    drawn = sampler(model.posterior(x[pairs[:3]], observation_noise=True))
    direct = model.condition_on_observations(x[pairs[0]], drawn[1, 0])
    torch.testing.assert_close(
        fantasy.posterior(x.expand(4, 3, 6, x.shape[-1])).mean[1, 0],
        direct.posterior(x).mean,
    )
    qkg = qKnowledgeGradient(
        model, num_fantasies=4, sampler=PairwiseSobolQMCNormalSampler(torch.Size([4]), seed=0)
    )
    values = qkg(torch.cat([x[pairs], x[:1].expand(len(pairs), 4, -1)], dim=-2))
    assert values.shape == (len(pairs),) and bool(torch.isfinite(values).all())
