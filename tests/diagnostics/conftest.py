"""One torch thread for the diagnostics tests: their tensors are tiny, and on a busy machine
intra-op threads only add contention (measured: 3.3 s against 0.04 s for one PPC check)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
