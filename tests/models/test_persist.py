"""The shared save/load machinery: exact round trips and a clear error for every bad folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from probrank import __version__
from probrank.exceptions import InputDataError
from probrank.models._persist import FORMAT_VERSION, MANIFEST_NAME, load_model, save_model
from probrank.models._settings import settings_from_json, settings_to_json


def _tensors() -> dict[str, dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return {
        "head": {
            "weight": torch.randn(3, 4, generator=generator),
            "precision": torch.randn(4, 4, generator=generator, dtype=torch.float64),
            "mask": torch.tensor([True, False, True]),
            "counts": torch.arange(5),
        },
        "scaler": {"mean": torch.randn(4, generator=generator)},
    }


def _save(folder: Path, **changes: object) -> Path:
    options: dict = {
        "model_class": "Toy",
        "settings": {"depth": 3, "names": ["a", "b"]},
        "tensors": _tensors(),
        "state": {"threshold": 0.1 + 0.2, "chosen": [1, 2]},
        "encoder": {"name": "tiny", "revision": "abc"},
        **changes,
    }
    return save_model(folder, **options)


def _edit_manifest(folder: Path, **changes: object) -> None:
    file = folder / MANIFEST_NAME
    manifest = json.loads(file.read_text())
    manifest.update(changes)
    file.write_text(json.dumps(manifest))


def test_round_trip_is_exact_for_every_dtype_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    folder = _save(tmp_path / "model")
    manifest, tensors = load_model(folder, "Toy")
    for group, named in _tensors().items():
        assert set(tensors[group]) == set(named)
        for name, tensor in named.items():
            assert tensors[group][name].dtype == tensor.dtype
            assert torch.equal(tensors[group][name], tensor)
    assert manifest.state["threshold"] == 0.1 + 0.2  # floats survive JSON exactly
    assert manifest.settings == {"depth": 3, "names": ["a", "b"]}
    assert manifest.encoder == {"name": "tiny", "revision": "abc"}
    assert manifest.probrank_version == __version__
    raw = json.loads((folder / MANIFEST_NAME).read_text())
    assert raw["format_version"] == FORMAT_VERSION
    assert raw["weights"]["head"]["tensors"]["weight"] == {"shape": [3, 4], "dtype": "float32"}
    assert sorted(p.name for p in folder.iterdir()) == [
        "head.safetensors",
        MANIFEST_NAME,
        "scaler.safetensors",
    ]


def test_saving_again_replaces_the_files(tmp_path: Path) -> None:
    folder = _save(tmp_path / "model")
    new = {"head": {"weight": torch.ones(2)}}
    _save(folder, tensors=new)
    _, tensors = load_model(folder, "Toy")
    assert set(tensors) == {"head"} and torch.equal(tensors["head"]["weight"], torch.ones(2))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"probrank_version": "0.2.0"}, "another major.minor"),
        ({"probrank_version": "1.1.0"}, "another major.minor"),
        ({"format_version": FORMAT_VERSION + 1}, "format version"),
        ({"model_class": "Other"}, "holds a Other model, not a Toy"),
    ],
)
def test_manifests_of_other_versions_or_classes_are_refused(
    tmp_path: Path, changes: dict, message: str
) -> None:
    folder = _save(tmp_path / "model")
    _edit_manifest(folder, **changes)
    with pytest.raises(InputDataError, match=message):
        load_model(folder, "Toy")


def test_a_patch_release_of_the_same_minor_version_loads(tmp_path: Path) -> None:
    folder = _save(tmp_path / "model")
    major, minor, *_ = __version__.split(".")
    _edit_manifest(folder, probrank_version=f"{major}.{minor}.99")
    manifest, _ = load_model(folder, "Toy")
    assert manifest.probrank_version == f"{major}.{minor}.99"


def test_truncated_or_altered_weights_are_refused(tmp_path: Path) -> None:
    folder = _save(tmp_path / "model")
    file = folder / "head.safetensors"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputDataError, match="damaged or truncated"):
        load_model(folder, "Toy")
    altered = bytearray(data)
    altered[-1] ^= 0xFF
    file.write_bytes(bytes(altered))
    with pytest.raises(InputDataError, match="damaged or truncated"):
        load_model(folder, "Toy")


def test_missing_files_and_damaged_manifests_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="no such folder"):
        load_model(tmp_path / "nothing", "Toy")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputDataError, match=r"no manifest\.json"):
        load_model(tmp_path / "empty", "Toy")
    folder = _save(tmp_path / "model")
    (folder / "scaler.safetensors").unlink()
    with pytest.raises(InputDataError, match=r"missing weights file 'scaler\.safetensors'"):
        load_model(folder, "Toy")
    (folder / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(InputDataError, match="damaged manifest"):
        load_model(folder, "Toy")


def test_tensors_that_disagree_with_the_manifest_are_refused(tmp_path: Path) -> None:
    folder = _save(tmp_path / "model")
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    manifest["weights"]["head"]["tensors"]["weight"]["shape"] = [4, 3]
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(InputDataError, match="tensor 'weight' is float32 \\[3, 4\\]"):
        load_model(folder, "Toy")


def test_saving_over_a_file_or_with_a_bad_group_name_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(InputDataError, match="the path is a file"):
        _save(file)
    with pytest.raises(InputDataError, match="not a plain file name"):
        _save(tmp_path / "model", tensors={"../escape": {"w": torch.ones(1)}})


@dataclass(frozen=True)
class _Settings:
    depth: int = 3
    sizes: tuple[int, ...] = (1, 2)


def test_settings_json_round_trip_and_unknown_keys() -> None:
    settings = _Settings(depth=5, sizes=(4, 8))
    data = settings_to_json(settings)
    assert data == {"depth": 5, "sizes": [4, 8]}
    assert settings_from_json(_Settings, json.loads(json.dumps(data))) == settings
    with pytest.raises(InputDataError, match="unknown _Settings keys: \\['width'\\]"):
        settings_from_json(_Settings, {"width": 3})
