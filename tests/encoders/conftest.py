"""A tiny random BERT saved to a temporary folder (no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

WORDS = (
    "the a how do i install update ubuntu kernel driver sound fix it works thanks "
    "no yes reboot apt get sudo package error help what why you"
).split()


def make_tiny_bert(folder: Path, seed: int = 0) -> Path:
    """Save a 2-layer, 32-wide random BERT and a word-level tokenizer to ``folder``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizer(str(folder / "vocab.txt"))
    tokenizer.save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
