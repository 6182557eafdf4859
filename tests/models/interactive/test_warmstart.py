"""The warm-start cache: keyed by everything the networks depend on, checksummed entries, and
damaged or stale entries reported once and retrained, never used."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import probrank.models.interactive.warmstart as ws
import probrank.models.interactive.warmstart_cache as cache_module
from probrank.encoders.cache import CacheWarning
from probrank.models.interactive.warmstart import (
    WARM_START_FORMAT,
    WARM_START_VERSION,
    WarmStart,
    WarmStartSettings,
    train_warm_start,
)

OPTIONS = WarmStartSettings(
    hidden=(8, 4), max_epochs=3, patience=2, swag_epochs=3, swag_layers=2, ensemble_size=2
)


def _blocks(count: int, seed: int) -> tuple[list[torch.Tensor], list[tuple[int, ...]]]:
    generator = torch.Generator().manual_seed(seed)
    features = [torch.randn(6, 12, generator=generator) for _ in range(count)]
    grades = [
        tuple(int(g) for g in torch.randint(1, 5, (6,), generator=generator)) for _ in features
    ]
    return features, grades


TRAIN = _blocks(20, seed=0)
VALIDATION = _blocks(6, seed=1)


def _train(cache: Path | None, **kwargs: Any) -> WarmStart:
    options = kwargs.pop("options", OPTIONS)
    train = kwargs.pop("train", TRAIN)
    return train_warm_start(*train, *VALIDATION, options, cache_dir=cache, **kwargs)


def _weights(warm: WarmStart) -> list[torch.Tensor]:
    return [t for member in warm.members for t in member.state_dict().values()]


def _assert_same(a: WarmStart, b: WarmStart) -> None:
    for x, y in zip(_weights(a), _weights(b), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    assert a.epochs == b.epochs
    assert a.validation_accuracy == pytest.approx(b.validation_accuracy, abs=0)
    assert (a.swag is None) == (b.swag is None)
    if a.swag is not None and b.swag is not None:
        torch.testing.assert_close(a.swag.mean, b.swag.mean, rtol=0, atol=0)
        torch.testing.assert_close(a.swag.deviations, b.swag.deviations, rtol=0, atol=0)


@pytest.fixture
def trainings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the networks trained (a cache hit trains none)."""
    calls: list[int] = []
    original = ws._train_one

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[-1])  # the seed
        return original(*args, **kwargs)

    monkeypatch.setattr(ws, "_train_one", counting)
    yield calls


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "interactive-warmstart").glob("*.pt"))


def test_a_cached_entry_is_reused_without_training(tmp_path: Path, trainings: list[int]) -> None:
    fresh = _train(None, swag=True, ensemble=True)
    assert len(trainings) == 2
    first = _train(tmp_path, swag=True, ensemble=True)
    _assert_same(first, fresh)
    trainings.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _train(tmp_path, swag=True, ensemble=True)
    assert trainings == []
    _assert_same(again, fresh)
    (entry,) = _entries(tmp_path)
    header = torch.load(entry, weights_only=True)["header"]
    assert header["format"] == WARM_START_FORMAT and header["version"] == WARM_START_VERSION
    assert header["identity"]["threads"] == torch.get_num_threads() == 1
    assert header["identity"]["seed"] == 0 and header["identity"]["width"] == 12
    assert header["tensors"]["members.0.output.weight"] == {
        "shape": [1, 4],
        "dtype": "torch.float32",
    }
    assert len(header["checksum"]) == 64


def test_the_key_holds_threads_options_seed_and_data(tmp_path: Path, trainings: list[int]) -> None:
    # The --human session once trained with every core and the experiment with one, under one
    # key: whichever ran first decided the other's network. Each of these must train its own.
    _train(tmp_path)
    torch.set_num_threads(2)
    try:
        _train(tmp_path)
    finally:
        torch.set_num_threads(1)
    _train(tmp_path, options=WarmStartSettings(**{**OPTIONS.__dict__, "margin": 0.2}))
    _train(tmp_path, seed=1)
    _train(tmp_path, train=_blocks(20, seed=5))
    assert len(trainings) == 5
    assert len(_entries(tmp_path)) == 5
    identities = [
        torch.load(e, weights_only=True)["header"]["identity"] for e in _entries(tmp_path)
    ]
    assert sorted(i["threads"] for i in identities) == [1, 1, 1, 1, 2]
    trainings.clear()
    _train(tmp_path, seed=1)  # and each is found again
    assert trainings == []


def _tensor_bytes_offset(entry: Path, name: str) -> int:
    content = torch.load(entry, weights_only=True)
    data = entry.read_bytes()
    offset = data.find(content["members"][0][name].numpy().tobytes())
    assert offset > 0
    return offset


def _truncate(entry: Path) -> None:
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])


