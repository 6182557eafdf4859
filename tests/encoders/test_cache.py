from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import probrank.encoders.transformer as transformer
from probrank.encoders.cache import (
    CACHE_FORMAT,
    CACHE_VERSION,
    CacheWarning,
    EmbeddingCache,
    project_root,
    resolve_cache_dir,
    shard_checksum,
    text_key,
)
from probrank.encoders.transformer import TransformerEncoder


def test_relative_cache_dir_resolves_against_the_project_root(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "models" / "gpf").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    config = project / "models" / "gpf" / "run.toml"
    config.write_text("")
    assert project_root(config) == project.resolve()
    assert resolve_cache_dir(".cache", config) == project.resolve() / ".cache"
    assert resolve_cache_dir(tmp_path / "abs", config) == tmp_path / "abs"
    assert resolve_cache_dir(None, config) is None
    assert resolve_cache_dir("", config) is None
    # outside a project: against the config's own folder
    lonely = tmp_path / "elsewhere" / "run.toml"
    lonely.parent.mkdir()
    lonely.write_text("")
    if project_root(lonely) is None:
        assert resolve_cache_dir("c", lonely) == lonely.parent.resolve() / "c"


def test_cache_is_written_shard_by_shard_and_rows_keep_input_order(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transformer, "CACHE_SHARD_SIZE", 2)
    texts = ["no", "how do i install the ubuntu kernel driver", "yes", "sound fix", "reboot it"]
    encoder = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    together = encoder.encode_texts(texts)
    shards = list(tmp_path.glob("*/shard-*.pt"))
    assert len(shards) == 3  # 5 texts in shards of at most 2
    alone = torch.cat([TransformerEncoder(tiny_bert, mode="bi").encode_texts([t]) for t in texts])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)
    again = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    torch.testing.assert_close(again.encode_texts(texts), together, rtol=0, atol=0)
    assert again.num_encoded == 0


# -- integrity: truncated, corrupted, stale and malformed shards --------------------------------

IDENTITY = {"model": "tiny", "revision": "r1", "pooling": "cls", "max_length": 16}


def _cache(root: Path, **identity: object) -> EmbeddingCache:
    return EmbeddingCache(root, "tiny-ns", identity={**IDENTITY, **identity}, dim=4)


def _fill(root: Path) -> tuple[list[str], torch.Tensor, Path]:
    keys = [text_key("text", t) for t in ("a", "b", "c")]
    values = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    _cache(root).put(keys, values)
    (shard,) = (root / "tiny-ns").glob("shard-*.pt")
    return keys, values, shard


def _truncate(shard: Path) -> None:
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])


def _flip_a_vector_byte(shard: Path) -> None:
    data = bytearray(shard.read_bytes())
    values = torch.load(shard, weights_only=True)["values"]
    start = bytes(data).find(values.numpy().tobytes())  # the tensor is stored uncompressed
    assert start > 0
    data[start + 5] ^= 0x40
    shard.write_bytes(bytes(data))


