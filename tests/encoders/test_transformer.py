from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from probrank.encoders.fine_tune import fine_tune
from probrank.encoders.transformer import TransformerEncoder, interaction_features
from probrank.exceptions import InputDataError

QUERIES = ["how do i install ubuntu", "sound driver error", "how do i install ubuntu"]
CANDIDATES = ["sudo apt get install", "reboot it works", "no"]


def test_bi_features_are_interactions_of_single_text_vectors(tiny_bert: Path) -> None:
    encoder = TransformerEncoder(tiny_bert, mode="bi", pooling="mean", show_progress=False)
    features = encoder.encode_pairs(QUERIES, CANDIDATES)
    assert features.shape == (3, 4 * 32)
    u = encoder.encode_texts(QUERIES)
    v = encoder.encode_texts(CANDIDATES)
    torch.testing.assert_close(features, interaction_features(u, v), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(features[:, 2 * 32 : 3 * 32], u * v, rtol=1e-5, atol=1e-5)


def test_cross_mode_encodes_the_pair_with_cls_pooling(tiny_bert: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    encoder = TransformerEncoder(tiny_bert, mode="cross", pooling="cls", show_progress=False)
    features = encoder.encode_pairs(QUERIES[:1], CANDIDATES[:1])
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    model = AutoModel.from_pretrained(str(tiny_bert)).eval()
    inputs = tokenizer(QUERIES[:1], CANDIDATES[:1], return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    assert ids[0] == tokenizer.cls_token_id and ids.count(tokenizer.sep_token_id) == 2
    with torch.no_grad():
        expected = model(**inputs).last_hidden_state[:, 0]
    torch.testing.assert_close(features, expected, rtol=1e-5, atol=1e-5)


def test_mean_pooling_ignores_padding(tiny_bert: Path) -> None:
    encoder = TransformerEncoder(tiny_bert, mode="bi", pooling="mean", show_progress=False)
    alone = encoder.encode_texts(["no"])
    padded = encoder.encode_texts(["no", "how do i install the ubuntu kernel driver"])[:1]
    torch.testing.assert_close(alone, padded, rtol=1e-5, atol=1e-5)


def test_cache_hits_encode_nothing(tiny_bert: Path, tmp_path: Path) -> None:
    first = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    features = first.encode_pairs(QUERIES, CANDIDATES)
    assert first.num_encoded == 5  # 5 distinct texts, the repeated query encoded once
    second = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    again = second.encode_pairs(QUERIES, CANDIDATES)
    assert second.num_encoded == 0
    torch.testing.assert_close(again, features, rtol=0, atol=0)
    second.encode_texts(["thanks"])
    assert second.num_encoded == 1
    cross = TransformerEncoder(tiny_bert, mode="cross", cache_dir=tmp_path, show_progress=False)
    cross.encode_pairs(QUERIES, CANDIDATES)
    assert cross.num_encoded == 3  # pairs are cached apart from single texts


def test_other_pooling_uses_another_cache_entry(tiny_bert: Path, tmp_path: Path) -> None:
    mean = TransformerEncoder(tiny_bert, mode="bi", pooling="mean", cache_dir=tmp_path)
    mean.encode_texts(["no"])
    cls = TransformerEncoder(tiny_bert, mode="bi", pooling="cls", cache_dir=tmp_path)
    cls.encode_texts(["no"])
    assert cls.num_encoded == 1


def test_bad_options_raise_input_data_error(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="mode"):
        TransformerEncoder(tiny_bert, mode="siamese")
    with pytest.raises(InputDataError, match=r"config\.json"):
        TransformerEncoder(tmp_path)
    encoder = TransformerEncoder(tiny_bert, show_progress=False)
    with pytest.raises(InputDataError, match="pair up"):
        encoder.encode_pairs(["a"], ["b", "c"])


def test_fine_tune_updates_encoder_weights(tiny_bert: Path) -> None:
    encoder = TransformerEncoder(tiny_bert, mode="cross", freeze=False, show_progress=False)
    head = torch.nn.Linear(encoder.feature_dim, 1)
    before = [p.detach().clone() for p in encoder.model.parameters()]
    labels = torch.tensor([1.0, 0.0, 1.0])
    history = fine_tune(encoder, head, QUERIES, CANDIDATES, labels, epochs=2, lr=1e-3, seed=0)
    assert len(history) == 2
    changed = [
        not torch.equal(a, b) for a, b in zip(before, encoder.model.parameters(), strict=True)
    ]
    assert sum(changed) > len(changed) // 2
    frozen = TransformerEncoder(tiny_bert, show_progress=False)
    with pytest.raises(InputDataError, match="freeze=False"):
        fine_tune(frozen, head, QUERIES, CANDIDATES, labels)


def test_fine_tune_adds_the_penalty_and_calls_back_in_evaluation_mode(tiny_bert: Path) -> None:
    encoder = TransformerEncoder(tiny_bert, mode="cross", freeze=False, show_progress=False)
    head = torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(encoder.feature_dim, 1))
    labels = torch.tensor([1.0, 0.0, 1.0])
    seen: list[tuple[int, bool, bool]] = []

    def callback(epochs: int) -> None:
        seen.append((epochs, encoder.model.training, head.training))

    plain = fine_tune(encoder, head, QUERIES, CANDIDATES, labels, epochs=1, lr=0.0, head_lr=0.0)
    penalised = fine_tune(
        encoder,
        head,
        QUERIES,
        CANDIDATES,
        labels,
        penalty=lambda: torch.tensor(5.0),
        on_epoch_end=callback,
        epochs=3,
        lr=0.0,
        head_lr=0.0,
    )
    # with zero learning rates every epoch sees the same model: the penalty shifts each loss
    assert penalised[0] == pytest.approx(plain[0] + 5.0, abs=0.5)
    assert seen == [(1, False, False), (2, False, False), (3, False, False)]
    # evaluation between epochs is deterministic (dropout off) and sorted-by-length batching
    # puts the rows back in input order
    with torch.no_grad():
        first = encoder.encode_pairs(QUERIES, CANDIDATES)
        single = torch.cat(
            [encoder.encode_pairs([q], [c]) for q, c in zip(QUERIES, CANDIDATES, strict=True)]
        )
    torch.testing.assert_close(first, single, atol=1e-5, rtol=1e-5)


def test_encoder_from_config_reads_the_table_over_the_protocol_defaults(
    tiny_bert: Path, tmp_path: Path
) -> None:
    from probrank.encoders.config import encoder_from_config

    table = {"model": str(tiny_bert), "pooling": "cls", "cache_dir": str(tmp_path / "c")}
    frozen = encoder_from_config(table, mode="cross", max_length=64, show_progress=False)
    assert (frozen.mode.value, frozen.pooling.value, frozen.max_length) == ("cross", "cls", 64)
    assert frozen.cache is not None and frozen.show_progress is False
    tuned = encoder_from_config({**table, "mode": "bi", "progress": False}, freeze=False)
    # the default 256 is capped at the 64 positions the tiny BERT embeds (issue 31)
    assert (tuned.mode.value, tuned.max_length, tuned.freeze) == ("bi", 64, False)
    assert tuned.cache is None and tuned.show_progress is False


def test_documented_defaults_are_the_real_ones() -> None:
    # Regression (docs): the class defaults (cross-encoder, CLS pooling) were not stated,
    # while the README and configs use a mean-pooled bi-encoder.
    import inspect

    defaults = inspect.signature(TransformerEncoder.__init__).parameters
    assert (defaults["mode"].default.value, defaults["pooling"].default.value) == ("cross", "cls")
    doc = " ".join((TransformerEncoder.__doc__ or "").split())
    assert '``"cross"`` (the default' in doc and '``"cls"`` (the default)' in doc


def test_loading_a_model_writes_nothing_and_restores_transformers_settings(
    tiny_bert: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """No "Loading weights" bar or log line of transformers on stderr (an error line after a
    model load stays the only line); a notebook's transformers settings hold afterwards."""
    import logging

    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    logger = hf_logging.get_logger()
    level = logger.level
    set_hook = getattr(hf_logging, "set_tqdm_hook", None)

    def hook(factory: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return factory(*args, **kwargs)

    previous = set_hook(hook) if set_hook is not None else None
    logger.setLevel(logging.INFO)  # a notebook that asked for everything
    try:
        capfd.readouterr()
        TransformerEncoder(tiny_bert, show_progress=False)
        assert capfd.readouterr() == ("", "")
        assert logger.level == logging.INFO
        if set_hook is not None:
            assert set_hook(hook) is hook  # the notebook's hook is back
        if hf_logging.is_progress_bar_enabled():  # the same load outside probrank draws it
            AutoModel.from_pretrained(str(tiny_bert))
            assert "Loading weights" in capfd.readouterr().err
    finally:
        if set_hook is not None:
            set_hook(previous)
        logger.setLevel(level)


def test_max_length_is_checked_against_the_models_positions(tiny_bert: Path) -> None:
    """Issue 31: ``TransformerEncoder(max_length=...)`` beyond the positions the model embeds
    is refused at construction (naming the file and field), as ``probrank encode`` does;
    left out, the limit is 256 capped at the positions (the tiny BERT embeds 64)."""
    from probrank.encoders.model_folder import max_positions

    with pytest.raises(InputDataError) as info:
        TransformerEncoder(tiny_bert, mode="bi", max_length=65, show_progress=False)
    text = str(info.value)
    assert "max_length 65 is more than the 64 positions" in text and "config.json" in text
    assert TransformerEncoder(tiny_bert, max_length=64, show_progress=False).max_length == 64
    encoder = TransformerEncoder(tiny_bert, mode="bi", show_progress=False)
    assert encoder.max_length == max_positions(tiny_bert) == 64
    long_text = " ".join(["word"] * 200)  # longer than the positions: truncated, no error
    with torch.no_grad():
        assert encoder.encode_pairs([long_text], [long_text]).shape[0] == 1
