"""The config-schema machinery: types, ranges, unknown and missing keys, dotted paths, lines."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest

from probrank._config import (
    CheckedAs,
    NonEmpty,
    Range,
    SchemaError,
    as_table,
    build_settings,
    check_config,
    check_schema,
    check_value,
    dotted,
    locate_key,
    merge_tables,
    read_toml,
    with_overrides,
)
from probrank.exceptions import InputDataError


@dataclass(frozen=True)
class Head:
    epochs: Annotated[list[Annotated[int, Range(1)]], NonEmpty()] | None = None
    gamma: Annotated[float, Range(1)] | list[Annotated[float, Range(1)]] | None = None


@dataclass(frozen=True)
class Cell:
    noises: list[Annotated[float, Range(0, open_low=True)]] | None = None


@dataclass(frozen=True)
class Heads:
    names: list[str] | None = None
    gpf: Head | None = None


@dataclass(frozen=True)
class Data:
    train: str
    mode: Literal["bi", "cross"] | None = None
    quiet: bool | None = None

    @classmethod
    def check_table(cls, table: Any) -> None:
        if table.get("train") == "forbidden":
            raise SchemaError(("train",), "is forbidden")


@dataclass(frozen=True)
class Doc:
    data: Data
    heads: Heads | None = None
    grid: list[Cell] | None = None
    grid_values: dict[str, Annotated[list[Any], NonEmpty()]] | None = None


TEXT = """\
# a comment
[data]
train = "ubuntu:train"

[heads]
names = ["gpf"]

[heads.gpf]
epochs = [1, 2]
gamma = 2.0

[[grid]]
noises = [0.3]

