"""EnsembleBatches: per-group batch sizes, one fresh permutation per member and epoch."""

from __future__ import annotations

import math

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.inference.ensemble_batches import EnsembleBatches


def _rows_seen(batches: EnsembleBatches, periods: int, seed: int = 0) -> list[list[list[int]]]:
    """Per step, per member: the data rows (values of the 'ids' tensor) in its batch."""
    generator = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(periods):
        for ids, mask, _scale, _groups in batches(generator):
            steps.append([[int(v) for v, k in zip(row, keep, strict=True) if k]
                          for row, keep in zip(ids, mask, strict=True)])  # fmt: skip
    return steps


def test_every_member_sees_each_row_once_per_own_epoch() -> None:
    base, n, sizes = 3, 10, [1, 3, 4, 10]
    ids = torch.arange(n).repeat(base, 1)  # G x N: the row index itself
    batches = EnsembleBatches([ids], torch.ones(base, n, dtype=torch.bool), sizes)
    assert batches.period == 1 and batches.members == base * len(sizes)
    periods = 24  # enough steps for 2 epochs of the smallest batch size (10 steps each)
    steps = _rows_seen(batches, periods)
    for g, size in enumerate(sizes):
        per_epoch = math.ceil(n / size)
        for i in range(base):
            member = g * base + i
            seen = [step[member] for step in steps]
            assert all(len(rows) <= size for rows in seen)
            for epoch in range(periods // per_epoch):
                chunk = seen[epoch * per_epoch : (epoch + 1) * per_epoch]
                assert sorted(r for rows in chunk for r in rows) == list(range(n))
            if size == 3:  # 10 rows in batches of 3: the epoch's last batch has 1 row
                assert [len(rows) for rows in seen[:4]] == [3, 3, 3, 1]


def test_members_get_their_own_orders_and_the_seed_repeats() -> None:
    ids = torch.arange(8).repeat(2, 1)
    batches = EnsembleBatches([ids], torch.ones(2, 8, dtype=torch.bool), [2])
    first = _rows_seen(batches, 1, seed=3)
    again = _rows_seen(EnsembleBatches([ids], torch.ones(2, 8, dtype=torch.bool), [2]), 1, seed=3)
    assert first == again
    assert [step[0] for step in first] != [step[1] for step in first]


def test_mask_scale_and_groups() -> None:
    base, n = 2, 6
    x = torch.randn(base, n, 5, dtype=torch.float64)
    mask = torch.ones(base, n, dtype=torch.bool)
    mask[1, 4:] = False  # member 1 has 4 real rows
    batches = EnsembleBatches([x], mask, [2, 6])
    generator = torch.Generator().manual_seed(0)
    for xb, mb, scale, groups in batches(generator):
        assert xb.shape == (4, 6, 5) and mb.shape == (4, 6) and xb.dtype == torch.float64
        assert groups == ((2, 2), (2, 6))
        assert not mb[:2, 2:].any()  # batch size 2: rows beyond 2 are padding
        rows = mb.sum(-1).clamp_min(1).double()
        expected = torch.tensor([6.0, 4.0, 6.0, 4.0], dtype=torch.float64) / rows
        torch.testing.assert_close(scale[:, 0], expected)
        assert bool((scale == scale[:, :1]).all())
        assert int(mb[3].sum()) == 4  # batch size 6 over member 1's 4 real rows


def test_bad_input() -> None:
    with pytest.raises(InputDataError):
        EnsembleBatches([torch.zeros(2, 5)], torch.ones(2, 5, dtype=torch.bool), [6])
    with pytest.raises(InputDataError):
        EnsembleBatches([torch.zeros(3, 5)], torch.ones(2, 5, dtype=torch.bool), [2])
    with pytest.raises(InputDataError):
        EnsembleBatches([torch.zeros(2, 5)], torch.ones(2, 5, dtype=torch.bool), [])
