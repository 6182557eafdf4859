"""The ``cascade`` protocol: BM25 over a whole collection, a Bayesian reranker fitted by k-fold
cross-validation over topics, and risk-aware ranking, each stage evaluated.

Per seed ``s`` (``probrank experiment CONFIG --seeds N``):

1. BM25 (bm25s; :mod:`probrank.retrieval.bm25`) retrieves ``k`` documents per topic from the
   whole collection; the index is saved under ``index_dir`` and reused while the collection
   and the BM25 settings are unchanged.
2. Every document of the collection is encoded once (progress bar; the encoder's disk cache,
   so a second run encodes nothing).
3. :func:`probrank.retrieval.cascade.run_cascade`: each topic's top ``depth`` documents are
   rescored by the second stage (``gpf``: :class:`~probrank.models.GPFRanker` over the
   encoder's pair features (none with ``pair_features = false``) plus the BM25 score features
   and, with ``dense_features = true``, the query-document cosine features
   (:mod:`probrank.retrieval.features`); ``multitask``:
   :class:`~probrank.models.MultiTaskRanker`) fitted on the other folds' topics (fold split
   and models seeded by ``s``), ranked by posterior mean P(relevant) (``rerank``) and by the
   risk-aware criterion (``risk``).
4. Measures per stage over the topics with at least one relevant document: ``nDCG@10``,
   ``AP`` and ``P@10`` (trec_eval 10, :func:`probrank.evaluation.evaluate`, on the full runs);
   ``ECE`` (10 bins, top-label) of P(relevant) of the reranked candidates, every one predicted
   by a model that never saw its topic; ``ERCE``
   (:mod:`probrank.evaluation.ranking_calibration`) over their pairs. BM25's P(relevant) is
   a logistic calibration of its score features fitted on the training folds (the same
   folds); its order probabilities are those of its fixed scores (0, 0.5 or 1). The risk
   run ranks by another function of the same posterior, so its ECE and ERCE are the rerank
   stage's.

With a run folder (``--out DIR``) the three runs of seed 0 are written there as
``bm25.run``, ``rerank.run`` and ``risk.run`` beside the results JSON.

What runs in parallel (``[experiment] executor = "ray"``): the collection's encoding (a Ray
Data actor pool, :func:`probrank.executors.encoding.encode_collection`, writing the cache shards
the local path writes) and one task per seed (steps 3 and 4). Before the seeds, every text the
second stage encodes (each judged topic and its top ``depth`` documents) is put in the encoder's
cache here, on either executor, so every seed reads the same vectors; a Ray task builds its own
encoder from ``[encoder]`` and reads them from the cache folder (shared by the nodes, or the
task encodes the texts its node lacks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from probrank.data.candidates import CandidateList
from probrank.data.folds import cross_validate
from probrank.data.trec import Qrels, Run
from probrank.evaluation.calibration import expected_calibration_error
from probrank.evaluation.measures import evaluate
from probrank.evaluation.ranking_calibration import (
    expected_ranking_calibration_error,
    gaussian_order_probabilities,
    score_order_probabilities,
)
from probrank.exceptions import InputDataError
from probrank.executors import ExecutorKind, Task, open_executor
from probrank.experiments.cascade.collections import TestCollection, load_collection
from probrank.experiments.cascade.config import (
    CascadeExperimentSettings,
    FirstStageSettings,
    SecondStageSettings,
)
from probrank.experiments.results import ExperimentResult
from probrank.retrieval.analysis import Analyzer, Stemmer, StopWords
from probrank.retrieval.bm25 import BM25Method, BM25Settings, open_or_build
from probrank.retrieval.cascade import CascadeResult, CascadeSettings, run_cascade
from probrank.retrieval.risk import RankingCriterion

__all__ = ["MEASURES", "STAGES", "run"]

STAGES = ("bm25", "rerank", "risk")
"""The stages, in table order (and the names of their run files)."""

MEASURES = ("nDCG@10", "AP", "P@10", "ECE", "ERCE")
"""The measures reported per stage."""

_RANKING_MEASURES = ("nDCG@10", "AP", "P@10")


def _first_stage_settings(table: FirstStageSettings) -> BM25Settings:
    analyzer = Analyzer(stopwords=StopWords(table.stopwords), stemmer=Stemmer(table.stemmer))
    return BM25Settings(k1=table.k1, b=table.b, method=BM25Method(table.method), analyzer=analyzer)


def _index_dir(table: FirstStageSettings, name: str, config_path: Path) -> Path | None:
    from probrank.encoders.cache import resolve_cache_dir

    configured = table.index_dir
    if configured is None:
        configured = f".probrank-cache/bm25/{name}"
    return resolve_cache_dir(configured, config_path)


def _make_reranker(second: SecondStageSettings, encoder: Any, seed: int, smoke: bool) -> Any:
    from probrank.models.rerankers import GPFReranker, MultiTaskReranker
    from probrank.retrieval.features import SideFeatureReranker, SideFeaturesOnly

    make: Any
    if second.model == "gpf":
        small: dict[str, Any] = {}
        if smoke:
            small = {"epochs": (1,), "gammas": (2.0,), "num_features": 64, "hidden": 32}
        settings = dataclasses.replace(second.gpf, **small, seed=seed)
        pairs: Any = encoder if second.pair_features else SideFeaturesOnly(encoder)
        make = lambda: GPFReranker(settings, pairs)  # noqa: E731
    else:
        if not second.pair_features:
            raise InputDataError("pair_features = false needs [second_stage] model = 'gpf'")
        small = {"progress": False}
        if smoke:
            small.update(max_epochs=5, patience=2, hidden=8, posterior_samples=20)
        multitask = dataclasses.replace(second.multitask, **small, seed=seed)
        make = lambda: MultiTaskReranker(multitask, encoder)  # noqa: E731
    if second.dense_features:
        return lambda: SideFeatureReranker(make(), encoder)
    return make


def _bm25_probabilities(
    lists: Sequence[CandidateList], folds: list[list[str]], seed: int
) -> np.ndarray:
    """Held-out P(relevant) of BM25: a logistic regression on the first-stage features of
    each candidate, fitted on the other folds' topics."""
    from sklearn.linear_model import LogisticRegression

    rows = {item.qid: np.asarray(item.features, dtype=np.float64) for item in lists}
    labels = {item.qid: np.asarray(item.labels, dtype=np.int64) for item in lists}

    def fit(train: list[str], _fold: int) -> Callable[[np.ndarray], np.ndarray]:
        x = np.concatenate([rows[q] for q in train])
        y = np.concatenate([labels[q] for q in train])
        mean, std = x.mean(0), x.std(0) + 1e-12
        if y.min() == y.max():  # one class only: its rate
            rate = float(y[0])
            return lambda features: np.full(len(features), rate)
        model = LogisticRegression(C=1.0, max_iter=1000, random_state=seed)
        model.fit((x - mean) / std, y)
        return lambda features: model.predict_proba((features - mean) / std)[:, 1]

    def predict(model: Callable[[np.ndarray], np.ndarray], test: list[str]) -> dict[str, Any]:
        return {q: model(rows[q]) for q in test}

    result = cross_validate(folds, fit, predict, keys=[item.qid for item in lists])
    held_out: dict[str, np.ndarray] = {}
    for part in result.predictions:
        held_out.update(part or {})
    out = [held_out[item.qid] for item in lists]
    return np.concatenate(out)