[[grid]]
noises = [
    1.0,
    2.5,
]
"""


def _error(text: str, tmp_path: Path) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    document, source = read_toml(path)
    with pytest.raises(InputDataError) as info:
        check_config(document, Doc, path=path, text=source)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path))
    return message.removeprefix(str(path))


def test_a_valid_document_passes(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(TEXT)
    document, text = read_toml(path)
    check_config(document, Doc, path=path, text=text)
    assert document["grid"][1]["noises"] == [1.0, 2.5]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("epochs = [1, 2]", "epoch = [1, 2]"), ":9: heads.gpf.epoch: unknown key ([heads.gpf] "),
        (
            ("[heads.gpf]", "[heads.gpff]"),
            ":8: heads.gpff: unknown key ([heads] takes: gpf, names)",
        ),
        (("[data]", "[dta]"), ":2: dta: unknown key (the top level takes: data, grid, "),
        (("epochs = [1, 2]", 'epochs = ["1"]'), ":9: heads.gpf.epochs[0]: expected an integer"),
        (("epochs = [1, 2]", "epochs = 2"), ":9: heads.gpf.epochs: expected a list of integers"),
        (("epochs = [1, 2]", "epochs = [1, 0]"), ":9: heads.gpf.epochs[1]: must be >= 1, got 0"),
        (("epochs = [1, 2]", "epochs = []"), ":9: heads.gpf.epochs: must not be empty"),
        (("gamma = 2.0", "gamma = 0.5"), ":10: heads.gpf.gamma: must be >= 1, got 0.5"),
        (("gamma = 2.0", "gamma = [2.0, 0.5]"), ":10: heads.gpf.gamma[1]: must be >= 1"),
        (("gamma = 2.0", 'gamma = "x"'), ":10: heads.gpf.gamma: expected a number or a list"),
        (("gamma = 2.0", "gamma = true"), ":10: heads.gpf.gamma: expected a number or a list"),
        (("gamma = 2.0", "gamma = nan"), ":10: heads.gpf.gamma: expected a number or a list"),
        (("1.0,\n", "-1.0,\n"), ":16: grid[1].noises[0]: must be > 0, got -1.0"),
        (('train = "ubuntu:train"', "train = 3"), ":3: data.train: expected a string, got 3"),
        (('train = "ubuntu:train"', 'train = "forbidden"'), ":3: data.train: is forbidden"),
        (('train = "ubuntu:train"', 'mode = "tri"'), ":2: data.train: missing (required)"),
        (('names = ["gpf"]', 'names = "gpf"'), ":6: heads.names: expected a list of strings"),
    ],
)
def test_errors_name_the_key_and_its_line(tmp_path: Path, edit: tuple, expected: str) -> None:
    old, new = edit
    assert old in TEXT
    message = _error(TEXT.replace(old, new, 1), tmp_path)
    assert message.startswith(expected), message


def test_a_value_in_place_of_a_table() -> None:
    with pytest.raises(InputDataError, match=r"^c.toml: heads: expected a table, got 1$"):
        check_config({"data": {"train": "t"}, "heads": 1}, Doc, path="c.toml")
    with pytest.raises(InputDataError, match=r"^grid\[0\]: expected a table, got 'x'$"):
        check_config({"data": {"train": "t"}, "grid": ["x"]}, Doc)


def test_literal_bool_and_int_are_not_interchangeable() -> None:
    with pytest.raises(SchemaError, match="expected one of 'bi', 'cross'"):
        check_value("tri", Literal["bi", "cross"], ("mode",))
    with pytest.raises(SchemaError, match="expected true or false"):
        check_value(1, bool, ("quiet",))
    with pytest.raises(SchemaError, match="expected an integer"):
        check_value(True, int, ("n",))
    with pytest.raises(SchemaError, match="expected an integer"):
        check_value(2.0, int, ("n",))
    check_value(2, float, ("x",))  # an integer is a number
    check_value([1, "a", True], list[Any], ("free",))


def test_free_tables_check_their_values(tmp_path: Path) -> None:
    text = TEXT + '\n[grid_values]\n"laplace.scale" = []\n'
    message = _error(text, tmp_path)
    assert message == ':22: grid_values."laplace.scale": must not be empty'


def test_dotted_paths() -> None:
    assert dotted(("heads", "gpf", "epochs")) == "heads.gpf.epochs"
    assert dotted(("grid", 1, "noises", 0)) == "grid[1].noises[0]"
    assert dotted(("tune", "grid", "laplace.scale")) == 'tune.grid."laplace.scale"'


def test_locate_key_follows_tables_arrays_and_quoted_keys() -> None:
    text = (
        '[a]\nx = 1\ndoc = """\ny = 2\n"""\ny = 3\n[[g]]\nz = 1\n[[g]]\nz = 2\n'
        '[g.sub]\nw = 1\n[t."q.k"]\n"p.r" = 1\ninline = { a = 1 }\n'
    )
    assert locate_key(text, ("a", "x")) == 2
    assert locate_key(text, ("a", "y")) == 6  # not the line inside the multi-line string
    assert locate_key(text, ("g", 1, "z")) == 10
    assert locate_key(text, ("g", 1, "sub", "w")) == 12
    assert locate_key(text, ("t", "q.k", "p.r")) == 14
    assert locate_key(text, ("a", "missing")) == 1  # the enclosing table
    assert locate_key(text, ("t", "q.k", "inline", "a")) == 15  # the closest line
    assert locate_key(text, ("nowhere",)) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", ": empty config file"),
        (b"  \n# only a comment?\n", None),
        (b'[a]\nx = "caf\xe9"\n', ":2: undecodable byte b'\\xe9' (a config must be UTF-8)"),
        (b"[a]\nx = \n", ":2: invalid TOML: Invalid value"),
        (b"[a\nx = 1\n", ":1: invalid TOML: Expected ']'"),
        (b"[a]\nx = 1\nx = 2\n", ":3: invalid TOML: Cannot overwrite a value"),
    ],
)
def test_read_toml_errors(tmp_path: Path, content: bytes, expected: str | None) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(content)
    if expected is None:
        assert read_toml(path)[0] == {}
        return
    with pytest.raises(InputDataError) as info:
        read_toml(path)
    assert str(info.value).removeprefix(str(path)).startswith(expected), str(info.value)


def test_read_toml_files(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="no such config file"):
        read_toml(tmp_path / "missing.toml")
    with pytest.raises(InputDataError, match="is a directory"):
        read_toml(tmp_path)
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf[a]\r\nx = 1\r\n")
    assert read_toml(tmp_path / "bom.toml")[0] == {"a": {"x": 1}}


# --- typed settings --------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """A model's settings object (a table that is checked as ``ModelTable``)."""

    width: int = 8
    scales: tuple[float, ...] = (1.0,)


