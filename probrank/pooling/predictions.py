"""The explored documents' predictions kept between calls of ``probrank pool next``, and the
held-out check of the relevance model from them.

``pool next`` starts the strategy afresh at every call, so the predictions the ``bayesian``
strategy makes of the documents it draws uniformly (explores) would end with the process.
``--predictions FILE`` appends them to a JSON-lines file, one line per explored document::

    {"batch": 3, "topic": "1043135", "doc": "8412684_3", "draws": [0.021, 0.034, ...]}

``batch`` numbers the calls that drew documents (from 1); ``draws`` is the document's
P(relevant) under each posterior draw of that call's fit, which the documents of one call
share. ``probrank pool check FILE --judged QRELS`` compares the relevant documents found among
the judged ones with their predictive distribution
(:func:`~probrank.pooling.checks.check_explored`); a document drawn twice counts with its
newest prediction. The check assumes that what ``pool next`` proposes is judged before it is
called again (the usual loop): a drawn document left unjudged and later proposed by the
acquisition would enter the check chosen by the acquisition, not uniformly.

The file is read whole and rewritten atomically with the new lines, so a failure leaves the
old file as it was; a file that is not this format is refused before anything is written.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from probrank._files import write_text_atomically
from probrank.data._io import read_text
from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.pooling.checks import ExploredCheck, check_explored

__all__ = ["Prediction", "append_predictions", "check_predictions", "read_predictions"]


@dataclass(frozen=True)
class Prediction:
    """One explored document's prediction, made when ``pool next`` drew it.

    Attributes:
        batch: The call that drew it (from 1).
        topic: Its topic.
        doc: The document.
        draws: Its P(relevant) under each posterior draw of the call's fit, `s`.
    """

    batch: int
    topic: str
    doc: str
    draws: np.ndarray

    def to_json(self) -> dict[str, object]:
        """The file's line object."""
        return {
            "batch": self.batch,
            "topic": self.topic,
            "doc": self.doc,
            "draws": [float(p) for p in self.draws],
        }


def _parse(line: str, where: str) -> Prediction:
    try:
        obj = json.loads(line, parse_constant=lambda name: math.nan)
    except json.JSONDecodeError as exc:
        raise InputDataError(f"{where}: not a JSON line ({exc.msg})") from None
    if not isinstance(obj, dict) or set(obj) != {"batch", "topic", "doc", "draws"}:
        raise InputDataError(f"{where}: expected an object with batch, topic, doc and draws")
    batch, topic, doc, draws = obj["batch"], obj["topic"], obj["doc"], obj["draws"]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputDataError(f"{where}: batch must be a positive integer, got {batch!r}")
    for name, value in (("topic", topic), ("doc", doc)):
        if not isinstance(value, str) or not value or value.split() != [value]:
            raise InputDataError(f"{where}: {name} must be an id without spaces, got {value!r}")
    if (
        not isinstance(draws, list)
        or not draws
        or not all(
            isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0
            for p in draws
        )
    ):
        raise InputDataError(f"{where}: draws must be a non-empty list of probabilities")
    return Prediction(batch, topic, doc, np.asarray(draws, dtype=np.float64))


def read_predictions(path: str | os.PathLike[str]) -> list[Prediction]:
    """The predictions in ``path`` in file order ([] when the file does not exist).

    Raises:
        InputDataError: a line that is not a prediction, or a batch whose documents have
            different numbers of draws.
    """
    path = Path(path)
    if not path.exists():
        return []
    if not path.is_file():
        raise InputDataError(f"{path} is not a file")
    out = []
    draws: dict[int, int] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        prediction = _parse(line, where)
        if draws.setdefault(prediction.batch, len(prediction.draws)) != len(prediction.draws):
            raise InputDataError(f"{where}: batch {prediction.batch} has another number of draws")
        out.append(prediction)
    return out


def append_predictions(
    path: str | os.PathLike[str], explored: Mapping[tuple[str, str], np.ndarray]
) -> int:
    """Append one call's predictions (``(topic, doc) -> P(relevant) per draw``, `s` each) to
    ``path`` as the next batch, rewriting it atomically; nothing is written when ``explored``
    is empty. Returns the lines added.

    Raises:
        InputDataError: the existing file is not a predictions file (it is left as it is).
    """
    if not explored:
        return 0
    path = Path(path)
    earlier = read_predictions(path)  # the file is read once, then rewritten from it
    batch = max((p.batch for p in earlier), default=0) + 1
    added = [
        Prediction(batch, topic, doc, np.asarray(draws)) for (topic, doc), draws in explored.items()
    ]
    lines = (json.dumps(p.to_json()) + "\n" for p in [*earlier, *added])
    write_text_atomically(path, "".join(lines))
    return len(added)


def check_predictions(
    predictions: Sequence[Prediction], judged: Qrels, *, level: int = 1, seed: int = 0
) -> ExploredCheck | None:
    """The held-out check of the relevance model on the predicted documents that ``judged``
    judges (None when it judges none of them): grades >= ``level`` are relevant."""
    newest = {(p.topic, p.doc): p for p in predictions}
    grades = judged.as_dict()
    batches: dict[int, tuple[list[np.ndarray], list[bool]]] = {}
    for (topic, doc), prediction in newest.items():
        grade = grades.get(topic, {}).get(doc)
        if grade is None or grade < 0:  # not judged (a negative grade: pooled, unjudged)
            continue
        columns, relevant = batches.setdefault(prediction.batch, ([], []))
        columns.append(prediction.draws)
        relevant.append(grade >= level)
    return check_explored(
        [(np.column_stack(columns), np.array(relevant)) for columns, relevant in batches.values()],
        seed=seed,
    )