def _flip_every_middle_byte(shard: Path) -> None:
    data = bytearray(shard.read_bytes())
    for i in range(len(data) // 3, 2 * len(data) // 3):
        data[i] ^= 0xFF
    shard.write_bytes(bytes(data))


def _garbage(shard: Path) -> None:
    shard.write_bytes(b"not a torch file at all")


def _headerless(shard: Path) -> None:  # what an older probrank wrote
    content = torch.load(shard, weights_only=True)
    torch.save({"keys": content["keys"], "values": content["values"]}, shard)


def _header_edit(**changes: object) -> Callable[[Path], None]:
    def edit(shard: Path) -> None:
        content = torch.load(shard, weights_only=True)
        values = changes.pop("values", content["values"])
        content["values"] = values
        content["header"].update(changes)
        torch.save(content, shard)

    return edit


def _wrong_width(shard: Path) -> None:
    content = torch.load(shard, weights_only=True)
    values = torch.zeros(3, 5)
    content["values"] = values
    content["header"].update(shape=[3, 5], checksum=shard_checksum(content["keys"], values))
    torch.save(content, shard)


def _float64(shard: Path) -> None:
    content = torch.load(shard, weights_only=True)
    values = content["values"].double()
    content["values"] = values
    content["header"].update(
        dtype="torch.float64", checksum=shard_checksum(content["keys"], values)
    )
    torch.save(content, shard)


DAMAGE = {
    "truncated": (_truncate, "unreadable"),
    "garbage": (_garbage, "unreadable"),
    "flipped vector byte": (_flip_a_vector_byte, "checksum mismatch"),
    "flipped middle bytes": (_flip_every_middle_byte, ""),
    "no header": (_headerless, "no header"),
    "stale revision": (_header_edit(identity={**IDENTITY, "revision": "r0"}), "revision 'r0'"),
    "other format version": (_header_edit(version=1), "version 1"),
    "header shape differs": (_header_edit(shape=[3, 3]), "header says [3, 3]"),
    "wrong width": (_wrong_width, "width 5, expected 4"),
    "wrong dtype": (_float64, "dtype torch.float64"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_stale_shard_warns_once_and_is_never_used(tmp_path: Path, damage: str) -> None:
    keys, values, shard = _fill(tmp_path)
    spoil, reason = DAMAGE[damage]
    spoil(shard)
    cache = _cache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.missing(keys) == keys  # nothing of the damaged shard is used
        assert len(cache) == 0
        cache.missing(keys)  # asked again: no second warning
    relevant = [w for w in caught if issubclass(w.category, CacheWarning)]
    assert len(relevant) == 1, [str(w.message) for w in caught]
    message = str(relevant[0].message)
    assert shard.name in message and reason in message and "recomputed" in message
    assert [(p.name, r) for p, r in cache.dropped] == [(shard.name, cache.dropped[0][1])]
    assert not shard.exists()  # dropped, so no later run trips over it again
    cache.put(keys, values)  # recomputed
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fresh reader finds a sound shard: no warning at all
        torch.testing.assert_close(_cache(tmp_path).get(keys), values, rtol=0, atol=0)


def test_a_sound_shard_loads_with_weights_only_and_carries_its_identity(tmp_path: Path) -> None:
    keys, values, shard = _fill(tmp_path)
    content = torch.load(shard, weights_only=True)
    header = content["header"]
    assert header["identity"] == IDENTITY
    assert header["shape"] == [3, 4] and header["dtype"] == "torch.float32"
    assert header["checksum"] == shard_checksum(keys, values)
    assert header["format"] == CACHE_FORMAT and header["version"] == CACHE_VERSION
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(_cache(tmp_path).get(keys), values, rtol=0, atol=0)


def test_several_damaged_shards_make_one_warning(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    for text in ("a", "b", "c"):
        cache.put([text_key("text", text)], torch.ones(1, 4))
    shards = sorted((tmp_path / "tiny-ns").glob("shard-*.pt"))
    _truncate(shards[0])
    _garbage(shards[2])
    with pytest.warns(CacheWarning) as caught:
        assert len(_cache(tmp_path)) == 1
    assert len(caught) == 1
    assert "ignored 2 damaged or stale shard(s)" in str(caught[0].message)
    assert "(and 1 more)" in str(caught[0].message)


def test_put_refuses_values_that_do_not_fit(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    with pytest.raises(ValueError, match="2 keys"):
        cache.put(["a", "b"], torch.zeros(3, 4))
    with pytest.raises(ValueError, match="width 5"):
        cache.put(["a"], torch.zeros(1, 5))
    assert not (tmp_path / "tiny-ns").exists()


def test_encoder_recomputes_a_corrupted_shard_with_one_warning(
    tiny_bert: Path, tmp_path: Path
) -> None:
    texts = ["no", "yes", "sound fix"]
    first = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    expected = first.encode_texts(texts)
    (shard,) = tmp_path.glob("*/shard-*.pt")
    header = torch.load(shard, weights_only=True)["header"]
    assert header["identity"]["revision"] == first.revision
    assert header["identity"]["model"] == tiny_bert.name and header["shape"] == [3, 32]
    _flip_a_vector_byte(shard)
    again = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    with pytest.warns(CacheWarning, match="checksum mismatch") as caught:
        got = again.encode_texts(texts)
    assert len(caught) == 1
    assert again.num_encoded == 3  # recomputed, not read from the damaged shard
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    third = TransformerEncoder(tiny_bert, mode="bi", cache_dir=tmp_path, show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        torch.testing.assert_close(third.encode_texts(texts), got, rtol=0, atol=0)
    assert third.num_encoded == 0
