"""Data of the ``qlfusion_cv`` protocol: the run files a config names and the selected runs.

The cross-fitting itself (folds, member tensors, held-out weights) is QLFusion's own
(:meth:`probrank.models.qlfusion.QLFusion.cross_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probrank.data.paths import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation.selection import top_runs
from probrank.exceptions import InputDataError
from probrank.experiments.qlfusion_cv.config import QLFusionExperimentSettings, RunFilesSettings
from probrank.fusion.comb import query_order
from probrank.models.qlfusion import CrossFitData, QLFusion

__all__ = ["load_runs", "load_selected"]


def load_runs(table: RunFilesSettings, config_path: Path) -> tuple[Qrels, list[Run]]:
    """Read the qrels and runs a config's ``[data]`` table names.

    ``[data] shared = "fusion/robust03"`` resolves through
    :func:`~probrank.data.shared_data_dir`; otherwise ``[data] path`` is relative to the
    config file. ``qrels`` and ``runs`` (a glob) are relative to that folder;
    ``on_duplicate`` (``[data] on_duplicate``) is passed to :meth:`~probrank.data.Run.read` for
    documents listed twice for a topic.

    Args:
        table: The config's ``[data]`` settings.
        config_path: The config file (``path`` is relative to it).
    """
    if table.shared is not None:
        base = shared_data_dir(*str(table.shared).split("/"))
    elif table.path is not None:
        base = (config_path.parent / table.path).resolve()
    else:
        raise InputDataError("[data] needs 'shared' or 'path'", path=config_path)
    qrels = Qrels.read(base / table.qrels)
    paths = sorted(base.glob(table.runs))
    if not paths:
        raise InputDataError(f"no run files match {table.runs!r} in {base}")
    return qrels, [Run.read(p, on_duplicate=table.on_duplicate) for p in paths]  # type: ignore[arg-type]


def load_selected(
    config: QLFusionExperimentSettings,
    config_path: Path,
    model: QLFusion,
    *,
    variants: Sequence[str] = ("qlfusion",),
) -> tuple[Qrels, list[Run], CrossFitData]:
    """Read a config's runs, keep the ``top_runs`` by MAP and prepare the model's
    cross-fitting (:meth:`~probrank.models.qlfusion.QLFusion.prepare_cross_fit`).

    Args:
        config: The config's settings (with the ``[smoke]`` overrides merged for a smoke run:
            :func:`~probrank.experiments.load_config` with ``smoke=True``).
        config_path: Its file (``[data] path`` is relative to it).
        model: The QLFusion the protocol built (its settings give the depth).
        variants: The variants that will be trained.

    Returns:
        ``(qrels, selected runs, members)``.
    """
    protocol = config.protocol
    qrels, all_runs = load_runs(config.data, config_path)
    selected = top_runs(qrels, all_runs, protocol.top_runs, "AP")
    if protocol.topics is not None:  # smoke: the first few topics only
        keep = query_order(qrels)[: protocol.topics]
        qrels = Qrels({q: qrels[q] for q in keep}, name=qrels.name)
        selected = [r.restrict(keep) for r in selected]
    data = model.prepare_cross_fit(
        selected,
        qrels,
        folds=protocol.folds,
        fold_seed=protocol.fold_seed,
        variants=variants,
    )
    return qrels, selected, data
