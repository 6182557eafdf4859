"""Running transformer layers on token states: the same as the model's own encoder."""

from __future__ import annotations

from pathlib import Path

import torch

from probrank.encoders.layer_stack import run_layers


def test_all_layers_give_the_models_last_hidden_state(tiny_bert: Path) -> None:
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny_bert), local_files_only=True).eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, model.config.vocab_size, (3, 9), generator=generator)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 5:] = 0  # padding in one row
    mask[2, 2:] = 0
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
        states = model.embeddings(input_ids=ids)
        got = run_layers(model.encoder.layer, model.config, states, mask)
        # in two pieces, as the frozen lower part and the trainable top run them
        lower = run_layers(model.encoder.layer[:1], model.config, states, mask)
        split = run_layers(model.encoder.layer[1:], model.config, lower, mask)
    real = mask.bool()
    torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(split[real], expected[real], rtol=1e-5, atol=1e-6)


def test_no_layers_return_the_states_unchanged(tiny_bert: Path) -> None:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(tiny_bert), local_files_only=True)
    states = torch.randn(2, 4, 32, generator=torch.Generator().manual_seed(1))
    assert run_layers([], config, states, torch.ones(2, 4, dtype=torch.long)) is states
