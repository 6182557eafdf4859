"""Cross-validation of trained fusion over topics: every topic is fused by a model fitted
without its judgements.

The folds follow the project's one rule (:func:`probrank.data.folds.split_folds`: a seeded
permutation of the topics, fold `f` = every ``folds``-th topic from position `f`, each fold in
topic order), so the same seed splits the same topics here, in QLFusion's cross-fitting and
in the retrieval cascade; the loop is :func:`probrank.data.folds.cross_validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from probrank.data.folds import cross_validate, split_folds
from probrank.data.trec import Qrels, Run
from probrank.fusion.comb import check_runs
from probrank.fusion.trained import TrainedFusion, training_topics

__all__ = ["CrossValidatedFusion", "cross_validated_fusion"]


@dataclass(frozen=True)
class CrossValidatedFusion:
    """The outcome of :func:`cross_validated_fusion`.

    Attributes:
        fused: Every judged topic the runs retrieved, fused by the model of its fold.
        folds: The test topics of each fold.
        models: The fitted model of each fold.
    """

    fused: Run
    folds: list[list[str]]
    models: list[TrainedFusion]


def cross_validated_fusion(
    runs: Sequence[Run],
    qrels: Qrels,
    make: Callable[[], TrainedFusion],
    *,
    folds: int = 5,
    seed: int = 0,
    name: str = "fused",
    progress: Callable[[int], None] | None = None,
) -> CrossValidatedFusion:
    """Fit one model per fold on the other folds' judgements and fuse the fold's topics.

    Args:
        runs: The runs (distinct names); not modified.
        qrels: Judgements. Topics are those of :func:`~probrank.fusion.trained.training_topics`.
        make: Builds an unfitted model (called once per fold).
        folds: Number of folds (at least 2).
        seed: Seeds the split.
        name: The fused run's name.
        progress: Called with the fold index after each fold.

    Returns:
        The fused run over all topics, the folds and the models.
    """
    check_runs(runs)
    topics = training_topics(runs, qrels)
    split = split_folds(topics, folds, seed=seed)
    judged = qrels.as_dict()

    def fit(train: list[str], _fold: int) -> TrainedFusion:
        return make().fit(runs, Qrels({q: judged[q] for q in train}, name=qrels.name))

    def predict(model: TrainedFusion, test: list[str]) -> Run:
        return model.fuse([run.restrict(test) for run in runs], name=name)

    result = cross_validate(split, fit, predict, keys=topics, progress=progress)
    fused: dict[str, dict[str, float]] = {}
    for part in result.predictions:
        if part is not None:
            fused.update(part.as_dict())
    ordered = {q: fused[q] for q in topics if q in fused}
    models = [m for m in result.models if m is not None]
    return CrossValidatedFusion(Run(ordered, name=name), split, models)
