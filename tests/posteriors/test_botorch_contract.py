"""BoTorch's ``Model`` contract on both rankers' ``.botorch_model()`` (issue 31):
``subset_output``, ``train_inputs``, a clear error from gradient-based ``optimize_acqf``, and
BoTorch's own acquisition functions that apply to a discrete single-output model, run through
``optimize_acqf_discrete`` over the candidates."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import (
    ExpectedImprovement,
    LogExpectedImprovement,
    PosteriorMean,
    PosteriorStandardDeviation,
    ProbabilityOfImprovement,
    UpperConfidenceBound,
    qExpectedImprovement,
    qKnowledgeGradient,
    qLogExpectedImprovement,
    qLogNoisyExpectedImprovement,
    qNoisyExpectedImprovement,
    qProbabilityOfImprovement,
    qSimpleRegret,
    qUpperConfidenceBound,
)
from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance
from botorch.acquisition.preference import (
    AnalyticExpectedUtilityOfBestOption,
    qExpectedUtilityOfBestOption,
)
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.sampling import SobolQMCNormalSampler
from botorch.sampling.pairwise_samplers import PairwiseSobolQMCNormalSampler

from probrank.acquisition import PendingExpectedUtilityOfBestOption
from probrank.exceptions import InputDataError
from probrank.models.gpf_ranker.botorch import head_model
from probrank.models.interactive import InteractiveRanker, InteractiveRankerSettings, WarmStart
from probrank.models.interactive.warmstart import new_net
from probrank.nn.heads import FitSettings, SNGPHead
from probrank.posteriors.preference import DISCRETE_ONLY, PreferenceUtilityModel
from tests.encoders.conftest import WORDS
from tests.models.conftest import tiny_bert_path, tiny_encoder  # noqa: F401 -- fixtures

F64 = torch.float64

pytestmark = pytest.mark.filterwarnings("ignore:.*has known numerical issues:UserWarning")


@pytest.fixture(scope="module")
def gpf_model() -> PreferenceUtilityModel:
    """What ``GPFRanker.botorch_model(features)`` returns: a fitted SNGP head's model over
    six candidate rows."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(80, 5, generator=generator)
    y = (x[:, 0] + 0.3 * torch.randn(80, generator=generator) > 0).float()
    head = SNGPHead(5, hidden=8, num_features=32, seed=0)
    head.fit(x, y, FitSettings(epochs=3, batch_size=16, seed=0))
    rows = torch.randn(6, 5, generator=generator, dtype=F64)
    return head_model(head, 5, rows)


@pytest.fixture(scope="module")
def interactive_model(tiny_encoder) -> PreferenceUtilityModel:  # noqa: F811
    """``InteractiveRanker.botorch_model(question, candidates)`` of a Laplace ranker over the
    tiny random BERT (a random warm-start network of the card's shape)."""
    torch.manual_seed(0)
    settings = InteractiveRankerSettings()
    net = new_net(4 * 32, settings.warm_start)
    ranker = InteractiveRanker.from_warm_start(
        WarmStart(net=net, members=[net]), settings, encoder=tiny_encoder
    )
    candidates = [" ".join(WORDS[(3 * i + j) % len(WORDS)] for j in range(6)) for i in range(6)]
    return ranker.botorch_model(" ".join(WORDS[:5]), candidates, seed=0)


MODELS = ["gpf_model", "interactive_model"]


def _model(request: pytest.FixtureRequest, name: str) -> PreferenceUtilityModel:
    return request.getfixturevalue(name)


@pytest.mark.parametrize("name", MODELS)
def test_subset_output_and_train_inputs(request: pytest.FixtureRequest, name: str) -> None:
    model = _model(request, name)
    assert model.subset_output([0]) is model
    with pytest.raises(InputDataError, match="one output"):
        model.subset_output([1])
    (inputs,) = model.train_inputs
    assert inputs is model.datapoints and inputs.shape == (6, model.datapoints.shape[-1])
    assert model.num_outputs == 1


@pytest.mark.parametrize("name", MODELS)
def test_optimize_acqf_says_the_model_is_discrete(
    request: pytest.FixtureRequest, name: str
) -> None:
    model = _model(request, name)
    x = model.datapoints
    bounds = torch.stack([x.min(0).values, x.max(0).values])
    with pytest.raises(InputDataError) as info:
        optimize_acqf(
            PosteriorMean(model), bounds, q=1, num_restarts=2, raw_samples=8,
            options={"seed": 0, "maxiter": 2},
        )  # fmt: skip
    message = str(info.value)
    assert message == DISCRETE_ONLY and "\n" not in message
    assert "optimize_acqf_discrete" in message and "discrete set of candidates" in message


