from __future__ import annotations

from pathlib import Path

import pytest

from probrank.data.datasets.ubuntu_irc import load_ubuntu_irc, read_ubuntu_log
from probrank.exceptions import InputDataError

WORDS = "how do i install ubuntu kernel driver sound fix it works thanks reboot apt get".split()


def write_fake_ubuntu(folder: Path, num_logs: int = 2, num_lines: int = 40) -> Path:
    """Write ``num_logs`` small logs with reply links: line k replies to line k - 2."""
    folder.mkdir(parents=True, exist_ok=True)
    for log in range(num_logs):
        lines, links = [], []
        for k in range(num_lines):
            if k == 5:
                lines.append("=== someone has joined #ubuntu")
            else:
                text = " ".join(WORDS[(k * 7 + log + j) % len(WORDS)] for j in range(1 + k % 4))
                lines.append(f"[12:{k % 60:02d}] <nick{k % 5}> {text}")
            links.append(f"{k} {k} -")
            if k >= 2:
                links.append(f"{k - 2} {k} -")
        (folder / f"2020-01-0{log + 1}.ascii.txt").write_text("\n".join(lines) + "\n")
        (folder / f"2020-01-0{log + 1}.annotation.txt").write_text("\n".join(links) + "\n")
    return folder


def test_links_contexts_and_negatives(tmp_path: Path) -> None:
    folder = write_fake_ubuntu(tmp_path / "train", num_logs=1)
    log = read_ubuntu_log(folder / "2020-01-01.ascii.txt")
    # self links, and links touching the system line 5, are dropped
    assert (3, 5) not in log.links and (5, 7) not in log.links and (0, 0) not in log.links
    assert len(log.links) == 38 - 2
    assert all(not t.startswith("[") for t in log.texts.values())
    lists = load_ubuntu_irc(folder, seed=3)
    assert len(lists) == len(log.links)
    by_qid = {item.qid: item for item in lists}
    item = by_qid["2020-01-01:10:12"]
    # context: ancestors 6 and 8 of parent 10, oldest first, prefixes stripped
    assert item.query == " ".join(log.texts[i] for i in (6, 8, 10))
    assert len(item.candidates) == 10 and sum(item.labels) == 1
    true = item.labels.index(1)
    assert item.candidate_ids[true] == "2020-01-01:12"
    lines = [int(c.rsplit(":", 1)[1]) for c in item.candidate_ids]
    assert len(set(lines)) == 10
    assert all(line not in (10, 12, 5) for i, line in enumerate(lines) if i != true)
    again = load_ubuntu_irc(folder, seed=3)
    assert again == lists
    assert load_ubuntu_irc(folder, seed=4) != lists


def test_subsampling_and_errors(tmp_path: Path) -> None:
    folder = write_fake_ubuntu(tmp_path / "train")
    assert len(load_ubuntu_irc(folder, max_contexts=7)) == 7
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputDataError, match=r"no \*\.ascii\.txt"):
        load_ubuntu_irc(tmp_path / "empty")
    with pytest.raises(InputDataError, match=r"missing: no such folder"):
        load_ubuntu_irc(tmp_path / "missing")
    (folder / "2020-01-01.annotation.txt").write_text("1 x -\n")
    with pytest.raises(InputDataError, match=r"annotation\.txt:1"):
        load_ubuntu_irc(folder)


def test_real_ubuntu_test_split(shared_data: Path) -> None:
    lists = load_ubuntu_irc(shared_data / "dialog" / "ubuntu-irc" / "test")
    assert len(lists) == 4248  # the usable test links the data README counts
    assert all(len(item) == 10 and sum(item.labels) == 1 for item in lists[:200])
