"""Sessions over neural posteriors: resume reproduces the next pair; fast ROUGE-L is exact."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from rouge_score.rouge_scorer import RougeScorer
from rouge_score.tokenizers import DefaultTokenizer

from probrank.inference.swag import SWAGCollector
from probrank.interactive.session import InteractiveSession
from probrank.interactive.simulate import simulate
from probrank.interactive.users import SimulatedUser, rouge_l_fmeasure
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.neural import IncrementalUpdate, MCDropoutPosterior
from probrank.posteriors.swag import SWAGUtilityPosterior, swag_parameters

N = 10


def _net() -> SiameseUtilityNet:
    return SiameseUtilityNet(6, (12, 4), dropout=0.2, seed=1).double()


def _features() -> torch.Tensor:
    return torch.randn(N, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)


def _mc_dropout() -> MCDropoutPosterior:
    return MCDropoutPosterior(
        _net(), _features(), num_samples=20, update=IncrementalUpdate(lr=0.5, seed=3)
    )


def _swag() -> SWAGUtilityPosterior:
    net = _net()
    collector = SWAGCollector(max_rank=4)
    generator = torch.Generator().manual_seed(5)
    for _ in range(6):
        params = swag_parameters(net, 2)
        collector.collect(
            [p + 0.05 * torch.randn(p.shape, generator=generator, dtype=p.dtype) for p in params]
        )
    return SWAGUtilityPosterior(net, collector.posterior(), _features(), sample_seed=1)


TRUTH = torch.linspace(-1.0, 1.0, N, dtype=torch.float64)


@pytest.mark.parametrize("factory", [_mc_dropout, _swag], ids=["mcdropout", "swag"])
@pytest.mark.parametrize("strategy", ["ei", "thompson"])
def test_resume_reproduces_the_same_state_and_next_pair(
    tmp_path: Path, factory, strategy: str
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "session.jsonl"
    user = SimulatedUser(TRUTH, 0.3, seed=7)
    session = InteractiveSession(factory(), strategy=strategy, seed=4, log_path=path)
    for _ in range(3):
        a, b = session.next_pair()
        first = user.judge(a, b).value == "1"
        session.record(*((a, b) if first else (b, a)))
    expected_pair = session.next_pair()
    expected_mean = session.posterior().mean.clone()
    session.close()
    resumed = InteractiveSession.resume(path, factory)
    assert resumed.judgements == session.judgements
    assert torch.equal(resumed.posterior().mean, expected_mean)
    assert resumed.next_pair() == expected_pair
    resumed.close()


def test_a_simulated_session_with_mc_dropout_finds_a_better_answer() -> None:
    assert int(torch.argmax(_mc_dropout().posterior().mean)) != N - 1  # not found by the prior
    accuracies = []
    for seed in range(3):
        user = SimulatedUser(TRUTH, 0.1, seed=seed)
        trace = simulate(_mc_dropout, user, "ei", rounds=6, seed=seed)
        accuracies.append([float(TRUTH[r[0]]) for r in trace.rankings])
    start = sum(a[0] for a in accuracies) / 3
    end = sum(a[-1] for a in accuracies) / 3
    assert end > start


def test_fast_rouge_l_equals_rouge_score() -> None:
    rng = random.Random(0)
    words = "the a cancer treatment of pains is and dose drugs run running ran".split()
    scorer = RougeScorer(["rougeL"], use_stemmer=True)
    tokenizer = DefaultTokenizer(use_stemmer=True)
    for _ in range(200):
        x = " ".join(rng.choice(words) for _ in range(rng.randint(0, 70)))
        y = " ".join(rng.choice(words) for _ in range(rng.randint(0, 70)))
        ours = rouge_l_fmeasure(tokenizer.tokenize(x), tokenizer.tokenize(y))
        assert ours == pytest.approx(scorer.score(x, y)["rougeL"].fmeasure, abs=1e-12)
