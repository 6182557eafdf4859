"""Where a judging server's questions and ranker come from.

Questions (:func:`load_questions`, :func:`load_trec_questions`):

* a data set of the registry (:mod:`probrank.data.datasets`) by name (``liveqa-med``,
  ``mediqa``: their test questions), read in place from the shared data folder with the same
  selection as the ``interactive`` experiments (questions with a correct answer, 2 to 45
  candidates);
* a JSON-lines file (:meth:`~probrank.data.candidates.CandidateList.from_jsonl`: one question
  per line, ``{"qid", "query", "candidates": [{"id", "text"}, ...]}``) or a CSV file with the
  columns ``qid, query, candidate_id, candidate``
  (:meth:`~probrank.data.candidates.CandidateList.from_dataframe`);
* TREC topics, a run and the documents' texts (a TREC ``<DOC>`` file or JSON lines
  ``{"docno", "text"}``): the run's top ``depth`` documents of each topic
  (:meth:`~probrank.data.candidates.CandidateList.from_trec`).

The ranker (:func:`build_ranker`): a saved :class:`~probrank.models.InteractiveRanker`
(``--model DIR``), or a new one warm-started as the ``interactive`` experiments do, on the
MEDIQA 2019 training and validation questions, through the on-disk feature and warm-start
caches (``.probrank-cache`` in the working directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from probrank.data.candidates import CandidateList, pair_texts
from probrank.data.datasets import (
    dataset_info,
    dataset_names,
    load_candidate_lists,
)
from probrank.exceptions import InputDataError

if TYPE_CHECKING:  # torch and the models load on use: questions are read without them
    from probrank.encoders.transformer import TransformerEncoder
    from probrank.models.interactive.model import InteractiveRanker

__all__ = [
    "MAX_CANDIDATES",
    "build_ranker",
    "cached_encoder",
    "dataset_choices",
    "load_questions",
    "load_trec_questions",
]

MAX_CANDIDATES = 45
"""Questions with more candidates are left out of the named data sets (as in the
``interactive`` experiments)."""


def dataset_choices() -> tuple[str, ...]:
    """The data sets served by name: the registry's loadable graded ones
    (:mod:`probrank.data.datasets`), their test split."""
    return dataset_names(graded=True, generated=False)


def _usable(lists: list[CandidateList], *, min_best_grade: int) -> list[CandidateList]:
    return [
        item
        for item in lists
        if 2 <= len(item) <= MAX_CANDIDATES
        and (not item.grades or max(item.grades) >= min_best_grade)
    ]


def _read_csv(path: Path) -> list[CandidateList]:
    import pandas as pd

    text_columns = {"qid": str, "query": str, "candidate_id": str, "candidate": str}
    try:
        frame = pd.read_csv(path, dtype=text_columns, keep_default_na=False)
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise InputDataError(f"not a readable CSV file ({reason})", path=path) from None
    frame.index = pd.RangeIndex(2, len(frame) + 2)  # "row N": a record's line (header: 1)
    try:
        return CandidateList.from_dataframe(frame)
    except InputDataError as exc:
        raise InputDataError(exc.reason, path=path) from None


def load_questions(data: str) -> tuple[list[CandidateList], str]:
    """The questions of a named data set or of a JSON-lines or CSV file.

    Args:
        data: A data set name (:func:`dataset_choices`), or a ``.jsonl`` (``.jsonl.gz``) or
            ``.csv`` file.

    Returns:
        The questions and a name of the source (for messages).

    Raises:
        InputDataError: an unknown name or file type, a missing file or shared data folder,
            or a malformed file (naming the file and line or row).
    """
    names = dataset_choices()
    if data in dataset_names(graded=True, generated=False, aliases=True):
        name = dataset_info(data).name.value
        lists = _usable(load_candidate_lists(name, "test"), min_best_grade=3)
        if not lists:
            raise InputDataError(f"no {name} question has 2 to {MAX_CANDIDATES} answers")
        return lists, name
    path = Path(data)
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".jsonl"):
        lists = CandidateList.from_jsonl(path)
    elif name.endswith(".csv"):
        lists = _read_csv(path)
    else:
        raise InputDataError(
            f"--data must be a data set ({', '.join(names)}) or a .jsonl or .csv file, got {data!r}"
        )
    return lists, str(path)


def load_trec_questions(
    topics: str | os.PathLike[str],
    run: str | os.PathLike[str],
    documents: str | os.PathLike[str],
    *,
    depth: int = 20,
) -> tuple[list[CandidateList], str]:
    """One question per topic of ``run``: its top ``depth`` documents.

    Args:
        topics: A TREC topics file (``<top>`` blocks or ``qid<TAB>text`` lines).
        run: A TREC run.
        documents: The documents' texts: a TREC ``<DOC>`` file, or JSON lines with ``docno``
            and ``text``.
        depth: Candidates per topic.

    Raises:
        InputDataError: a malformed file, a run document without a text, a bad depth.
    """
    from probrank.data.trec import Run
    from probrank.retrieval.collection import Collection

    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
        raise InputDataError(f"--depth must be an integer >= 2, got {depth!r}")
    name = Path(documents).name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".json")):
        collection = Collection.from_jsonl(documents)
    else:
        collection = Collection.from_trec(documents, progress=False)
    lists = CandidateList.from_trec(topics, Run.read(run), collection, depth=depth)
    return lists, str(run)


def cached_encoder(
    encoder: TransformerEncoder | None = None, *, progress: bool = True
) -> TransformerEncoder:
    """An encoder with the on-disk feature cache (``.probrank-cache``): the default
    all-MiniLM-L6-v2, or the same model as ``encoder``."""
    from probrank.encoders.config import encoder_from_config

    if encoder is None:
        return encoder_from_config({"show_progress": progress}, None)
    table = {
        "name_or_path": str(encoder.path),
        "mode": encoder.mode.value,
        "pooling": encoder.pooling.value,
        "max_length": encoder.max_length,
        "show_progress": progress,
    }
    return encoder_from_config(table, None)


def build_ranker(
    *,
    posterior: str | None = None,
    seed: int = 0,
    model: str | os.PathLike[str] | None = None,
    encoder: TransformerEncoder | None = None,
) -> InteractiveRanker:
    """The interactive ranker of a judging server.

    Args:
        posterior: :class:`~probrank.models.interactive.settings.PosteriorKind` name (default
            ``laplace``; with ``model``, it must be the saved model's).
        seed: Seed of the warm start.
        model: A folder written by :meth:`InteractiveRanker.save`; None: warm-start a new
            ranker on MEDIQA's training and validation questions (cached on disk).
        encoder: The encoder of a new ranker (default: :func:`cached_encoder`).

    Raises:
        InputDataError: a bad saved model, a ``posterior`` other than the saved model's, or
            missing MEDIQA data for the warm start.
    """
    import torch

    from probrank._options import parse_enum
    from probrank.encoders.config import encoder_cache_dir
    from probrank.models.interactive.model import InteractiveRanker
    from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind

    if model is not None:
        ranker = InteractiveRanker.load(model)
        saved = ranker.settings.posterior
        if posterior is not None and parse_enum(PosteriorKind, posterior, "posterior") != saved:
            raise InputDataError(
                f"the saved model's posterior is {saved.value!r}, not {posterior!r}", path=model
            )
        return ranker
    kind = parse_enum(PosteriorKind, posterior or PosteriorKind.LAPLACE.value, "posterior")
    encoder = encoder or cached_encoder()
    ranker = InteractiveRanker(InteractiveRankerSettings(posterior=kind, seed=seed), encoder)
    if not ranker.settings.needs_warm_start:
        return ranker
    blocks = []
    for split in ("train", "validation"):
        lists = _usable(load_candidate_lists("mediqa", split), min_best_grade=0)
        queries, texts = pair_texts(lists)
        with torch.no_grad():
            x = encoder.encode_pairs(queries, texts).float().cpu()
        features, start = [], 0
        for item in lists:
            features.append(x[start : start + len(item)].clone())
            start += len(item)
        blocks.append((features, [item.grades for item in lists]))
    (train_x, train_g), (val_x, val_g) = blocks
    return ranker.fit_features(
        train_x, train_g, val_x, val_g, cache_dir=encoder_cache_dir({}, None)
    )
