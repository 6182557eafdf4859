"""A query with a list of judged candidates: the common shape of the QA and dialog loaders.

The class lives in :mod:`probrank.data.candidates` (with its DataFrame, JSONL and TREC
constructors); this module keeps the loaders' import path.
"""

from __future__ import annotations

from probrank.data.candidates import CandidateList, num_pairs, pair_texts

__all__ = ["CandidateList", "num_pairs", "pair_texts"]
