from __future__ import annotations

from pathlib import Path

import pytest
import torch

import probrank.encoders.transformer as transformer
from probrank.encoders.cache import project_root, resolve_cache_dir
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
