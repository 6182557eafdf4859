"""Shared fixtures: per-test seeding and the location of ../shared/data."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from probrank.data.paths import shared_data_dir


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread in every test: pytest-xdist already runs one worker per core, and
    oversubscribed cores made small linear algebra (``cholesky``, small ``matmul``) up to 80x
    slower on a busy machine. Set per test, so that a test whose code changes the thread count
    (an experiment's ``threads`` option) does not slow down the ones after it."""
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed() -> None:
    """Seed every RNG before each test (never at import)."""
    random.seed(0)
    np.random.seed(0)  # noqa: NPY002 -- libraries (e.g. PairwiseGP) use the legacy global RNG
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$PROBRANK_DATA``): fails under ``CI=true`` when missing,
    skips elsewhere."""
    path = shared_data_dir(must_exist=False)
    if not path.is_dir():
        message = f"shared data missing at {path} (set PROBRANK_DATA)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path
