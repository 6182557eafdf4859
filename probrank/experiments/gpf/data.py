"""The splits of the GPF protocols: ``"dataset:split"`` names through the dataset registry, and
the pair features of a frozen encoder.

A config's ``[data]`` table names the splits (``ubuntu:train``, ``mediqa:test``,
``liveqa:test``; :func:`probrank.data.datasets.parse_split_name`) and may give each data set's
folder (``ubuntu_dir``, ``mediqa_dir``, ``liveqa_dir``) and Ubuntu's subset sizes
(``ubuntu_<split>_contexts``, ``seed``). Smoke runs keep a few lists of each split.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.data.datasets import DatasetInfo, DatasetName, parse_split_name
from probrank.experiments.gpf.config import GPFDataSettings, GPFFinetuneDataSettings

__all__ = ["SMOKE_LISTS", "SMOKE_UBUNTU_CONTEXTS", "folder_key", "load_split", "pair_features"]

SMOKE_LISTS = 8
"""Lists kept of each MEDIQA or LiveQA-Med split in smoke runs."""

SMOKE_UBUNTU_CONTEXTS = 40
"""Ubuntu contexts kept of each split in smoke runs."""


def folder_key(info: DatasetInfo) -> str:
    """The ``[data]`` key of a data set's folder (``ubuntu_dir``, ``mediqa_dir``,
    ``liveqa_dir``: the first alias, else the name)."""
    return f"{(info.aliases or (info.name.value,))[0]}_dir"


def load_split(
    name: str, data: GPFDataSettings | GPFFinetuneDataSettings, smoke: bool = False
) -> list[CandidateList]:
    """Candidate lists of ``"dataset:split"`` (e.g. ``"ubuntu:dev"``).

    Args:
        name: The split's name.
        data: The config's ``[data]`` settings (folders, Ubuntu subset sizes and seed).
        smoke: Keep a few lists only.

    Raises:
        InputDataError: an unknown data set or split, missing or malformed files.
    """
    info, split = parse_split_name(name)
    options: dict[str, Any] = {}
    if info.name is DatasetName.UBUNTU:
        limit = int(getattr(data, f"ubuntu_{split}_contexts", 0)) or None
        if smoke:
            limit = min(limit or SMOKE_UBUNTU_CONTEXTS, SMOKE_UBUNTU_CONTEXTS)
        options = {"max_contexts": limit, "seed": data.seed}
    folder = getattr(data, folder_key(info), None) or info.default_folder()
    lists = info.load_function()(folder, split, **options)
    if smoke and info.name is not DatasetName.UBUNTU:
        return lists[:SMOKE_LISTS]
    return lists


def pair_features(encoder: Any, lists: list[CandidateList]) -> tuple[Tensor, Tensor]:
    """`n x d` features and `n` labels of all (query, candidate) pairs, list by list."""
    queries, candidates = pair_texts(lists)
    labels = torch.tensor([y for item in lists for y in item.labels], dtype=torch.float32)
    with torch.no_grad():
        features = encoder.encode_pairs(queries, candidates).float().cpu()
    return features, labels
