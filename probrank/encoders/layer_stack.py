"""Running a stack of BERT-style transformer layers on token states and a 0/1 mask.

Shared by the frozen lower part of an encoder
(:class:`~probrank.encoders.hidden_states.HiddenStateEncoder`) and its trainable top
(:class:`~probrank.encoders.top_layers.TopLayers`), so that both call the layers exactly as the
full model does (a test checks that lower + top reproduce the whole encoder).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch import Tensor, nn

__all__ = ["attention_mask_for", "run_layers"]


def attention_mask_for(config: Any, states: Tensor, mask: Tensor) -> Any:
    """The attention mask a transformer layer of ``config`` takes, from a `b x L` 0/1 mask.

    Args:
        config: The model's config (its attention implementation decides the mask's form).
        states: `b x L x h` layer inputs (dtype and device of the mask).
        mask: `b x L` mask, 1 on tokens.

    Returns:
        What ``transformers.masking_utils.create_bidirectional_mask`` returns for them (a
        `b x 1 x L x L` mask, or None when nothing is masked and the implementation allows it).
    """
    from transformers.masking_utils import create_bidirectional_mask

    return create_bidirectional_mask(config=config, inputs_embeds=states, attention_mask=mask)


def run_layers(layers: Iterable[nn.Module], config: Any, states: Tensor, mask: Tensor) -> Tensor:
    """Pass token states through transformer layers in order.

    Args:
        layers: BERT-style layers (``layer(states, attention_mask)``).
        config: The model's config (for the attention mask's form).
        states: `b x L x h` states.
        mask: `b x L` attention mask (1 on tokens).

    Returns:
        `b x L x h` states after the last layer (``states`` itself when there is none).
    """
    layers = list(layers)
    if not layers:
        return states
    attention = attention_mask_for(config, states, mask)
    for layer in layers:
        output = layer(states, attention)
        states = output[0] if isinstance(output, tuple) else output
    return states
