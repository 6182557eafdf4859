"""Ubuntu IRC response selection built from the reply-link annotations of Kummerfeld et al.

Each split folder holds ``<date>.ascii.txt`` (the log) and ``<date>.annotation.txt`` (lines
``parent child -``, 0-based line numbers: line ``child`` replies to line ``parent``). Every
annotated link with ``child != parent`` between two chat messages (lines ``[HH:MM] <nick> text``)
gives one example: the context is the parent message preceded by up to ``max_ancestors`` of its
own ancestors along reply links (the latest annotated parent at each step), and the candidates
are the true response (the child) plus ``num_negatives`` chat messages sampled with a fixed seed
from the same log among those that do not reply to the parent. The ``[HH:MM] <nick>`` prefix is
stripped from every text: time stamps and line positions would give the answer away.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np

from probrank.data._io import read_text_lines
from probrank.data.datasets.candidate_lists import CandidateList
from probrank.exceptions import InputDataError

__all__ = ["UbuntuLog", "candidate_lists", "load_ubuntu_irc", "read_ubuntu_log"]

_CHAT = re.compile(r"^\[\d{2}:\d{2}\] <([^>\s]+)> ?(.*)$")


class UbuntuLog:
    """One annotated log: chat texts by line and reply links.

    Attributes:
        name: The log's file stem (e.g. ``2005-07-06_14``).
        texts: ``{line: text without the [HH:MM] <nick> prefix}`` for chat messages only.
        links: ``(parent, child)`` pairs between two chat messages with ``parent != child``,
            in file order.
    """

    def __init__(self, name: str, texts: dict[int, str], links: list[tuple[int, int]]) -> None:
        self.name = name
        self.texts = texts
        self.links = links
        self.parents: dict[int, list[int]] = {}
        self.children: dict[int, set[int]] = {}
        for parent, child in links:
            self.parents.setdefault(child, []).append(parent)
            self.children.setdefault(parent, set()).add(child)

    def ancestors(self, line: int, depth: int) -> list[int]:
        """Up to ``depth`` ancestors of ``line``, nearest first (latest parent at each step)."""
        chain: list[int] = []
        current = line
        while len(chain) < depth:
            options = [p for p in self.parents.get(current, []) if p < current and p not in chain]
            if not options:
                break
            current = max(options)
            chain.append(current)
        return chain


def read_ubuntu_log(log_path: str | Path) -> UbuntuLog:
    """Read ``<date>.ascii.txt`` and the ``<date>.annotation.txt`` beside it.

    Raises:
        InputDataError: a missing, empty or non-UTF-8 log or annotation file (or a folder in
            its place), or a malformed annotation line.
    """
    log_path = Path(log_path)
    stem = log_path.name.removesuffix(".ascii.txt")
    annotation = log_path.with_name(stem + ".annotation.txt")
    if not annotation.exists():
        raise InputDataError("annotation file missing", path=annotation)
    texts = {}
    for number, line in enumerate(_non_empty(log_path)):
        match = _CHAT.match(line)
        if match is not None:
            texts[number] = match.group(2).strip()
    links = []
    for number, line in enumerate(_non_empty(annotation), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2 or not all(f.isascii() and f.isdigit() for f in fields[:2]):
            raise InputDataError(
                f"expected 'parent child -', got {line.strip()!r}", path=annotation, line=number
            )
        parent, child = int(fields[0]), int(fields[1])
        if parent != child and parent in texts and child in texts:
            links.append((parent, child))
    return UbuntuLog(stem, texts, links)


def _non_empty(path: Path) -> list[str]:
    """The lines of a UTF-8 file (strictly decoded), which must hold something."""
    lines = read_text_lines(path)
    if not any(line.strip() for line in lines):
        raise InputDataError("empty file", path=path)
    return lines


def load_ubuntu_irc(
    split_dir: str | Path,
    *,
    num_negatives: int = 9,
    max_ancestors: int = 2,
    max_contexts: int | None = None,
    seed: int = 0,
) -> list[CandidateList]:
    """Response-selection lists of one split folder (``train/``, ``dev/`` or ``test/``).

    Args:
        split_dir: Folder of ``*.ascii.txt`` logs with their annotations.
        num_negatives: Sampled wrong responses per context.
        max_ancestors: Ancestors of the parent prepended to the context.
        max_contexts: Keep a random subset of this many contexts (seeded); ``None`` keeps all.
        seed: Seed of the negative sampling and of the subsampling.

    Returns:
        One :class:`CandidateList` per link: ``qid`` ``<log>:<parent>:<child>``, candidate ids
        ``<log>:<line>``, the true response at a random position, label 1 on it only.

    Raises:
        InputDataError: ``split_dir`` is not a folder or holds no logs, a log or annotation
            file is unreadable (see :func:`read_ubuntu_log`), a log is too short to sample
            negatives, or no log has a reply link.
    """
    split_dir = Path(split_dir)
    if not split_dir.is_dir():
        what = "is not a folder" if split_dir.exists() else "no such folder"
        raise InputDataError(what, path=split_dir)
    logs = sorted(split_dir.glob("*.ascii.txt"))
    if not logs:
        raise InputDataError("no *.ascii.txt logs", path=split_dir)
    lists = []
    for log_path in logs:
        log = read_ubuntu_log(log_path)
        rng = np.random.default_rng([seed, zlib.crc32(log.name.encode())])
        lines = np.array(sorted(log.texts))
        for parent, child in log.links:
            excluded = log.children.get(parent, set()) | {parent}
            pool = lines[~np.isin(lines, list(excluded))]
            if len(pool) < num_negatives:
                raise InputDataError(
                    f"only {len(pool)} messages to sample {num_negatives} negatives from",
                    path=log_path,
                )
            negatives = rng.choice(pool, size=num_negatives, replace=False).tolist()
            chosen = [child, *negatives]
            order = rng.permutation(len(chosen)).tolist()
            chosen = [chosen[i] for i in order]
            context_lines = [*reversed(log.ancestors(parent, max_ancestors)), parent]
            lists.append(
                CandidateList(
                    qid=f"{log.name}:{parent}:{child}",
                    query=" ".join(log.texts[i] for i in context_lines),
                    candidate_ids=tuple(f"{log.name}:{i}" for i in chosen),
                    candidates=tuple(log.texts[i] for i in chosen),
                    labels=tuple(int(i == child) for i in chosen),
                    grades=tuple(int(i == child) for i in chosen),
                )
            )
    if not lists:
        raise InputDataError("no reply link between two chat messages in any log", path=split_dir)
    if max_contexts is not None and max_contexts < len(lists):
        keep = np.random.default_rng([seed, 1]).choice(len(lists), max_contexts, replace=False)
        lists = [lists[i] for i in sorted(keep.tolist())]
    return lists


def candidate_lists(
    folder: str | Path, split: str, *, max_contexts: int | None = None, seed: int = 0
) -> list[CandidateList]:
    """The registry's loader (:mod:`probrank.data.datasets`): the lists of ``folder/split``.

    Args:
        folder: The ``dialog/ubuntu-irc`` folder.
        split: ``"train"``, ``"dev"`` or ``"test"``.
        max_contexts: Keep a random subset of this many contexts (seeded); ``None``: all.
        seed: Seed of the negative sampling and of the subsampling.
    """
    return load_ubuntu_irc(Path(folder) / split, max_contexts=max_contexts, seed=seed)
