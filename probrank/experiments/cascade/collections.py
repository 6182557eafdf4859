"""The test collections of the cascade protocol: documents, topics and binary-relevance qrels.

* ``vaswani``: the NPL collection as Terrier ships it (``doc-text.trec``, 11,429 documents;
  ``query-text.trec``, 93 topics; ``qrels``, all grades 1).
* ``liveqa_medquad``: the 104 TREC 2017 LiveQA-Med questions over MedQuAD's answers. A
  document is one MedQuAD question-answer pair, its text ``"<question> <answer>"``, its docno
  the id LiveQA-Med's judgements use, ``<source>_<document id>_Sec<pair id>.txt`` (MedQuAD's
  ``MPlusHerbsSupplements`` source is spelled ``MPlusHerbsSuppls`` there). The A.D.A.M.,
  MedlinePlus drugs and herbs folders have no answer texts (removed for copyright): their
  pairs enter the collection only when LiveQA-Med's ``answers.csv`` carries the text (the
  judged ones; ``Question: q (Also called: ...) URL: u Answer: a`` becomes ``"q a"``), so the
  collection is every MedQuAD answer with a text plus every judged answer. Qrels: grades 3-4
  (``3-Correct-but-incomplete``, ``4-Excellent``) are relevant, mapped to gains 1 and 2; grades
  1-2 become 0 (judged, not relevant).

Both loaders read through probrank's own readers (:class:`~probrank.retrieval.Collection`,
:func:`~probrank.data.topics.read_topics`,
:func:`~probrank.data.datasets.medquad.read_medquad`,
:func:`~probrank.data.datasets.liveqa_med.load_liveqa_med`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from probrank.data.paths import shared_data_dir
from probrank.data.topics import read_topics
from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.retrieval.collection import Collection

__all__ = ["COLLECTIONS", "TestCollection", "load_collection", "medquad_docno"]

_SOURCE_IDS = {"MPlusHerbsSupplements": "MPlusHerbsSuppls"}
_CSV_ANSWER = re.compile(r"^Question: (?P<q>.*?) URL: \S+ Answer: (?P<a>.*)$")
_ALSO_CALLED = re.compile(r"\s*\(Also called:[^()]*\)\s*$")


@dataclass(frozen=True)
class TestCollection:
    """Documents, topics and qrels of one test collection.

    Attributes:
        name: The collection's name.
        collection: The documents.
        topics: ``{qid: query}``.
        qrels: Binary or graded judgements (gain 0: judged not relevant).
        notes: What was read (for the results' notes).
    """

    __test__ = False  # not a pytest class

    name: str
    collection: Collection
    topics: dict[str, str]
    qrels: Qrels
    notes: tuple[str, ...] = ()


def medquad_docno(source: str, qid: str) -> str:
    """The LiveQA-Med answer id of a MedQuAD pair (``source``, question ``qid`` ``doc-pid``)."""
    document, _, pair = qid.rpartition("-")
    return f"{_SOURCE_IDS.get(source, source)}_{document}_Sec{pair}.txt"


def _vaswani(folder: Path, progress: bool) -> TestCollection:
    collection = Collection.from_trec(folder / "doc-text.trec", progress=progress, name="vaswani")
    topics = read_topics(folder / "query-text.trec")
    qrels = Qrels.read(folder / "qrels")
    return TestCollection(
        "vaswani",
        collection,
        topics,
        qrels,
        (f"vaswani: {len(collection)} documents, {len(topics)} topics",),
    )


def _liveqa_medquad(folder: Path, progress: bool) -> TestCollection:
    from probrank.data.datasets.liveqa_med import load_liveqa_med
    from probrank.data.datasets.medquad import read_medquad

    medquad_dir = folder / "collections" / "medquad"
    pairs = read_medquad(medquad_dir, include_empty_answers=False, progress=progress)
    texts: dict[str, str] = {}
    repeated = 0
    for pair in pairs:
        docno = medquad_docno(pair.source, pair.qid)
        if docno in texts:
            repeated += 1
            continue
        texts[docno] = f"{pair.question} {pair.answer}"
    with warnings.catch_warnings():  # the 168 pairs graded twice: the loader keeps the max
        warnings.simplefilter("ignore", UserWarning)
        liveqa = load_liveqa_med(folder / "qa" / "liveqa-med", threshold=3)
    topics: dict[str, str] = {}
    judgements: dict[str, dict[str, int]] = {}
    from_csv = 0
    for item in liveqa.lists:
        topics[item.qid] = item.query
        for docno, text, grade in zip(
            item.candidate_ids, item.candidates, item.grades, strict=True
        ):
            judgements.setdefault(item.qid, {})[docno] = max(0, grade - 2)
            if docno not in texts:
                match = _CSV_ANSWER.match(text)
                if match is None:
                    raise InputDataError(
                        f"answers.csv text of {docno!r} is not "
                        "'Question: ... URL: ... Answer: ...'",
                        path=folder / "qa" / "liveqa-med" / "answers.csv",
                    )
                question = _ALSO_CALLED.sub("", match.group("q"))
                texts[docno] = f"{question} {match.group('a')}"
                from_csv += 1
    collection = Collection(texts.items(), name="medquad")
    notes = (
        f"liveqa_medquad: {len(collection)} documents ({len(collection) - from_csv} MedQuAD "
        f"answers with a text, {from_csv} judged answers whose text only answers.csv carries; "
        f"{repeated} repeated MedQuAD ids skipped), {len(topics)} LiveQA-Med questions; "
        "relevant = grade 3 or 4 (gains 1, 2)",
    )
    return TestCollection("liveqa_medquad", collection, topics, Qrels(judgements), notes)


COLLECTIONS: dict[str, Callable[[Path, bool], TestCollection]] = {
    "vaswani": lambda root, progress: _vaswani(root / "collections" / "vaswani", progress),
    "liveqa_medquad": _liveqa_medquad,
}
"""Loaders by name; each takes the shared data folder and whether to show progress."""


def load_collection(
    name: str, root: str | Path | None = None, *, progress: bool = True
) -> TestCollection:
    """Load a named test collection from the shared data folder.

    Args:
        name: A key of :data:`COLLECTIONS`.
        root: The shared data folder (default :func:`probrank.data.paths.shared_data_dir`).
        progress: Show progress while reading.

    Raises:
        InputDataError: an unknown name, or missing or malformed files.
    """
    if name not in COLLECTIONS:
        raise InputDataError(f"collection must be one of {', '.join(COLLECTIONS)}, got {name!r}")
    base = Path(root) if root is not None else shared_data_dir()
    return COLLECTIONS[name](base, progress)
