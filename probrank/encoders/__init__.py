"""probrank.encoders: Hugging Face cross- and bi-encoders with an on-disk embedding cache."""

from probrank.encoders.cache import EmbeddingCache, text_key
from probrank.encoders.config import encoder_cache_dir, encoder_from_config
from probrank.encoders.fine_tune import fine_tune
from probrank.encoders.transformer import (
    EncoderMode,
    Pooling,
    TransformerEncoder,
    default_model_path,
    interaction_features,
    model_revision,
)

__all__ = [
    "EmbeddingCache",
    "EncoderMode",
    "Pooling",
    "TransformerEncoder",
    "default_model_path",
    "encoder_cache_dir",
    "encoder_from_config",
    "fine_tune",
    "interaction_features",
    "model_revision",
    "text_key",
]