def _stage_measures(
    result: CascadeResult, qrels: Qrels, seed: int, n_bins: int
) -> dict[str, dict[str, float]]:
    evaluated = Qrels({q: qrels[q] for q in qrels if any(g > 0 for g in qrels[q].values())})
    labels = np.asarray([y for item in result.lists for y in item.labels], dtype=np.int64)
    grades = [item.grades for item in result.lists]
    bm25_p = _bm25_probabilities(result.lists, result.folds, seed)
    bm25_orders = [
        score_order_probabilities(torch.tensor([row[0] for row in item.features]))
        for item in result.lists
    ]
    estimate = result.estimate
    if estimate.covariances:
        model_orders = [
            gaussian_order_probabilities(estimate.mean[s : s + len(item)], cov)
            for item, s, cov in zip(
                result.lists, _starts(result.lists), estimate.covariances, strict=True
            )
        ]
    else:
        model_orders = [
            gaussian_order_probabilities(
                estimate.mean[s : s + len(item)], estimate.variance[s : s + len(item)]
            )
            for item, s in zip(result.lists, _starts(result.lists), strict=True)
        ]
    model_ece = expected_calibration_error(estimate.probability, labels, n_bins=n_bins)
    model_erce = expected_ranking_calibration_error(model_orders, grades, n_bins=n_bins)
    calibration = {
        "bm25": (
            expected_calibration_error(bm25_p, labels, n_bins=n_bins),
            expected_ranking_calibration_error(bm25_orders, grades, n_bins=n_bins),
        ),
        "rerank": (model_ece, model_erce),
        "risk": (model_ece, model_erce),
    }
    runs = {"bm25": result.first_stage, "rerank": result.rerank, "risk": result.risk}
    out = {}
    for stage, run in runs.items():
        values = evaluate(evaluated, run, list(_RANKING_MEASURES))
        out[stage] = {
            **{m: float(values[m]) for m in _RANKING_MEASURES},
            "ECE": float(calibration[stage][0]),
            "ERCE": float(calibration[stage][1]),
        }
    return out


