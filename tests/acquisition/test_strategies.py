"""Pair-selection strategies: the rules, no repeated pair, exhaustion, determinism."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal

from probrank.acquisition.ei import expected_improvement
from probrank.acquisition.pairs import (
    ExhaustedPairsError,
    JointGaussian,
    OpenPairStrategy,
    best_open_pair,
)
from probrank.acquisition.select import STRATEGIES, Strategy, select_pair
from probrank.acquisition.thompson import joint_draws
from probrank.exceptions import InputDataError
from probrank.testing import FixedPosteriorModel, random_mvn


def _posterior(n: int, rank: int | None, seed: int) -> MultivariateNormal:
    return random_mvn(n, rank=rank, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("strategy", list(Strategy))
@pytest.mark.parametrize("rank", [None, 2])
def test_no_pair_is_offered_twice_and_exhaustion_raises(
    strategy: Strategy, rank: int | None
) -> None:
    n = 7
    posterior = _posterior(n, rank, seed=1)
    generator = torch.Generator().manual_seed(3)
    asked: list[tuple[int, int]] = []
    for step in range(n * (n - 1) // 2):
        # pass the asked pairs in both orders: (i, j) and (j, i) are the same question
        given = [(b, a) if k % 2 else (a, b) for k, (a, b) in enumerate(asked)]
        i, j = select_pair(posterior, given, strategy, generator)
        assert i != j and 0 <= i < n and 0 <= j < n
        assert (min(i, j), max(i, j)) not in {(min(p), max(p)) for p in asked}, step
        asked.append((i, j))
    with pytest.raises(ExhaustedPairsError, match="all 21 pairs of 7 candidates"):
        select_pair(posterior, asked, strategy, generator)


@pytest.mark.parametrize("strategy", list(Strategy))
def test_same_seed_same_pairs(strategy: Strategy) -> None:
    posterior = _posterior(10, None, seed=2)
    runs = []
    for _ in range(2):
        generator = torch.Generator().manual_seed(42)
        asked: list[tuple[int, int]] = []
        for _ in range(8):
            asked.append(select_pair(posterior, asked, strategy, generator))
        runs.append(asked)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("strategy", [Strategy.THOMPSON, Strategy.RANDOM])
def test_stochastic_strategies_depend_on_the_seed(strategy: Strategy) -> None:
    posterior = _posterior(12, None, seed=2)
    picks = {
        select_pair(posterior, [], strategy, torch.Generator().manual_seed(seed))
        for seed in range(20)
    }
    assert len(picks) > 1


def test_ei_pairs_the_best_mean_with_the_largest_expected_improvement() -> None:
    posterior = _posterior(9, None, seed=4)
    best, ei = expected_improvement(posterior)
    assert best == int(torch.argmax(posterior.mean))
    pair = select_pair(posterior, [], "ei")
    assert pair == (best, int(torch.argmax(ei)))
    # with the top challenger asked, the next one in EI order
    second = int(torch.argsort(ei, descending=True)[1])
    assert select_pair(posterior, [pair], "ei") == (best, second)
    # once every pair with the incumbent is asked, the incumbent is the next best mean
    asked = [(best, x) for x in range(9) if x != best]
    runner_up = int(torch.argsort(posterior.mean, descending=True)[1])
    i, j = select_pair(posterior, asked, "ei")
    assert i == runner_up
    _, ei_runner_up = expected_improvement(posterior, best=runner_up)
    ei_runner_up[best] = -1.0
    assert j == int(torch.argmax(ei_runner_up))


def test_ei_uses_the_joint_covariance() -> None:
    # candidate 1 has the larger variance, but it moves with the incumbent; candidate 2 does not
    cov = torch.tensor([[1.0, 0.99, 0.0], [0.99, 1.0, 0.0], [0.0, 0.0, 0.5]], dtype=torch.float64)
    mean = torch.tensor([1.0, 0.5, 0.5], dtype=torch.float64)
    assert select_pair(MultivariateNormal(mean, cov), [], "ei") == (0, 2)


def test_eubo_picks_the_argmax_of_botorchs_analytic_eubo() -> None:
    posterior = _posterior(10, 3, seed=5)
    model = FixedPosteriorModel(posterior)
    pairs = torch.combinations(torch.arange(10), 2)
    with torch.no_grad():
        values = AnalyticExpectedUtilityOfBestOption(pref_model=model)(
            pairs.to(torch.float64).unsqueeze(-1)
        )
    order = torch.argsort(values, descending=True)
    top = tuple(int(v) for v in pairs[order[0]])
    assert select_pair(posterior, [], "eubo") == top
    assert select_pair(posterior, [top], "eubo") == tuple(int(v) for v in pairs[order[1]])


def test_unc_picks_the_two_candidates_closest_to_one_half() -> None:
    mean = torch.tensor([3.0, -0.2, 0.05, -2.0, 0.4, 1.0], dtype=torch.float64)
    posterior = MultivariateNormal(mean, torch.eye(6, dtype=torch.float64))
    assert select_pair(posterior, [], "unc") == (1, 2)
    # brute force over the open pairs for the documented rule
    distance = (torch.sigmoid(mean) - 0.5).abs()
    asked = [(1, 2), (2, 4)]
    open_pairs = [p for p in itertools.combinations(range(6), 2) if p not in asked]
    expected = min(open_pairs, key=lambda p: float(distance[p[0]] + distance[p[1]]))
    assert select_pair(posterior, asked, "unc") == expected == (1, 4)


def test_thompson_is_the_argmax_of_two_joint_draws() -> None:
    posterior = _posterior(8, None, seed=6)
    draws = joint_draws(posterior, 2, torch.Generator().manual_seed(7))
    first = int(torch.argmax(draws[0]))
    masked = draws[1].clone()
    masked[first] = -math.inf
    pair = select_pair(posterior, [], "thompson", torch.Generator().manual_seed(7))
    assert pair == (first, int(torch.argmax(masked)))


@pytest.mark.parametrize("rank", [None, 3])
def test_joint_draws_have_the_posterior_moments(rank: int | None) -> None:
    posterior = _posterior(5, rank, seed=8)
    if rank is None:  # make the dense covariance singular: the eigh root must cope
        root = torch.randn(5, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        from linear_operator.operators import DenseLinearOperator

        posterior = MultivariateNormal(posterior.mean, DenseLinearOperator(root @ root.T))
    draws = joint_draws(posterior, 200_000, torch.Generator().manual_seed(9))
    cov = posterior.covariance_matrix
    stderr = (torch.diagonal(cov) / draws.shape[0]).sqrt()
    assert torch.all((draws.mean(0) - posterior.mean).abs() <= 5 * stderr + 1e-12)
    torch.testing.assert_close(torch.cov(draws.T), cov, rtol=0.0, atol=0.03 * float(cov.max()))


def test_random_pairs_are_uniform_over_the_open_pairs() -> None:
    posterior = _posterior(5, None, seed=10)
    asked = [(0, 1), (2, 3)]
    generator = torch.Generator().manual_seed(11)
    counts: dict[tuple[int, int], int] = {}
    draws = 4000
    for _ in range(draws):
        pair = select_pair(posterior, asked, "random", generator)
        counts[pair] = counts.get(pair, 0) + 1
    assert set(counts) == {p for p in itertools.combinations(range(5), 2) if p not in asked}
    expected = draws / 8
    sd = math.sqrt(draws * (1 / 8) * (7 / 8))
    assert all(abs(c - expected) <= 5 * sd for c in counts.values()), counts


def test_inputs_are_validated() -> None:
    posterior = _posterior(4, None, seed=12)
    with pytest.raises(InputDataError, match="strategy must be one of"):
        select_pair(posterior, [], "ucb")
    with pytest.raises(InputDataError, match="two different candidates"):
        select_pair(posterior, [(1, 1)])
    with pytest.raises(InputDataError, match="out of range"):
        select_pair(posterior, [(0, 4)])
    with pytest.raises(InputDataError, match="must be an integer"):
        select_pair(posterior, [(0.0, 1)])  # type: ignore[list-item]
    with pytest.raises(InputDataError, match="one joint MultivariateNormal"):
        select_pair(random_mvn(3).expand(torch.Size([2])), [])
    with pytest.raises(InputDataError, match="at least 2 candidates"):
        select_pair(random_mvn(1), [])
    assert select_pair(posterior, [], "EUBO") == select_pair(posterior, [], Strategy.EUBO)


def test_botorch_posterior_and_custom_strategies_are_accepted() -> None:
    posterior = _posterior(6, 2, seed=13)
    wrapped = GPyTorchPosterior(posterior)
    for strategy in Strategy:
        g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
        assert select_pair(wrapped, [], strategy, g1) == select_pair(posterior, [], strategy, g2)

    def first_open(
        posterior: object, asked: object = (), generator: object = None
    ) -> tuple[int, int]:
        return (0, 5)

    assert select_pair(posterior, [], first_open) == (0, 5)

    class HighestVariancePair(OpenPairStrategy):
        def choose(
            self, gaussian: JointGaussian, open_pairs: torch.Tensor, generator: object
        ) -> tuple[int, int]:
            variance = torch.diagonal(gaussian.covariance)
            return best_open_pair(variance.unsqueeze(-1) + variance.unsqueeze(-2), open_pairs)

    # the base class validates the posterior and the asked pairs and hides asked pairs
    top = torch.topk(torch.diagonal(posterior.covariance_matrix), 2).indices.sort().values
    first = select_pair(posterior, [], HighestVariancePair())
    assert first == tuple(int(i) for i in top)
    assert select_pair(posterior, [first], HighestVariancePair()) != first
    assert repr(HighestVariancePair()) == "HighestVariancePair()"
    with pytest.raises(InputDataError, match="two different"):
        select_pair(posterior, [(1, 1)], HighestVariancePair())
    # a BoTorch model's posterior for one `1 x q x 1` batch
    batched = FixedPosteriorModel(posterior).posterior(torch.arange(6.0).view(1, 6, 1).double())
    assert select_pair(batched, [], "eubo") == select_pair(posterior, [], "eubo")
    assert set(STRATEGIES) == set(Strategy)


def test_fifty_candidates_all_strategies_one_call_each() -> None:
    posterior = _posterior(50, 20, seed=14)
    asked = [(0, 1), (3, 4)]
    for strategy in Strategy:
        i, j = select_pair(posterior, asked, strategy, torch.Generator().manual_seed(0))
        assert i != j and (min(i, j), max(i, j)) not in asked
