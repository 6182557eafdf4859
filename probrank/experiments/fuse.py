"""``probrank fuse``: fuse run files, write the fused run, return its measures.

A helper of ``probrank.cli`` (not a protocol: it reads files, calls the fusion verbs and the
QLFusion model's cross-fitting, writes one run). Unsupervised methods
(:class:`~probrank.fusion.FusionMethod`, except those that need weights) fuse every
topic directly. The learned methods (:class:`~probrank.models.qlfusion.LearnedFusion`:
``qlfusion``, the paper's, and ``qlfusion_plus``, the extension with judgement-free list
descriptors) build a :class:`~probrank.models.qlfusion.QLFusion` (default settings: those of
``models/qlfusion/*.toml``), cross-fit it over ``folds`` folds of topics
(:meth:`~probrank.models.qlfusion.QLFusion.cross_fit`) and fuse each topic with the
quantifiers of the fold that held it out; they need judgements to
train, so topics absent from the qrels are left out of their output. The fusion methods
trained on judgements (:class:`~probrank.fusion.LearnedMethod`: ProbFuse, SegFuse, SlideFuse,
PosFuse, BayesFuse, MAPFuse, and ``wsum``, ``wmnz``, ``wrrf`` whose weights are searched by
``optimiser`` within ``budget`` evaluations) are cross-validated over the same folds
(:func:`~probrank.fusion.cross_validated_fusion`), with the same rule for topics.
:func:`fuse_methods` is the one list of ``--method`` choices.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from probrank._files import check_output_path
from probrank._progress import progress_bar
from probrank._threads import torch_threads
from probrank.data._io import read_text
from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.evaluation.selection import top_runs as select_top_runs
from probrank.exceptions import InputDataError
from probrank.fusion.crossval import cross_validated_fusion
from probrank.fusion.fuse import NEEDS_WEIGHTS, FusionMethod, fuse
from probrank.fusion.learned import FuserSettings, LearnedMethod, make_fuser
from probrank.fusion.normalize import ScoreOverflowError, normalize_lists, top_documents
from probrank.fusion.optimize import DEFAULT_BUDGET, Optimiser
from probrank.models.qlfusion import VARIANTS, Inputs, LearnedFusion, QLFusion, QLFusionSettings

__all__ = ["FUSED_MEASURES", "fuse_command", "fuse_methods", "qlfusion_settings"]

logger = logging.getLogger(__name__)

FUSED_MEASURES = (
    "P@5", "R@5", "nDCG@5", "P@10", "R@10", "nDCG@10", "P@20", "R@20", "nDCG@20", "AP",
)  # fmt: skip

_OWN_NORMALISATIONS = {
    FusionMethod.RRF.value: (),
    FusionMethod.META.value: ("minmax",),
    **{m.value: () for m in LearnedMethod if m.value not in ("segfuse", "wsum", "wmnz")},
}
"""Normalisations a method applies instead of ``norm`` (the others apply ``norm``; the
learned methods also describe each list by its min-max scores)."""


def qlfusion_settings(
    settings_file: str | os.PathLike[str] | None = None,
    *,
    prior: str | None = None,
    prior_args: Mapping[str, Any] | None = None,
    likelihood: str | None = None,
    likelihood_args: Mapping[str, Any] | None = None,
) -> QLFusionSettings:
    """The QLFusion settings of ``probrank fuse --method qlfusion``: a settings file, then a
    prior and a likelihood given on the command line.

    Your own ``"module.path:callable"`` is imported with the settings file's folder first on
    the import path (the current folder for one given on the command line) and probed before
    any run is read (:func:`probrank._plugins.resolve`).

    Args:
        settings_file: A TOML file of :class:`~probrank.models.qlfusion.QLFusionSettings`
            keys, at its top level or in a ``[quantifier]`` table (as in
            ``models/qlfusion/*.toml``, whose other tables are ignored).
        prior: A built-in prior's name or ``"module.path:callable"`` (replaces the file's).
        prior_args: Its keyword arguments (replace the file's).
        likelihood: A built-in likelihood's name or ``"module.path:callable"``.
        likelihood_args: Its keyword arguments.

    Raises:
        InputDataError: an unreadable file, an unknown key, a bad value or a callable that
            cannot be imported or fails its probe (naming the file and line, or the option).
    """
    from probrank._config import SchemaError, locate_key, read_toml
    from probrank._plugins import PluginKind, is_plugin, resolve

    table: dict[str, Any] = {}
    text, path = None, None
    key_prefix: tuple[str, ...] = ()
    if settings_file is not None:
        path = Path(settings_file)
        document, text = read_toml(path)
        quantifier = document.get("quantifier")
        if isinstance(quantifier, dict):
            table, key_prefix = dict(quantifier), ("quantifier",)
        else:
            table = {k: v for k, v in document.items() if not isinstance(v, dict)}
        try:
            QLFusionSettings.check_table(table)
        except SchemaError as exc:  # the first key the settings refuse
            line = locate_key(text, (*key_prefix, *exc.key))
            where = ".".join(str(part) for part in (*key_prefix, *exc.key))
            raise InputDataError(f"{where}: {exc.message}", path=path, line=line) from None
    given: dict[str, str | None] = {"prior": prior, "likelihood": likelihood}
    arguments = {"prior": prior_args, "likelihood": likelihood_args}
    for name, value in given.items():
        if value is not None:
            table[name] = value
            table.pop(f"{name}_args", None)  # the file's belong to the file's callable
        if arguments[name] is not None:
            table[f"{name}_args"] = dict(arguments[name] or {})
    if "plugin_folder" not in table:  # where a module:callable is imported from, every process
        from_command_line = any(given[name] is not None for name in ("prior", "likelihood"))
        folder = Path.cwd() if from_command_line or path is None else path.resolve().parent
        table["plugin_folder"] = str(folder)
    settings = QLFusionSettings.from_table(table)
    for name, kind in (
        ("prior", PluginKind.PRIOR),
        ("likelihood", PluginKind.PROPORTION_LIKELIHOOD),
    ):
        target = getattr(settings, name)
        if not is_plugin(target):
            continue
        from_file = given[name] is None and path is not None
        folder = path.resolve().parent if from_file and path is not None else Path.cwd()
        try:
            resolve(target, getattr(settings, f"{name}_args"), kind, folder=folder)
        except InputDataError as exc:
            if from_file and path is not None:
                line = locate_key(text, (*key_prefix, name)) if text is not None else None
                raise InputDataError(f"{name}: {exc.reason}", path=path, line=line) from None
            raise InputDataError(f"--{name}: {exc.reason}") from None
    return settings


def fuse_methods() -> tuple[str, ...]:
    """The ``--method`` choices: every :class:`~probrank.fusion.FusionMethod` that runs without
    weights (not in :data:`~probrank.fusion.fuse.NEEDS_WEIGHTS`), then every
    :class:`~probrank.models.qlfusion.LearnedFusion`, then every
    :class:`~probrank.fusion.LearnedMethod`."""
    unsupervised = [m.value for m in FusionMethod if m not in NEEDS_WEIGHTS]
    return (*unsupervised, *(m.value for m in LearnedFusion), *(m.value for m in LearnedMethod))


def fuse_command(
    qrels_path: str | os.PathLike[str],
    run_paths: Sequence[str | os.PathLike[str]],
    *,
    method: str = "combsum",
    norm: str = "minmax",
    depth: int = 100,
    top_runs: int | None = None,
    folds: int = 10,
    seed: int = 0,
    output: str | os.PathLike[str],
    progress: bool = True,
    settings: QLFusionSettings | None = None,
    on_duplicate: str = "error",
    optimiser: str = Optimiser.BOTORCH.value,
    budget: int = DEFAULT_BUDGET,
) -> dict[str, float]:
    """Fuse runs, write the result atomically to ``output`` and evaluate it.

    Args:
        qrels_path: TREC qrels (for ``top_runs``, learned methods and the returned measures).
        run_paths: TREC run files.
        method: One of :func:`fuse_methods`: ``combsum``, ``combmnz``, ``combmax``, ``rrf``,
            ``meta``, ``qlfusion`` or ``qlfusion_plus`` (the extension with judgement-free list
            descriptors).
        norm: Score normalisation for score-based methods.
        depth: Documents per list used for fusion.
        top_runs: Fuse only the runs with the highest MAP (None: all).
        folds: Cross-validation folds for learned methods.
        seed: Seeds learned methods.
        output: Path of the fused run.
        progress: Show progress bars while training.
        settings: The QLFusion settings of the learned methods (default
            :class:`~probrank.models.qlfusion.QLFusionSettings`'s, the settings of
            ``models/qlfusion/*.toml``; a test keeps them equal); ``depth``, ``seed`` and
            ``progress`` are replaced by this function's arguments.
        on_duplicate: A document listed twice for a topic in a run file: ``"error"`` (the
            default: such a file is malformed), ``"max"`` (keep the higher score) or
            ``"first"``; see :meth:`probrank.data.Run.read`.
        optimiser: Weight search of ``wsum``, ``wmnz`` and ``wrrf`` on each fold's training
            topics: ``"botorch"`` (Bayesian optimisation) or ``"grid"`` (step 0.1).
        budget: Objective evaluations per fold of ``"botorch"``.

    Returns:
        ``{measure: value}``: P, R and nDCG at 5, 10 and 20, and AP of the fused run.

    Raises:
        InputDataError: unreadable inputs, bad options, an output that cannot be written, or
            scores so far apart that normalising them overflows (naming the run file and line);
            all before any fusion or training.
    """
    if method not in fuse_methods():
        choices = ", ".join(repr(m) for m in fuse_methods())
        raise InputDataError(f"method must be one of {choices}, got {method!r}")
    learned = method in {m.value for m in LearnedFusion}
    trained = method in {m.value for m in LearnedMethod}
    options = FuserSettings(depth=depth, norm=norm, optimiser=optimiser, budget=budget, seed=seed)
    if trained:
        make_fuser(method, options)  # bad options fail now, before any file is read
    if not run_paths:
        raise InputDataError("give at least one run file")
    check_output_path(output)  # now, not after the training
    qrels = Qrels.read(qrels_path)
    runs = [Run.read(p, on_duplicate=on_duplicate) for p in run_paths]
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InputDataError(f"run names must be distinct, got {names}")
    paths = {run.name: Path(path) for run, path in zip(runs, run_paths, strict=True)}
    if top_runs is not None:
        runs = select_top_runs(qrels, runs, top_runs, "AP")
    norms = _OWN_NORMALISATIONS.get(method, (norm, "minmax") if learned else (norm,))
    for run in runs:
        _check_normalisable(run, paths[run.name], norms, depth)
        if learned and VARIANTS[method].inputs is Inputs.PLUS:
            _check_float32(run, paths[run.name], depth)
    if learned:
        model = QLFusion(
            replace(settings or QLFusionSettings(), depth=depth, seed=seed, progress=progress)
        )
        with torch_threads(1):
            cross_fit = model.cross_fit(runs, qrels, folds=folds, fold_seed=seed, variants=[method])
        judged = [run.restrict(cross_fit.data.topics) for run in runs]  # qrels' topics only
        fused = cross_fit.fuse(judged, method, norm=norm)
    elif trained:
        with (
            torch_threads(1),
            progress_bar(total=folds, desc=f"{method} folds", disable=not progress) as bar,
        ):

            def advance(_fold: int) -> None:
                bar.update(1)

            fused = cross_validated_fusion(
                runs,
                qrels,
                lambda: make_fuser(method, options),
                folds=folds,
                seed=seed,
                name=method,
                progress=advance,
            ).fused
    else:
        fused = fuse(runs, method, norm=norm, depth=depth, seed=seed, name=method)
    fused.write(output)
    logger.info("%s: %s of %d runs, %d topics", output, method, len(runs), len(fused))
    return evaluate(qrels, fused, list(FUSED_MEASURES))


def _check_normalisable(run: Run, path: Path, norms: Sequence[str], depth: int) -> None:
    """Raise, naming ``path`` and the line, if a normalisation of ``run`` overflows."""
    for norm in norms:
        try:
            normalize_lists(run.as_dict(), norm, depth)
        except ScoreOverflowError as exc:
            line = _line_of(path, exc.query, exc.document, exc.score)
            raise InputDataError(exc.reason, path=path, line=line) from None


_FLOAT32_MAX = 3.4028234663852886e38


def _check_float32(run: Run, path: Path, depth: int) -> None:
    """Raise, naming ``path`` and the line, if a top-``depth`` score is beyond the float32 range
    of ``qlfusion_plus``'s list descriptors (the top, bottom and mean raw scores)."""
    for qid, docs in run.as_dict().items():
        for doc, score in top_documents(docs, depth):
            if abs(score) > _FLOAT32_MAX:
                raise InputDataError(
                    f"score {score!r} of document {doc!r} for query {qid!r} is beyond the "
                    "float32 range (3.4e38) of qlfusion_plus's list descriptors",
                    path=path,
                    line=_line_of(path, qid, doc, score),
                )


def _line_of(path: Path, query: str, document: str, score: float) -> int | None:
    """1-based line of ``path`` that gives ``document`` of ``query`` the score ``score``
    (the first such line, as the reader's duplicate check counts lines)."""
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        fields = line.split()
        if (
            len(fields) >= 6
            and fields[0] == query
            and fields[2] == document
            and float(fields[4]) == score
        ):
            return number
    return None