def _starts(lists: Sequence[CandidateList]) -> list[int]:
    starts, offset = [], 0
    for item in lists:
        starts.append(offset)
        offset += len(item)
    return starts


@contextmanager
def num_threads(threads: int) -> Iterator[None]:
    """Torch's intra-op threads for a block; the caller's setting is restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _run_folder() -> Path | None:
    """The run folder of this experiment (``--out``), if one is active."""
    from probrank.experiments import provenance

    output = provenance._ACTIVE.get()  # set by run_experiment for the protocol's duration
    return None if output is None else Path(output.directory)


def _write_runs(folder: Path, runs: dict[str, Run]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stage, run in runs.items():
        path = folder / f"{stage}.run"
        run.write(path)
        written.append(str(path))
    return written


def _smoke(data: TestCollection) -> TestCollection:
    judged = [q for q in data.topics if q in data.qrels][:8]
    qrels = Qrels({q: data.qrels[q] for q in judged})
    return TestCollection(
        data.name, data.collection, {q: data.topics[q] for q in judged}, qrels, data.notes
    )


def _second_stage_texts(
    bm25_run: Run, data: TestCollection, depth: int, relevance_level: int
) -> list[str]:
    """Every distinct text the second stage encodes: the judged topics and their top
    ``depth`` documents (as :func:`~probrank.retrieval.cascade.run_cascade` builds them)."""
    judged = Run({q: bm25_run[q] for q in bm25_run if q in data.qrels and len(bm25_run[q])})
    lists = CandidateList.from_trec(
        dict(data.topics),
        judged,
        data.collection,
        data.qrels,
        depth=depth,
        relevance_level=relevance_level,
    )
    return list(dict.fromkeys(t for item in lists for t in (item.query, *item.candidates)))


def _cascade_seed(
    encoder: Any,
    encoder_table: dict[str, Any],
    config_path: Path,
    bm25_run: Run,
    data: TestCollection,
    second: SecondStageSettings,
    settings: CascadeSettings,
    smoke: bool,
    n_bins: int,
    progress: bool,
) -> tuple[dict[str, dict[str, float]], CascadeResult]:
    """One task: the cascade of one seed and its measures per stage (``encoder`` None: build
    it from ``encoder_table``, reading the shared cache)."""
    from probrank.encoders.config import encoder_from_config

    if encoder is None:
        encoder = encoder_from_config(encoder_table, config_path, show_progress=False)
    make = _make_reranker(second, encoder, settings.seed, smoke)
    result = run_cascade(
        bm25_run,
        data.topics,
        data.collection,
        data.qrels,
        make,
        settings,
        progress=progress,
    )
    return _stage_measures(result, data.qrels, settings.seed, n_bins), result


def run(
    config: CascadeExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """Run the cascade a config describes (see the module docstring).

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (relative folders are resolved against it).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: A few judged topics, no index on disk, a small second stage.
    """
    from probrank.encoders.config import encoder_from_config

    experiment = config.experiment
    quiet = experiment.quiet
    first = config.first_stage
    second = config.second_stage
    ranking = config.ranking
    n_bins = config.evaluation.n_bins
    table = config.collection
    threads = experiment.threads
    executor_settings = experiment.executor_settings()
    local = executor_settings.kind is ExecutorKind.LOCAL
    encoder_table = config.encoder.table()
    with num_threads(threads):
        data = load_collection(table.name, table.data_dir, progress=not quiet)
        if smoke:
            data = _smoke(data)
        bm25_settings = _first_stage_settings(first)
        index_dir = None if smoke else _index_dir(first, data.name, config_path)
        index, built = open_or_build(index_dir, data.collection, bm25_settings, progress=not quiet)
        bm25_run = index.search(data.topics, k=first.k, name="bm25")
        encoder = encoder_from_config(encoder_table, config_path, show_progress=not quiet)
        encoded_collection = 0
        if not smoke:  # the whole collection, once (cached on disk)
            from probrank.executors.encoding import encode_collection

            report = encode_collection(
                encoder,
                data.collection.texts,
                executor=executor_settings,
                threads_per_worker=threads,
                progress=not quiet,
            )
            encoded_collection = report.encoded
        depth = second.depth
        values: dict[str, dict[str, list[float]]] = {s: {m: [] for m in MEASURES} for s in STAGES}
        data_out: dict[str, Any] = {}
        per_seed = [
            CascadeSettings(
                depth=min(depth, 10) if smoke else depth,
                folds=2 if smoke else second.folds,
                criterion=RankingCriterion(ranking.criterion),
                risk_aversion=ranking.risk_aversion,
                alpha=ranking.alpha,
                num_draws=ranking.num_draws,
                seed=seed,
            )
            for seed in range(seeds)
        ]
        level = per_seed[0].relevance_level
        encoder.encode_texts(_second_stage_texts(bm25_run, data, per_seed[0].depth, level))
        with open_executor(executor_settings) as executor:
            shared = [executor.share(v) for v in (bm25_run, data)]
            tasks = [
                Task(
                    f"seed {settings.seed}",
                    _cascade_seed,
                    (
                        encoder if local else None,
                        encoder_table,
                        config_path,
                        *shared,
                        second,
                        settings,
                        smoke,
                        n_bins,
                        not quiet and local and seeds == 1,
                    ),
                    threads=threads,
                )
                for settings in per_seed
            ]
            outcomes = executor.map(tasks, desc="seeds", progress=not quiet and seeds > 1)
        for seed, (stage_measures, result) in enumerate(outcomes):
            for stage, measures in stage_measures.items():
                for measure, value in measures.items():
                    values[stage][measure].append(value)
            if seed == 0:
                data_out["folds (seed 0)"] = result.folds
                folder = _run_folder()
                if folder is not None and not smoke:
                    runs = {"bm25": bm25_run, "rerank": result.rerank, "risk": result.risk}
                    data_out["runs"] = _write_runs(folder, runs)
    evaluated = sum(1 for q in data.qrels if any(g > 0 for g in data.qrels[q].values()))
    notes = [
        *data.notes,
        f"BM25 (bm25s) {bm25_settings.to_json()}; index "
        + ("built" if built else f"reused from {index_dir}")
        + f"; {len(index.docnos)} documents",
        f"encoder {encoder.path.name} ({encoder.mode.value}, {encoder.pooling.value} pooling, "
        f"max_length {encoder.max_length}); {encoded_collection} collection texts encoded in "
        "this run (the rest came from the cache)",
        f"second stage {second.model} over the top {depth} documents (features: "
        + ("encoder pair features, " if second.pair_features else "")
        + "BM25 score features"
        + (", query-document cosine features" if second.dense_features else "")
        + f"), {second.folds}-fold cross-validation over topics; risk run: "
        f"{ranking.criterion} (alpha {ranking.alpha}, lambda {ranking.risk_aversion})",
        f"ranking measures over the {evaluated} topics with a relevant document; ECE "
        f"({n_bins} bins, top-label) and ERCE over the reranked candidates, held out",
    ]
    title = experiment.title or f"cascade: {config_path.stem}"
    return ExperimentResult(
        title,
        values,
        notes=notes,
        data=data_out,
        settings={
            "first_stage": bm25_settings.to_json(),
            "second_stage": {
                "model": second.model,
                "depth": depth,
                "pair_features": second.pair_features,
                "dense_features": second.dense_features,
            },
        },
    )