def _flip(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[_tensor_bytes_offset(entry, "body.0.weight") + 7] ^= 0x10
    entry.write_bytes(bytes(data))


def _garbage(entry: Path) -> None:
    entry.write_bytes(b"\x00" * 100)


def _edited(
    change: Callable[[dict[str, Any]], None], rehash: bool = True
) -> Callable[[Path], None]:
    def edit(entry: Path) -> None:
        content = torch.load(entry, weights_only=True)
        change(content)
        if rehash:  # a consistent entry whose content is wrong for this network
            tensors = cache_module._named_tensors(content)
            content["header"]["tensors"] = cache_module._layout(tensors)
            content["header"]["checksum"] = cache_module._checksum(
                tensors, cache_module._numbers(content)
            )
        torch.save(content, entry)

    return edit


def _old_format(content: dict[str, Any]) -> None:
    del content["header"]


def _stale_threads(content: dict[str, Any]) -> None:
    content["header"]["identity"]["threads"] = 4


def _stale_torch(content: dict[str, Any]) -> None:
    content["header"]["identity"]["torch"] = "1.13.0"


def _wrong_shape(content: dict[str, Any]) -> None:
    content["members"][0]["output.weight"] = torch.zeros(1, 5)


def _missing_tensor(content: dict[str, Any]) -> None:
    del content["members"][0]["output.bias"]


def _header_shape(content: dict[str, Any]) -> None:
    content["header"]["tensors"]["members.0.output.weight"]["shape"] = [1, 3]


def _float64(content: dict[str, Any]) -> None:
    content["members"][0]["output.weight"] = content["members"][0]["output.weight"].double()


def _accuracy(content: dict[str, Any]) -> None:
    content["validation_accuracy"] = 0.123


def _swag_width(content: dict[str, Any]) -> None:
    content["swag"]["mean"] = torch.zeros(3)


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (_truncate, "unreadable"),
    "flipped byte": (_flip, "checksum mismatch"),
    "garbage": (_garbage, "unreadable"),
    "old format": (_edited(_old_format, rehash=False), "no header"),
    "stale thread count": (_edited(_stale_threads, rehash=False), "threads 4 (expected 1)"),
    "stale torch": (_edited(_stale_torch, rehash=False), "torch '1.13.0'"),
    "wrong shape": (_edited(_wrong_shape), "does not fit the network"),
    "missing tensor": (_edited(_missing_tensor), "does not fit the network"),
    "header shape": (_edited(_header_shape, rehash=False), "the header says"),
    "wrong dtype": (_edited(_float64, rehash=False), "torch.float64"),
    "edited number": (_edited(_accuracy, rehash=False), "checksum mismatch"),
    "swag width": (_edited(_swag_width), "SWAG tensors"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_stale_entry_warns_once_and_is_retrained(
    tmp_path: Path, trainings: list[int], damage: str
) -> None:
    fresh = _train(None, swag=True)
    _train(tmp_path, swag=True)
    (entry,) = _entries(tmp_path)
    spoil, reason = DAMAGE[damage]
    spoil(entry)
    trainings.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _train(tmp_path, swag=True)
    relevant = [w for w in caught if issubclass(w.category, CacheWarning)]
    assert len(relevant) == 1, [str(w.message) for w in caught]
    message = str(relevant[0].message)
    assert entry.name in message and reason in message and "trained again" in message
    assert "\n" not in message
    assert trainings == [0]  # retrained, the damaged entry never used
    _assert_same(got, fresh)
    trainings.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten sound: found again without a warning
        _assert_same(_train(tmp_path, swag=True), fresh)
    assert trainings == []


class _Bar:
    """Records what :func:`train_warm_start` does to its progress bar."""

    def __init__(self, *, total: int, **kwargs: Any) -> None:
        self.total, self.kwargs, self.n = total, kwargs, 0
        self.ticks: list[tuple[int, int]] = []  # (n, total) after each update

    def update(self, n: int = 1) -> None:
        self.n += n
        self.ticks.append((self.n, self.total))

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_the_progress_bar_ticks_every_epoch_and_ends_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bar counts epochs, not networks: a single network's training moves it (a bar over
    one network stayed at 0/1, and hidden by its delay, for the whole training)."""
    bars: list[_Bar] = []

    def bar(**kwargs: Any) -> _Bar:
        bars.append(_Bar(**kwargs))
        return bars[-1]

    monkeypatch.setattr(ws, "progress_bar", bar)
    options = WarmStartSettings(
        hidden=(8, 4), max_epochs=8, patience=1, swag_epochs=3, swag_layers=2, ensemble_size=3
    )
    fits: list[int] = []  # epochs each fit_pairs ran (its on_epoch_end calls)
    original = ws.fit_pairs

    def counting(*args: Any, **kwargs: Any) -> Any:
        callback = kwargs["on_epoch_end"]
        fits.append(0)

        def counted(model: Any, epoch: int) -> None:
            fits[-1] += 1
            callback(model, epoch)

        return original(*args, **{**kwargs, "on_epoch_end": counted})

    monkeypatch.setattr(ws, "fit_pairs", counting)
    _train(None, options=options, swag=True, ensemble=True)
    (used,) = bars
    assert used.kwargs["unit"] == "epoch" and used.kwargs["leave"] is False
    assert used.kwargs["delay"] > 0
    assert len(fits) == 4 and fits[1] == options.swag_epochs  # net, SWAG, two more members
    assert used.total == used.n == sum(fits) == len(used.ticks)  # ends full, one tick an epoch
    assert [n for n, _ in used.ticks] == list(range(1, sum(fits) + 1))
    assert all(n <= total <= 3 * 8 + 3 for n, total in used.ticks)
