"""Cross-validation data of the QLFusion protocol: folds, per-(fold, run) member tensors.

Per fold ``f`` of ``F`` (topics split at random with ``fold_seed``): the test topics are fold
``f``, the validation topics fold ``f + 1`` (mod ``F``), the rest train. Members of the
vectorised quantifiers are ordered ``fold * R + run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank.data.paths import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.experiments.selection import top_runs
from probrank.fusion.comb import query_order
from probrank.models.qlfusion import list_features, relevant_counts
from probrank.models.qlfusion_plus import plus_features

__all__ = [
    "PARTS",
    "CVData",
    "load_runs",
    "load_selected",
    "make_folds",
    "prepare_cv",
    "weights_from_predictions",
]

PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class CVData:
    """Per-(fold, run) member tensors of a cross-validation.

    Members are ordered ``fold * R + run``. ``train``/``val``/``test`` hold ``x`` (`M x n x k`,
    the paper's input), ``counts`` (`M x n`), ``mask`` (`M x n`), ``index`` (`M x n` topic
    indices, -1 on padding) and, when built with ``plus=True``, ``plus`` (`M x n x F`, the
    richer inputs of :mod:`probrank.models.qlfusion_plus`).
    """

    topics: list[str]
    run_names: list[str]
    folds: list[list[int]]
    train: dict[str, Tensor]
    val: dict[str, Tensor]
    test: dict[str, Tensor]
    plus_names: list[str] = field(default_factory=list)

    def part(self, name: str) -> dict[str, Tensor]:
        """``train``, ``val`` or ``test``."""
        if name not in PARTS:
            raise InputDataError(f"part must be one of {PARTS}, got {name!r}")
        out: dict[str, Tensor] = getattr(self, name)
        return out

    def fold_members(self, fold: int) -> slice:
        """The members of one fold (one per run)."""
        runs = len(self.run_names)
        return slice(fold * runs, (fold + 1) * runs)


def make_folds(num_topics: int, folds: int, seed: int = 0) -> list[list[int]]:
    """Split topic indices ``0..n-1`` into ``folds`` near-equal random folds (sorted)."""
    if folds < 3:
        raise InputDataError(f"cross-validation needs at least 3 folds, got {folds}")
    if num_topics < folds:
        raise InputDataError(f"{num_topics} topics cannot fill {folds} folds")
    order = torch.randperm(num_topics, generator=torch.Generator().manual_seed(seed)).tolist()
    return [sorted(order[i::folds]) for i in range(folds)]


def _rows(folds: list[list[int]], part: str) -> list[list[int]]:
    count = len(folds)
    if part == "test":
        return [folds[f] for f in range(count)]
    if part == "val":
        return [folds[(f + 1) % count] for f in range(count)]
    return [
        sorted(i for g in range(count) if g not in (f, (f + 1) % count) for i in folds[g])
        for f in range(count)
    ]


def _stack(per_run: Mapping[str, Tensor], folds: list[list[int]], part: str) -> dict[str, Tensor]:
    """Gather ``{name: R x n_topics x ...}`` per-run tensors into `M x width x ...` members."""
    rows = _rows(folds, part)
    n_runs = next(iter(per_run.values())).shape[0]
    width = max(len(r) for r in rows)
    members = len(folds) * n_runs
    index = torch.full((members, width), -1, dtype=torch.long)
    mask = torch.zeros(members, width, dtype=torch.bool)
    for f, idx in enumerate(rows):
        index[f * n_runs : (f + 1) * n_runs, : len(idx)] = torch.tensor(idx, dtype=torch.long)
        mask[f * n_runs : (f + 1) * n_runs, : len(idx)] = True
    run_of = (torch.arange(members) % n_runs).unsqueeze(-1).expand(-1, width)
    out = {"mask": mask, "index": index}
    for name, values in per_run.items():
        gathered = values[run_of, index.clamp_min(0)]
        pad = (~mask).view(*mask.shape, *([1] * (values.dim() - 2)))
        out[name] = gathered.masked_fill(pad, 0.0)
    return out


def prepare_cv(
    runs: Sequence[Run],
    qrels: Qrels,
    *,
    folds: int = 10,
    depth: int = 100,
    fold_seed: int = 0,
    plus: bool = False,
) -> CVData:
    """Features, relevant counts and fold splits for every (fold, run) member.

    Topics are those of the qrels that at least one run retrieved, in natural order.

    Args:
        runs: The `R` input runs; not modified.
        qrels: Judgements (for the relevant counts).
        folds: Number of folds.
        depth: `k`, list length.
        fold_seed: Seeds the fold split.
        plus: Also compute the richer inputs of ``qlfusion_plus`` (no judgements used).
    """
    judged = set(qrels)
    topics = query_order(q for run in runs for q in run if q in judged)
    if not topics:
        raise InputDataError("the runs and the qrels share no topic")
    per_run = {
        "x": torch.stack([list_features(run, topics, depth) for run in runs]),
        "counts": torch.stack([relevant_counts(run, qrels, topics, depth) for run in runs]),
    }
    names: list[str] = []
    if plus:
        per_run["plus"], names = plus_features(runs, topics, depth)
    split = make_folds(len(topics), folds, fold_seed)
    return CVData(
        topics=topics,
        run_names=[run.name for run in runs],
        folds=split,
        train=_stack(per_run, split, "train"),
        val=_stack(per_run, split, "val"),
        test=_stack(per_run, split, "test"),
        plus_names=names,
    )


def weights_from_predictions(
    data: CVData, p_hat: Tensor, part: str = "test"
) -> dict[str, dict[str, float]]:
    """``{run: {topic: p_hat}}`` from `M x n` predictions on ``part``'s lists."""
    n_runs = len(data.run_names)
    out: dict[str, dict[str, float]] = {name: {} for name in data.run_names}
    rows = data.part(part)
    index, mask = rows["index"].tolist(), rows["mask"].tolist()
    values = p_hat.tolist()
    for m, (idx, keep, vals) in enumerate(zip(index, mask, values, strict=True)):
        name = data.run_names[m % n_runs]
        for i, k, v in zip(idx, keep, vals, strict=True):
            if k:
                out[name][data.topics[i]] = float(v)
    return out


