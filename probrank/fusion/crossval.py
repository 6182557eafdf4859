"""Cross-validation of trained fusion over topics: every topic is fused by a model fitted
without its judgements.

The folds are those of QLFusion's cross-validation (a permutation of the topics drawn from
``torch.Generator().manual_seed(seed)``, fold `f` = every ``folds``-th topic from position
`f`), so the same seed splits the same topics in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import check_runs
from probrank.fusion.trained import TrainedFusion, training_topics

__all__ = ["CrossValidatedFusion", "cross_validate", "topic_folds"]


def topic_folds(topics: Sequence[str], folds: int, seed: int = 0) -> list[list[str]]:
    """Split ``topics`` into ``folds`` near-equal random folds (each in the input order).

    Raises:
        InputDataError: fewer than 2 folds, or fewer topics than folds.
    """
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InputDataError(f"cross-validation needs at least 2 folds, got {folds!r}")
    if len(topics) < folds:
        raise InputDataError(f"{len(topics)} topics cannot fill {folds} folds")
    import torch

    order = torch.randperm(len(topics), generator=torch.Generator().manual_seed(seed)).tolist()
    return [[topics[i] for i in sorted(order[f::folds])] for f in range(folds)]


@dataclass(frozen=True)
class CrossValidatedFusion:
    """The outcome of :func:`cross_validate`.

    Attributes:
        fused: Every judged topic the runs retrieved, fused by the model of its fold.
        folds: The test topics of each fold.
        models: The fitted model of each fold.
    """

    fused: Run
    folds: list[list[str]]
    models: list[TrainedFusion]


def cross_validate(
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
        folds: Number of folds.
        seed: Seeds the split.
        name: The fused run's name.
        progress: Called with the fold index after each fold.

    Returns:
        The fused run over all topics, the folds and the models.
    """
    check_runs(runs)
    topics = training_topics(runs, qrels)
    split = topic_folds(topics, folds, seed)
    judged = qrels.as_dict()
    fused: dict[str, dict[str, float]] = {}
    models = []
    for index, test in enumerate(split):
        held_out = set(test)
        train = Qrels({q: judged[q] for q in topics if q not in held_out}, name=qrels.name)
        model = make().fit(runs, train)
        part = model.fuse([run.restrict(test) for run in runs], name=name)
        fused.update(part.as_dict())
        models.append(model)
        if progress is not None:
            progress(index)
    ordered = {q: fused[q] for q in topics if q in fused}
    return CrossValidatedFusion(Run(ordered, name=name), split, models)
