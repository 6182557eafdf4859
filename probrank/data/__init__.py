"""TREC files, padded ranking tensors and dataset loaders.

:class:`RankingBatch` (which needs torch) is imported on first use, so that reading and
evaluating TREC files never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probrank.data.paths import shared_data_dir
from probrank.data.trec import OnDuplicate, Qrels, Run, trec_order

if TYPE_CHECKING:
    from probrank.data.batch import RankingBatch

__all__ = ["OnDuplicate", "Qrels", "RankingBatch", "Run", "shared_data_dir", "trec_order"]


def __getattr__(name: str) -> Any:
    if name == "RankingBatch":
        from probrank.data.batch import RankingBatch

        return RankingBatch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