@dataclass(frozen=True)
class ModelTable:
    width: Annotated[int, Range(1)] | None = None
    scales: list[float] | None = None


def _model(table: Any) -> Model:
    return Model(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})


@dataclass(frozen=True)
class Typed:
    data: Data
    heads: Heads = field(default_factory=Heads)
    grid: list[Cell] = field(default_factory=lambda: [Cell()])
    model: Annotated[Model, CheckedAs(ModelTable, _model)] = field(default_factory=Model)
    rate: float = 0.5
    smoke: dict[str, dict[str, Any]] | None = None


def test_build_settings_gives_the_typed_object(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("rate = 1\n" + TEXT + "[model]\nscales = [2, 3.5]\n")
    document, text = read_toml(path)
    check_config(document, Typed, path=path, text=text)
    built = build_settings(document, Typed)
    assert built.data == Data(train="ubuntu:train")
    assert built.heads == Heads(names=["gpf"], gpf=Head(epochs=[1, 2], gamma=2.0))
    assert built.grid == [Cell(noises=[0.3]), Cell(noises=[1.0, 2.5])]
    assert built.model == Model(scales=(2.0, 3.5))  # built by the settings' own builder
    assert built.rate == 1.0 and isinstance(built.rate, float)  # an integer for a float
    assert build_settings({"data": {"train": "x"}}, Typed).grid == [Cell()]  # the defaults
    assert as_table(built.heads) == {"names": ["gpf"], "gpf": {"epochs": [1, 2], "gamma": 2.0}}
    assert as_table(Heads(names=["a"])) == {"names": ["a"]}  # not from a config: non-defaults


def test_a_union_builds_the_alternative_the_value_fits() -> None:
    assert build_settings({"gamma": 2}, Head).gamma == 2.0
    assert build_settings({"gamma": [1, 2.5]}, Head).gamma == [1.0, 2.5]


def test_as_table_keeps_the_configs_order() -> None:
    built = build_settings({"gamma": 2.0, "epochs": [3]}, Head)
    assert list(as_table(built)) == ["gamma", "epochs"]


def test_a_checked_as_table_is_checked_against_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[data]\ntrain = "t"\n[model]\nwidth = 0\n')
    document, text = read_toml(path)
    with pytest.raises(InputDataError, match=r":4: model\.width: must be >= 1, got 0"):
        check_config(document, Typed, path=path, text=text)
    path.write_text('[data]\ntrain = "t"\n[model]\ndepth = 2\n')
    document, text = read_toml(path)
    with pytest.raises(InputDataError, match=r":4: model\.depth: unknown key"):
        check_config(document, Typed, path=path, text=text)
    view = check_schema(Typed)
    assert view is not Typed and check_schema(Data) is Data
    hints = {f.name: f.type for f in dataclasses.fields(view)}
    assert "ModelTable" in str(hints["model"])


def test_merge_tables_and_overrides() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2}
    assert merge_tables(base, {"a": {"y": [3]}, "c": 4}) == {
        "a": {"x": 1, "y": [3]},
        "b": 2,
        "c": 4,
    }
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 2}  # unchanged
    document = {"data": {"train": "t", "mode": "bi"}, "smoke": {"data": {"mode": "cross"}}}
    merged = with_overrides(document)
    assert (
        merged["data"] == {"train": "t", "mode": "cross"} and merged["smoke"] == document["smoke"]
    )
    assert with_overrides({"data": {"train": "t"}}) == {"data": {"train": "t"}}
    built = build_settings(with_overrides(document), Typed)
    assert built.data.mode == "cross"
