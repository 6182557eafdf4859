"""Cached lower-layer states + trainable top layers reproduce the full encoder; the hidden-state
cache round-trips, detects damage and stale shards, and float16 stays within its stated bound."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from probrank.encoders.cache import CacheWarning
from probrank.encoders.hidden_cache import (
    FLOAT16_ABSOLUTE_ERROR,
    FLOAT16_RELATIVE_ERROR,
    HiddenStateCache,
)
from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.top_layers import TopLayerRanker
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError

CONTEXTS = [
    "how do i install the ubuntu kernel driver",
    "no",
    "sound fix it works",
    "why error help what",
    "the a how do i install update ubuntu kernel driver sound fix",
]
RESPONSES = ["sudo apt get update", "yes you", "reboot", "thanks it works", "error no"]


def _pooled(encoder: HiddenStateEncoder, packed: PackedStates, pooling: str) -> torch.Tensor:
    ranker = TopLayerRanker(encoder.top_layers(pooling=pooling), torch.nn.Linear(32, 1))
    return ranker.pooled(packed, batch_size=2)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_all_layers_trainable_reproduce_the_full_encoder(tiny_bert: Path, pooling: str) -> None:
    # k = 0: the cache holds the embedding output, every transformer layer is in TopLayers
    full = TransformerEncoder(tiny_bert, mode="cross", pooling=pooling, max_length=64)
    expected = full.encode_pairs(CONTEXTS, RESPONSES)
    encoder = HiddenStateEncoder(
        tiny_bert, frozen_layers=0, dtype="float32", max_length=64, show_progress=False
    )
    top = encoder.top_layers(pooling=pooling)
    assert top.num_layers == encoder.num_layers == 2
    assert all(p.requires_grad for p in top.parameters())
    got = _pooled(encoder, encoder.encode_pairs(CONTEXTS, RESPONSES), pooling)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("frozen_layers", [0, 1, 2])
def test_cached_states_and_top_layers_reproduce_the_full_forward(
    tiny_bert: Path, tmp_path: Path, frozen_layers: int
) -> None:
    expected = TransformerEncoder(tiny_bert, mode="cross", pooling="mean").encode_pairs(
        CONTEXTS, RESPONSES
    )
    first = HiddenStateEncoder(
        tiny_bert, frozen_layers=frozen_layers, dtype="float32", cache_dir=tmp_path
    )
    first.show_progress = False
    packed = first.encode_pairs(CONTEXTS, RESPONSES)
    assert first.num_encoded == len(CONTEXTS)
    assert list(tmp_path.glob("*/hidden-*.pt"))
    # a second encoder reads every state back from disk, bit for bit
    second = HiddenStateEncoder(
        tiny_bert, frozen_layers=frozen_layers, dtype="float32", cache_dir=tmp_path
    )
    again = second.encode_pairs(CONTEXTS, RESPONSES)
    assert second.num_encoded == 0
    torch.testing.assert_close(again.states, packed.states, rtol=0, atol=0)
    assert torch.equal(again.lengths, packed.lengths)
    torch.testing.assert_close(_pooled(second, again, "mean"), expected, rtol=1e-5, atol=1e-6)


def test_top_layers_start_as_copies_and_leave_the_encoder_alone(tiny_bert: Path) -> None:
    encoder = HiddenStateEncoder(tiny_bert, frozen_layers=1, show_progress=False)
    top = encoder.top_layers()
    source = encoder.model.encoder.layer[1]
    for (name, copied), original in zip(
        top.layers[0].named_parameters(), source.parameters(), strict=True
    ):
        torch.testing.assert_close(copied, original, rtol=0, atol=0, msg=name)
    with torch.no_grad():
        next(top.parameters()).add_(1.0)
    assert not any(p.requires_grad for p in encoder.model.parameters())
    assert not torch.equal(next(top.parameters()), next(source.parameters()))


def test_float16_states_are_within_the_stated_bound(tiny_bert: Path) -> None:
    kwargs = {"frozen_layers": 1, "max_length": 64, "show_progress": False}
    exact = HiddenStateEncoder(tiny_bert, dtype="float32", **kwargs).encode_pairs(
        CONTEXTS, RESPONSES
    )
    half = HiddenStateEncoder(tiny_bert, dtype="float16", **kwargs).encode_pairs(
        CONTEXTS, RESPONSES
    )
    assert half.dtype == torch.float16 and exact.dtype == torch.float32
    assert torch.equal(half.lengths, exact.lengths)
    error = (half.states.double() - exact.states.double()).abs()
    bound = FLOAT16_RELATIVE_ERROR * exact.states.double().abs() + FLOAT16_ABSOLUTE_ERROR
    assert bool((error <= bound).all()), float((error - bound).max())
    assert float(error.max()) > 0  # the bound is not vacuous: float16 does round


def test_frozen_layers_out_of_range_is_an_input_data_error(tiny_bert: Path) -> None:
    with pytest.raises(InputDataError, match="frozen_layers"):
        HiddenStateEncoder(tiny_bert, frozen_layers=3)
    with pytest.raises(InputDataError, match="dtype"):
        HiddenStateEncoder(tiny_bert, frozen_layers=1, dtype="bfloat16")
    default = HiddenStateEncoder(tiny_bert)
    assert default.frozen_layers == default.num_layers - 1


# -- the cache: round trip, damage, staleness ----------------------------------------------

IDENTITY = {"model": "tiny", "revision": "r1", "frozen_layers": 1, "dtype": "float16"}


def _packed(seed: int = 1) -> PackedStates:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([3, 1, 5])
    return PackedStates(torch.randn(9, 4, generator=generator).half(), lengths)


def _fill(root: Path) -> tuple[list[str], PackedStates, Path]:
    keys = ["k1", "k2", "k3"]
    packed = _packed()
    HiddenStateCache(root, "ns", identity=IDENTITY, hidden_size=4).put(keys, packed)
    (shard,) = (root / "ns").glob("hidden-*.pt")
    return keys, packed, shard


def test_round_trip_in_any_key_order(tmp_path: Path) -> None:
    _, packed, _ = _fill(tmp_path)
    cache = HiddenStateCache(tmp_path, "ns", identity=IDENTITY, hidden_size=4)
    assert cache.missing(["k3", "x", "k1", "x"]) == ["x"]
    got = cache.get(["k3", "k1"])
    assert got.lengths.tolist() == [5, 3]
    torch.testing.assert_close(got.sequence(0), packed.sequence(2), rtol=0, atol=0)
    torch.testing.assert_close(got.sequence(1), packed.sequence(0), rtol=0, atol=0)
    assert got.dtype == torch.float16


def _truncate(shard: Path) -> None:
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])


def _flip_last_state_byte(shard: Path) -> None:
    content = torch.load(shard, weights_only=True)
    content["states"][-1, -1] += 1.0  # the header's checksum no longer matches
    torch.save(content, shard)


def _lie_about_lengths(shard: Path) -> None:
    content = torch.load(shard, weights_only=True)
    content["lengths"] = torch.tensor([4, 1, 4])  # same total, other split: checksum catches it
    torch.save(content, shard)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_truncate, "unreadable"),
        (_flip_last_state_byte, "checksum mismatch"),
        (_lie_about_lengths, "checksum mismatch"),
        (lambda shard: shard.write_bytes(b"garbage"), "unreadable"),
    ],
)
def test_damaged_shards_warn_once_and_count_as_missing(
    tmp_path: Path, damage: object, reason: str
) -> None:
    keys, _, shard = _fill(tmp_path)
    damage(shard)  # type: ignore[operator]
    cache = HiddenStateCache(tmp_path, "ns", identity=IDENTITY, hidden_size=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.missing(keys) == keys
        assert cache.missing(keys) == keys  # no second warning
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == 1 and reason in messages[0], messages
    assert not shard.exists()  # deleted, to be rewritten


def test_a_shard_of_other_settings_is_stale(tmp_path: Path) -> None:
    keys, _, _ = _fill(tmp_path)
    other = HiddenStateCache(
        tmp_path, "ns", identity={**IDENTITY, "frozen_layers": 2}, hidden_size=4
    )
    with pytest.warns(CacheWarning, match="frozen_layers 1 \\(expected 2\\)"):
        assert other.missing(keys) == keys


def test_a_damaged_shard_is_recomputed_by_the_encoder(tiny_bert: Path, tmp_path: Path) -> None:
    kwargs = {"frozen_layers": 1, "cache_dir": tmp_path, "show_progress": False}
    original = HiddenStateEncoder(tiny_bert, **kwargs).encode_pairs(CONTEXTS, RESPONSES)
    (shard,) = tmp_path.glob("*/hidden-*.pt")
    _flip_last_state_byte(shard)
    encoder = HiddenStateEncoder(tiny_bert, **kwargs)
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        again = encoder.encode_pairs(CONTEXTS, RESPONSES)
    assert encoder.num_encoded == len(CONTEXTS)
    torch.testing.assert_close(again.states, original.states, rtol=0, atol=0)
    assert len(list(tmp_path.glob("*/hidden-*.pt"))) == 1  # rewritten under the same name


def test_put_rejects_mismatched_states(tmp_path: Path) -> None:
    cache = HiddenStateCache(tmp_path, "ns", identity=IDENTITY, hidden_size=4)
    with pytest.raises(ValueError, match="keys"):
        cache.put(["a", "b"], _packed())
    with pytest.raises(ValueError, match="dtype"):
        HiddenStateCache(tmp_path, "ns", identity={"dtype": "int8"}, hidden_size=4)
