"""optimize_acqf_discrete over open pairs: the brute-force argmax among unasked pairs, never a
pair asked before (a qEUBO loop re-asks pairs without it), challengers avoid the incumbent's
partners, and an exhausted set raises."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.acquisition.preference import (
    AnalyticExpectedUtilityOfBestOption,
    qExpectedUtilityOfBestOption,
)
from botorch.sampling import SobolQMCNormalSampler

from probrank.acquisition import (
    ExhaustedPairsError,
    open_pairs,
    optimize_acqf_challenger,
    optimize_acqf_pairs,
)
from probrank.exceptions import InputDataError
from probrank.posteriors import BradleyTerryLaplace

F64 = torch.float64


def _model(n: int = 6) -> BradleyTerryLaplace:
    x = torch.randn(n, 3, dtype=F64)
    return BradleyTerryLaplace.from_features(x, torch.linspace(-1, 1, n, dtype=F64))


def test_open_pairs_leave_out_asked_pairs_in_either_order() -> None:
    pairs = open_pairs(4, [(1, 0), (2, 3), (0, 1)])
    assert pairs.tolist() == [[0, 2], [0, 3], [1, 2], [1, 3]]
    with pytest.raises(ExhaustedPairsError):
        open_pairs(3, [(0, 1), (2, 0), (1, 2)])
    with pytest.raises(InputDataError, match="different candidates"):
        open_pairs(3, [(1, 1)])


def test_best_open_pair_is_the_brute_force_argmax() -> None:
    bt = _model()
    model, x = bt.botorch_model(), bt.datapoints
    acq = AnalyticExpectedUtilityOfBestOption(pref_model=model)
    asked = [(0, 5), (4, 5)]
    (i, j), value = optimize_acqf_pairs(acq, x, asked)
    pairs = open_pairs(6, asked)
    values = acq(x[pairs])
    best = int(values.argmax())
    assert (i, j) == tuple(pairs[best].tolist())
    torch.testing.assert_close(value, values[best])


def test_a_qeubo_loop_never_re_asks_a_pair() -> None:
    bt = _model(5)
    x = bt.datapoints
    asked: list[tuple[int, int]] = []
    repeats_without_exclusion = 0
    for round_ in range(10):  # all 10 pairs of 5 candidates, each once
        model = bt.botorch_model()
        sampler = SobolQMCNormalSampler(torch.Size([64]), seed=round_)
        acq = qExpectedUtilityOfBestOption(pref_model=model, sampler=sampler)
        every = open_pairs(5)
        unrestricted = tuple(every[int(acq(x[every]).argmax())].tolist())
        repeats_without_exclusion += unrestricted in asked
        (i, j), _ = optimize_acqf_pairs(acq, x, asked)
        assert (i, j) not in asked
        asked.append((i, j))
        bt.update(i, j)  # the user always prefers the first
    assert sorted(asked) == [tuple(p) for p in open_pairs(5).tolist()]
    assert repeats_without_exclusion > 0  # the plain argmax re-asks pairs
    with pytest.raises(ExhaustedPairsError):
        optimize_acqf_pairs(acq, x, asked)


def test_challenger_avoids_the_incumbent_and_its_partners() -> None:
    bt = _model()
    model, x = bt.botorch_model(), bt.datapoints
    acq = LogExpectedImprovement(model, best_f=float(bt.posterior().mean.max()))
    challenger, value = optimize_acqf_challenger(acq, x, 2, [(2, 0), (3, 2), (1, 4)])
    values = acq(x.unsqueeze(-2))
    allowed = [1, 4, 5]
    expected = allowed[int(values[allowed].argmax())]
    assert challenger == expected
    torch.testing.assert_close(value, values[expected])
    with pytest.raises(ExhaustedPairsError):
        optimize_acqf_challenger(acq, x, 0, [(0, k) for k in range(1, 6)])
