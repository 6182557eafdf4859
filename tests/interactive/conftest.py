"""Run these tests on one intra-op thread.

The strategies and the Laplace updates work on tiny matrices; on a busy 2-core machine every
op that torch dispatches to its thread pool (``logsigmoid``, ``cholesky``, small ``matmul``)
waits milliseconds for a second thread, which makes the tests 100x slower without testing
anything more. The previous setting is restored after each test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
