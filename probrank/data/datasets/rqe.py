"""MEDIQA 2019 Task 2, recognising question entailment (RQE): consumer question / FAQ pairs."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from probrank.data.datasets._xml import child_text, children, parse_xml
from probrank.exceptions import InputDataError

__all__ = ["RQEPair", "read_rqe"]


@dataclass(frozen=True)
class RQEPair:
    """One pair: does the consumer health question ``chq`` entail the FAQ ``faq``?"""

    pair_id: str
    chq: str
    faq: str
    entails: bool
    kind: str | None = None


def read_rqe(path: str | os.PathLike[str]) -> list[RQEPair]:
    """Read ``<pair pid type value="true|false"><chq/><faq/></pair>`` elements.

    A pair whose ``chq`` or ``faq`` is present but empty (the training set has one) is skipped
    with a warning that counts them.

    Raises:
        InputDataError: a missing, empty, unsafe or malformed file, a root without ``<pair>``
            elements, a pair without ``pid``, ``chq`` or ``faq``, a ``value`` other than
            true/false, or no usable pair (the message names the file and the element).
    """
    path = Path(path)
    pairs = []
    skipped = []
    for element in children(parse_xml(path), "pair", path, "an RQE file"):
        pid = element.get("pid")
        value = (element.get("value") or "").strip().lower()
        if not pid:
            raise InputDataError("<pair> without a pid attribute", path=path)
        if value not in ("true", "false"):
            raise InputDataError(
                f'<pair pid="{pid}"> has value {value!r}, not true/false', path=path
            )
        chq = " ".join(child_text(element, "chq", path, required=False).split())
        faq = " ".join(child_text(element, "faq", path, required=False).split())
        if not chq or not faq:
            skipped.append(pid)
            continue
        pairs.append(RQEPair(pid, chq, faq, entails=value == "true", kind=element.get("type")))
    if skipped:
        warnings.warn(
            f"{path}: skipped {len(skipped)} pair(s) with an empty question: "
            f"pid {', '.join(skipped)}",
            stacklevel=2,
        )
    if not pairs:
        raise InputDataError("no <pair> with a question and an FAQ", path=path)
    return pairs