def _one_point(model: PreferenceUtilityModel) -> list[object]:
    best = float(model.posterior(model.datapoints).mean.max())
    sampler = SobolQMCNormalSampler(torch.Size([64]), seed=0)
    x = model.datapoints
    return [
        ExpectedImprovement(model, best_f=best),
        LogExpectedImprovement(model, best_f=best),
        ProbabilityOfImprovement(model, best_f=best),
        UpperConfidenceBound(model, beta=2.0),
        PosteriorMean(model),
        PosteriorStandardDeviation(model),
        qExpectedImprovement(model, best_f=best, sampler=sampler),
        qLogExpectedImprovement(model, best_f=best, sampler=sampler),
        qNoisyExpectedImprovement(model, X_baseline=x, sampler=sampler, prune_baseline=False),
        qLogNoisyExpectedImprovement(model, X_baseline=x, sampler=sampler, prune_baseline=False),
        qProbabilityOfImprovement(model, best_f=best, sampler=sampler),
        qUpperConfidenceBound(model, beta=2.0, sampler=sampler),
        qSimpleRegret(model, sampler=sampler),
    ]


@pytest.mark.parametrize("name", MODELS)
def test_botorchs_acquisition_functions_choose_among_the_candidates(
    request: pytest.FixtureRequest, name: str
) -> None:
    model = _model(request, name)
    x = model.datapoints
    for acq in _one_point(model):
        label = type(acq).__name__
        best, value = optimize_acqf_discrete(acq, q=1, choices=x)
        assert best.shape == (1, x.shape[-1]) and bool(torch.isfinite(value).all()), label
        values = acq(x.unsqueeze(-2))
        torch.testing.assert_close(value.reshape(()), values.max(), msg=label)
        if label.startswith("q"):  # sequential q = 2 with X_pending
            pair, _ = optimize_acqf_discrete(acq, q=2, choices=x)
            assert pair.shape == (2, x.shape[-1]) and not torch.equal(pair[0], pair[1]), label
            assert acq.X_pending is None, label  # put back as it was


@pytest.mark.parametrize("name", MODELS)
def test_preference_acquisition_functions_on_pairs(
    request: pytest.FixtureRequest, name: str
) -> None:
    model = _model(request, name)
    x = model.datapoints
    pairs = torch.stack([x[[i, j]] for i in range(6) for j in range(i + 1, 6)])
    eubo = AnalyticExpectedUtilityOfBestOption(pref_model=model)
    qeubo = qExpectedUtilityOfBestOption(
        pref_model=model, sampler=SobolQMCNormalSampler(torch.Size([256]), seed=0)
    )
    torch.testing.assert_close(qeubo(pairs), eubo(pairs), rtol=0.05, atol=0.05)
    pairwise = PairwiseSobolQMCNormalSampler(torch.Size([4]), seed=0)
    kg = qKnowledgeGradient(model, num_fantasies=4, sampler=pairwise)
    kg_x = torch.cat([pairs[:3], x[:4].expand(3, 4, x.shape[-1])], dim=-2)  # pair + fantasies
    assert bool(torch.isfinite(kg(kg_x)).all())
    one = PairwiseSobolQMCNormalSampler(torch.Size([1]), seed=0)  # qNIPV: one fantasy
    nipv = qNegIntegratedPosteriorVariance(model, mc_points=x, sampler=one)
    assert bool(torch.isfinite(nipv(pairs)).all())


@pytest.mark.parametrize("name", MODELS)
def test_the_discrete_optimiser_picks_an_eubo_pair_with_pending_points(
    request: pytest.FixtureRequest, name: str
) -> None:
    """``optimize_acqf_discrete(EUBO, q=2)``: BoTorch's analytic EUBO has no ``X_pending``;
    probrank's :class:`PendingExpectedUtilityOfBestOption` has, and gives the best-mean
    candidate and its best challenger."""
    model = _model(request, name)
    x = model.datapoints
    with pytest.raises(AttributeError, match="X_pending"):  # BoTorch's own, unchanged
        optimize_acqf_discrete(AnalyticExpectedUtilityOfBestOption(pref_model=model), 2, x)
    acq = PendingExpectedUtilityOfBestOption(model)
    pair, values = optimize_acqf_discrete(acq, q=2, choices=x)
    mean = model.posterior(x).mean.squeeze(-1)
    first = int(mean.argmax())
    torch.testing.assert_close(pair[0], x[first])
    eubo = AnalyticExpectedUtilityOfBestOption(pref_model=model)
    others = [i for i in range(6) if i != first]
    scores = eubo(torch.stack([torch.stack([x[i], x[first]]) for i in others]))
    torch.testing.assert_close(pair[1], x[others[int(scores.argmax())]])
    torch.testing.assert_close(values[1], scores.max())
    assert acq.X_pending is None
    torch.testing.assert_close(acq(x[[0, 1]].unsqueeze(0)), eubo(x[[0, 1]].unsqueeze(0)))
