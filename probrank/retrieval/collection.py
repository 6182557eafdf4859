"""A document collection: docnos and texts in input order, with a content fingerprint.

:class:`Collection` is a read-only ``Mapping[docno, text]``, so it can be passed wherever
probrank takes document texts (:meth:`probrank.data.candidates.CandidateList.from_trec`,
``GPFRanker.rerank``). Build it from TREC ``<DOC>`` files, JSON lines, a DataFrame or pairs::

    collection = Collection.from_trec("doc-text.trec")          # .gz transparently
    collection = Collection.from_jsonl("docs.jsonl", docno_field="id", text_field="body")
    collection = Collection.from_dataframe(frame)               # columns docno, text

The :attr:`Collection.fingerprint` (SHA-256 of every docno and text, in order) ties a saved
index to the exact collection it was built from.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from probrank.exceptions import InputDataError
from probrank.retrieval.readers import (
    documents_from_dataframe,
    iter_jsonl_documents,
    iter_trec_documents,
)

__all__ = ["Collection"]


class Collection(Mapping[str, str]):
    """Documents by docno, in input order.

    Args:
        documents: ``(docno, text)`` pairs or a mapping; not modified.
        name: A name for messages and manifests.

    Raises:
        InputDataError: no documents, a docno that is not a non-empty string without
            whitespace, a docno twice, or a text that is not a string.
    """

    def __init__(
        self, documents: Iterable[tuple[str, str]] | Mapping[str, str], *, name: str = "collection"
    ) -> None:
        pairs = documents.items() if isinstance(documents, Mapping) else documents
        texts: dict[str, str] = {}
        for docno, text in pairs:
            if not isinstance(docno, str) or not docno or any(c.isspace() for c in docno):
                raise InputDataError(f"{name}: docno {docno!r} is empty or holds whitespace")
            if not isinstance(text, str):
                raise InputDataError(f"{name}: the text of {docno!r} is not a string")
            if docno in texts:
                raise InputDataError(f"{name}: docno {docno!r} appears twice")
            texts[docno] = text
        if not texts:
            raise InputDataError(f"{name}: no documents")
        self._texts = texts
        self.name = name
        self._fingerprint: str | None = None

    def __getitem__(self, docno: str) -> str:
        return self._texts[docno]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return f"Collection({self.name!r}, {len(self)} documents)"

    @property
    def docnos(self) -> list[str]:
        """The `n` docnos in input order."""
        return list(self._texts)

    @property
    def texts(self) -> list[str]:
        """The `n` texts in input order."""
        return list(self._texts.values())

    @property
    def fingerprint(self) -> str:
        """SHA-256 hex digest of every (docno, text), in order (computed once)."""
        if self._fingerprint is None:
            digest = hashlib.sha256(b"probrank-collection\0")
            for docno, text in self._texts.items():
                for part in (docno, text):
                    data = part.encode("utf-8")
                    digest.update(len(data).to_bytes(8, "little"))
                    digest.update(data)
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def subset(self, docnos: Iterable[str], *, name: str | None = None) -> Collection:
        """The documents ``docnos`` (in that order).

        Raises:
            InputDataError: a docno the collection lacks.
        """
        picked = []
        for docno in docnos:
            if docno not in self._texts:
                raise InputDataError(f"{self.name}: no document {docno!r}")
            picked.append((docno, self._texts[docno]))
        return Collection(picked, name=name or self.name)

    @classmethod
    def from_trec(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        text_tags: Sequence[str] | None = None,
        progress: bool = True,
        name: str | None = None,
    ) -> Collection:
        """Read TREC ``<DOC>`` files (see :func:`~probrank.retrieval.readers.iter_trec_documents`).

        Args:
            paths: One file or several (read in order; a docno may appear once over all).
            text_tags: Keep only these elements' text (default: all text but the docno).
            progress: Show a tqdm counter of documents read.
            name: The collection's name (default: the first file's name).

        Raises:
            InputDataError: a malformed file, or a docno in two files (naming both).
        """
        files = [Path(paths)] if isinstance(paths, str | os.PathLike) else [Path(p) for p in paths]
        if not files:
            raise InputDataError("no collection files given")
        pairs: list[tuple[str, str]] = []
        where: dict[str, str] = {}
        bar = tqdm(desc="reading documents", unit="doc", disable=not progress, delay=1.0)
        for path in files:
            for docno, text, line in iter_trec_documents(path, text_tags=text_tags):
                if docno in where:
                    raise InputDataError(
                        f"docno {docno!r} also in {where[docno]}", path=path, line=line
                    )
                where[docno] = f"{path}:{line}"
                pairs.append((docno, text))
                bar.update()
        bar.close()
        return cls(pairs, name=name or files[0].name)

    @classmethod
    def from_jsonl(
        cls,
        path: str | os.PathLike[str],
        *,
        docno_field: str = "docno",
        text_field: str = "text",
        name: str | None = None,
    ) -> Collection:
        """Read JSON lines ``{"docno": ..., "text": ...}`` (field names configurable).

        Raises:
            InputDataError: see :func:`~probrank.retrieval.readers.iter_jsonl_documents`.
        """
        pairs = [
            (docno, text)
            for docno, text, _ in iter_jsonl_documents(
                path, docno_field=docno_field, text_field=text_field
            )
        ]
        if not pairs:
            raise InputDataError("no documents", path=path)
        return cls(pairs, name=name or Path(path).name)

    @classmethod
    def from_dataframe(
        cls, frame: Any, *, docno: str = "docno", text: str = "text", name: str = "dataframe"
    ) -> Collection:
        """Documents of a DataFrame with one row per document (PyTerrier's ``docno, text``).

        Raises:
            InputDataError: see :func:`~probrank.retrieval.readers.documents_from_dataframe`.
        """
        pairs = [(d, t) for d, t, _ in documents_from_dataframe(frame, docno=docno, text=text)]
        return cls(pairs, name=name)
