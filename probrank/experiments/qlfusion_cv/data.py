"""Data of the ``qlfusion_cv`` protocol: the run files a config names and the selected runs.

The cross-fitting itself (folds, member tensors, held-out weights) is QLFusion's own
(:mod:`probrank.models.qlfusion.cross_fit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probrank.data.paths import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation.selection import top_runs
from probrank.exceptions import InputDataError
from probrank.fusion.comb import query_order
from probrank.models.qlfusion.cross_fit import CVData, prepare_cv

__all__ = ["load_runs", "load_selected"]


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
