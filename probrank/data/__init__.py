"""TREC files, padded ranking tensors and dataset loaders."""

from probrank.data.batch import RankingBatch
from probrank.data.paths import shared_data_dir
from probrank.data.trec import OnDuplicate, Qrels, Run, trec_order

__all__ = ["OnDuplicate", "Qrels", "RankingBatch", "Run", "shared_data_dir", "trec_order"]
