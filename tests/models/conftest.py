"""Shared fixtures of the model-object tests: a tiny random encoder and learnable lists."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from probrank.data.candidates import CandidateList
from probrank.encoders.transformer import TransformerEncoder
from tests.encoders.conftest import make_tiny_bert

GOOD = "thanks it works reboot fix".split()
BAD = "error no why what help".split()
QUERY = "how do i install update ubuntu kernel driver sound".split()


def learnable_lists(num_lists: int, seed: int, *, size: int = 6) -> list[CandidateList]:
    """Lists whose label is visible in the text: relevant candidates are written mostly with
    ``GOOD`` words, the others mostly with ``BAD`` words (one word in four from the other
    set), grades 3-4 for relevant and 1-2 for the rest."""
    rng = random.Random(seed)
    lists = []
    for i in range(num_lists):
        query = " ".join(rng.choice(QUERY) for _ in range(4))
        ids, texts, labels, grades = [], [], [], []
        for j in range(size):
            relevant = rng.random() < 0.4
            own, other = (GOOD, BAD) if relevant else (BAD, GOOD)
            words = [rng.choice(own) for _ in range(3)] + [rng.choice(other)]
            rng.shuffle(words)
            ids.append(f"d{j}")
            texts.append(" ".join(words))
            labels.append(int(relevant))
            grades.append(rng.choice((3, 4)) if relevant else rng.choice((1, 2)))
        lists.append(CandidateList(f"s{seed}-q{i}", query, ids, texts, labels, grades))
    return lists


@pytest.fixture(scope="session")
def tiny_bert_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("models-tiny-bert"))


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert_path: Path) -> TransformerEncoder:
    """A 2-layer, 32-wide random BERT in bi-encoder mode with mean pooling (no cache)."""
    return TransformerEncoder(tiny_bert_path, mode="bi", pooling="mean", show_progress=False)