def load_runs(
    config: Mapping[str, Any], config_path: Path, *, on_duplicate: str = "error"
) -> tuple[Qrels, list[Run]]:
    """Read the qrels and runs a config's ``[data]`` table names.

    ``[data] shared = "fusion/robust03"`` resolves through
    :func:`~probrank.data.shared_data_dir`; otherwise ``[data] path`` is relative to the
    config file. ``qrels`` and ``runs`` (a glob) are relative to that folder;
    ``on_duplicate`` (``[data] on_duplicate``, default ``"error"``) is passed to
    :meth:`~probrank.data.Run.read` for documents listed twice for a topic.
    """
    table = config.get("data", {})
    if "shared" in table:
        base = shared_data_dir(*str(table["shared"]).split("/"))
    elif "path" in table:
        base = (config_path.parent / table["path"]).resolve()
    else:
        raise InputDataError("[data] needs 'shared' or 'path'", path=config_path)
    qrels = Qrels.read(base / table.get("qrels", "qrels.txt"))
    paths = sorted(base.glob(table.get("runs", "runs/*")))
    if not paths:
        raise InputDataError(f"no run files match {table.get('runs', 'runs/*')!r} in {base}")
    duplicates = str(table.get("on_duplicate", on_duplicate))
    return qrels, [Run.read(p, on_duplicate=duplicates) for p in paths]  # type: ignore[arg-type]


def load_selected(
    config: Mapping[str, Any], config_path: Path, *, smoke: bool = False, plus: bool = False
) -> tuple[Qrels, list[Run], CVData, dict[str, Any]]:
    """Read a config's runs, keep the ``top_runs`` by MAP and build the cross-validation.

    Returns:
        ``(qrels, selected runs, CVData, protocol table)`` (the protocol table with the
        ``[smoke.protocol]`` overrides applied when ``smoke``).
    """
    protocol = dict(config.get("protocol", {}))
    if smoke:
        protocol.update(config.get("smoke", {}).get("protocol", {}))
        if "data" in config.get("smoke", {}):
            config = {**config, "data": {**config.get("data", {}), **config["smoke"]["data"]}}
    qrels, all_runs = load_runs(config, config_path)
    selected = top_runs(qrels, all_runs, int(protocol.get("top_runs", 6)), "AP")
    if "topics" in protocol:  # smoke: the first few topics only
        keep = query_order(qrels)[: int(protocol["topics"])]
        qrels = Qrels({q: qrels[q] for q in keep}, name=qrels.name)
        selected = [r.restrict(keep) for r in selected]
    data = prepare_cv(
        selected,
        qrels,
        folds=int(protocol.get("folds", 10)),
        depth=int(protocol.get("depth", 100)),
        fold_seed=int(protocol.get("fold_seed", 0)),
        plus=plus,
    )
    return qrels, selected, data, protocol
