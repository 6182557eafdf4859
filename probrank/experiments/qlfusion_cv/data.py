"""Data of the ``qlfusion_cv`` protocol: the run files a config names and the selected runs.

The cross-fitting itself (folds, member tensors, held-out weights) is QLFusion's own
(:meth:`probrank.models.qlfusion.QLFusion.cross_fit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from probrank.data.paths import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation.selection import top_runs
from probrank.exceptions import InputDataError
from probrank.fusion.comb import query_order
from probrank.models.qlfusion import CrossFitData, QLFusion, QLFusionSettings

__all__ = ["load_runs", "load_selected", "quantifier_settings"]


def quantifier_settings(
    config: Mapping[str, Any], *, smoke: bool = False, **fixed: Any
) -> QLFusionSettings:
    """The :class:`~probrank.models.qlfusion.QLFusionSettings` of a config: its
    ``[quantifier]`` table key for key (with ``[smoke.quantifier]`` over it when ``smoke``),
    ``depth`` from ``[protocol]`` (``[smoke.protocol]``), the rest from ``fixed``."""
    table = dict(config.get("quantifier", {}))
    protocol = dict(config.get("protocol", {}))
    if smoke:
        table.update(config.get("smoke", {}).get("quantifier", {}))
        protocol.update(config.get("smoke", {}).get("protocol", {}))
    return QLFusionSettings.from_table(table, depth=int(protocol.get("depth", 100)), **fixed)


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
    config: Mapping[str, Any],
    config_path: Path,
    model: QLFusion,
    *,
    smoke: bool = False,
    variants: Sequence[str] = ("qlfusion",),
) -> tuple[Qrels, list[Run], CrossFitData, dict[str, Any]]:
    """Read a config's runs, keep the ``top_runs`` by MAP and prepare the model's
    cross-fitting (:meth:`~probrank.models.qlfusion.QLFusion.prepare_cross_fit`).

    Args:
        config: The checked config.
        config_path: Its file (``[data] path`` is relative to it).
        model: The QLFusion the protocol built (its settings give the depth).
        smoke: Apply the ``[smoke]`` overrides.
        variants: The variants that will be trained.

    Returns:
        ``(qrels, selected runs, members, protocol table)`` (the protocol table with the
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
    data = model.prepare_cross_fit(
        selected,
        qrels,
        folds=int(protocol.get("folds", 10)),
        fold_seed=int(protocol.get("fold_seed", 0)),
        variants=variants,
    )
    return qrels, selected, data, protocol
