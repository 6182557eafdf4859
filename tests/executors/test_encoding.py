"""Encoding a collection into the cache: local and Ray write the same shards, an interrupted job
resumes from the shards it wrote, and ``probrank encode`` reports what it did."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import torch

from probrank.cli import main
from probrank.encoders import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.executors import ExecutorSettings
from probrank.executors.encoding import encode_collection
from tests.encoders.conftest import WORDS, make_tiny_bert

pytestmark = pytest.mark.xdist_group("ray")

RAY = ExecutorSettings("ray")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _texts(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 30))) for _ in range(count)]
    return [*texts, texts[3]]  # a repeated text is encoded once


def _encoder(model: Path, cache: Path, shard_size: int = 16) -> TransformerEncoder:
    return TransformerEncoder(
        model,
        mode="bi",
        pooling="mean",
        max_length=48,
        batch_size=5,
        cache_dir=cache,
        show_progress=False,
        shard_size=shard_size,
    )


def _shards(cache: Path) -> dict[str, dict[str, Any]]:
    return {p.name: torch.load(p, weights_only=True) for p in sorted(cache.glob("*/shard-*.pt"))}


def _assert_same_cache(left: Path, right: Path) -> None:
    a, b = _shards(left), _shards(right)
    assert sorted(a) == sorted(b) and a  # the same shard files (named by their keys)
    for name in a:
        assert a[name]["keys"] == b[name]["keys"]
        assert a[name]["header"]["identity"] == b[name]["header"]["identity"]
        torch.testing.assert_close(a[name]["values"], b[name]["values"], rtol=0, atol=1e-6)


def test_local_job_writes_what_encode_texts_writes(tiny_model: Path, tmp_path: Path) -> None:
    texts = _texts(40)
    report = encode_collection(_encoder(tiny_model, tmp_path / "job"), texts, progress=False)
    assert (report.texts, report.unique, report.cached, report.encoded) == (41, 40, 0, 40)
    written = {p.name for p in (tmp_path / "job").glob("*/shard-*.pt")}
    assert len(report.shards) == 3 and {p.name for p in report.shards} == written
    plain = _encoder(tiny_model, tmp_path / "plain")
    plain.encode_texts(texts)
    _assert_same_cache(tmp_path / "job", tmp_path / "plain")
    again = encode_collection(_encoder(tiny_model, tmp_path / "job"), texts, progress=False)
    assert (again.cached, again.encoded, again.shards) == (40, 0, [])


def test_ray_job_writes_the_local_shards(
    ray_instance: Any, tiny_model: Path, tmp_path: Path
) -> None:
    texts = _texts(40)
    encode_collection(_encoder(tiny_model, tmp_path / "local"), texts, progress=False)
    report = encode_collection(
        _encoder(tiny_model, tmp_path / "ray"), texts, executor=RAY, workers=2, progress=False
    )
    assert (report.executor, report.encoded, len(report.shards)) == ("ray", 40, 3)
    assert sum(report.nodes.values()) == 4 + 4 + 2  # forward passes: 16, 16 and 8 texts by 5
    _assert_same_cache(tmp_path / "local", tmp_path / "ray")
    vectors = _encoder(tiny_model, tmp_path / "ray").encode_texts(texts)
    expected = _encoder(tiny_model, None).encode_texts(texts)  # type: ignore[arg-type]
    torch.testing.assert_close(vectors, expected, rtol=0, atol=1e-6)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("first", ["ray", "local"])
def test_an_interrupted_job_resumes_from_its_shards(
    ray_instance: Any, tiny_model: Path, tmp_path: Path, first: str
) -> None:
    texts = _texts(40, seed=1)
    cache = tmp_path / "cache"

    def stop(keys: list[str]) -> None:
        raise _Stop  # as a Ctrl-C after the first shard was written

    executor = RAY if first == "ray" else None
    with pytest.raises(_Stop):
        encode_collection(
            _encoder(tiny_model, cache), texts, executor=executor, on_shard=stop, progress=False
        )
    assert len(_shards(cache)) == 1
    other = None if first == "ray" else RAY  # resumed by the other executor
    resumed = encode_collection(_encoder(tiny_model, cache), texts, executor=other, progress=False)
    assert (resumed.cached, resumed.encoded, len(resumed.shards)) == (16, 24, 2)
    encode_collection(_encoder(tiny_model, tmp_path / "fresh"), texts, progress=False)
    _assert_same_cache(cache, tmp_path / "fresh")


def test_a_job_needs_a_cache(tiny_model: Path) -> None:
    with pytest.raises(InputDataError, match="needs an encoder with a cache"):
        encode_collection(_encoder(tiny_model, None), ["a"])  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="workers"):
        encode_collection(_encoder(tiny_model, Path("unused")), ["a"], workers=0)


def _trec(path: Path, texts: list[str]) -> Path:
    docs = [
        f"<DOC>\n<DOCNO> d{i} </DOCNO>\n<TEXT>\n{t}\n</TEXT>\n</DOC>" for i, t in enumerate(texts)
    ]
    path.write_text("\n".join(docs) + "\n")
    return path


def test_encode_command_locally_and_on_ray(
    ray_instance: Any,
    tiny_model: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    texts = _texts(11, seed=2)[:-1]
    collection = _trec(tmp_path / "docs.trec", texts)
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"id": f"d{i}", "body": t}) + "\n" for i, t in enumerate(texts))
    )
    common = ["--model", str(tiny_model), "--max-length", "48", "--batch-size", "5", "--json"]

    def encode(*args: str) -> dict[str, Any]:
        assert main(["encode", *args, *common]) == 0
        out: dict[str, Any] = json.loads(capsys.readouterr().out)
        return out

    local = encode(str(collection), "--cache-dir", str(tmp_path / "a"))
    assert (local["executor"], local["texts"], local["encoded"]) == ("local", 11, 11)
    assert encode(str(collection), "--cache-dir", str(tmp_path / "a"))["encoded"] == 0
    ray = encode(
        str(jsonl), "--docno-field", "id", "--text-field", "body",
        "--cache-dir", str(tmp_path / "b"), "--executor", "ray", "--workers", "2",
    )  # fmt: skip
    assert (ray["executor"], ray["encoded"], ray["workers"]) == ("ray", 11, 2)
    assert sum(ray["nodes"].values()) == 3  # 11 texts in passes of 5
    _assert_same_cache(tmp_path / "a", tmp_path / "b")
    assert main(["encode", str(tmp_path / "missing.trec"), *common]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probrank: error: ") and err.count("\n") == 1
