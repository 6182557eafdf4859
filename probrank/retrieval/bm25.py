"""BM25 first stage over a :class:`~probrank.retrieval.Collection`, with bm25s.

bm25s (Lù 2024) precomputes every (term, document) BM25 weight into a sparse matrix, so a
query is a sum of a few sparse columns. probrank analyses the text itself
(:class:`~probrank.retrieval.analysis.Analyzer`: the same terms at indexing and search time)
and hands bm25s the term lists.

Defaults (:class:`BM25Settings`) are Terrier's: ``k1 = 1.2``, ``b = 0.75`` and Robertson's
idf ``max(0, log((N - df + 0.5) / (df + 0.5)))`` (a term in more than half of the documents
weighs 0) with the term-frequency factor ``tf / (tf + k1 (1 - b + b dl / avgdl))``
(:attr:`BM25Method.ROBERTSON`; Terrier also multiplies by ``k1 + 1``, a constant that leaves
the ranking as it is); repeated query terms count as often as they occur. A topic's ranking
holds only documents that share a term with the query (at most ``k``), as Terrier's does.

An index is saved as a folder (:meth:`BM25Index.save`)::

    manifest.json        format, probrank version, settings, analyzer, the collection's
                         fingerprint and size, and each file's SHA-256 (written last)
    docnos.json          the docnos in index order
    vocab.json           term -> column
    data.npy indices.npy indptr.npy   bm25s's CSC matrix of BM25 weights

Every file is written atomically; :meth:`BM25Index.load` checks the checksums, the format and
that the index was built with the settings and from the collection the caller expects (so a
stale index is rebuilt by :func:`open_or_build`, never silently used).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from probrank._files import check_output_folder, write_bytes_atomically, write_text_atomically
from probrank._options import parse_enum
from probrank.data.trec import Run
from probrank.exceptions import InputDataError
from probrank.retrieval.analysis import Analyzer
from probrank.retrieval.collection import Collection

__all__ = ["INDEX_FORMAT", "BM25Index", "BM25Method", "BM25Settings", "open_or_build"]

INDEX_FORMAT = 1
"""Version of the saved index layout; another version is refused (and rebuilt)."""

_MANIFEST = "manifest.json"
_ARRAYS = ("data", "indices", "indptr")


class BM25Method(str, Enum):
    """BM25 variant (bm25s's ``method``, also used for the idf)."""

    ROBERTSON = "robertson"
    """Robertson et al.: idf ``max(0, log((N - df + 0.5) / (df + 0.5)))`` (Terrier's BM25)."""
    LUCENE = "lucene"
    """Lucene's: idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` (never negative)."""
    ATIRE = "atire"
    """ATIRE's: idf ``log(N / df)``."""


@dataclass(frozen=True)
class BM25Settings:
    """Settings of a BM25 index.

    Attributes:
        k1: Term-frequency saturation (``> 0``).
        b: Length normalisation in ``[0, 1]``.
        method: :class:`BM25Method`.
        analyzer: :class:`~probrank.retrieval.analysis.Analyzer` of documents and queries.
    """

    k1: float = 1.2
    b: float = 0.75
    method: BM25Method = BM25Method.ROBERTSON
    analyzer: Analyzer = field(default_factory=Analyzer)

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", parse_enum(BM25Method, self.method, "method"))
        if isinstance(self.analyzer, Mapping):
            object.__setattr__(self, "analyzer", Analyzer.from_json(dict(self.analyzer)))
        if not isinstance(self.analyzer, Analyzer):
            raise InputDataError(f"analyzer must be an Analyzer, got {self.analyzer!r}")
        if not float(self.k1) > 0:
            raise InputDataError(f"k1 must be > 0, got {self.k1!r}")
        if not 0.0 <= float(self.b) <= 1.0:
            raise InputDataError(f"b must lie in [0, 1], got {self.b!r}")

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON."""
        return {
            "k1": float(self.k1),
            "b": float(self.b),
            "method": self.method.value,
            "analyzer": self.analyzer.to_json(),
        }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class BM25Index:
    """A BM25 index of one collection (build with :meth:`build`, or :meth:`load` one saved).

    Example::

        index = BM25Index.build(Collection.from_trec("doc-text.trec"))
        run = index.search(read_topics("query-text.trec"), k=1000)   # a probrank.data.Run
        index.save("vaswani-index")
    """

    def __init__(self, model: Any, docnos: list[str], settings: BM25Settings, fingerprint: str):
        self._model = model
        self.docnos = docnos
        self.settings = settings
        self.fingerprint = fingerprint

    @property
    def num_documents(self) -> int:
        """Documents in the index."""
        return len(self.docnos)

    @classmethod
    def build(
        cls, collection: Collection, settings: BM25Settings | None = None, *, progress: bool = True
    ) -> BM25Index:
        """Analyse and index every document of ``collection``.

        Args:
            collection: The documents.
            settings: :class:`BM25Settings` (default: Terrier's, see the module docstring).
            progress: Show progress bars.

        Returns:
            The index (in memory; :meth:`save` writes it).
        """
        import bm25s

        settings = settings or BM25Settings()
        if not isinstance(collection, Collection):
            raise InputDataError(f"collection must be a Collection, got {type(collection)!r}")
        analyzer = settings.analyzer
        texts = tqdm(collection.texts, desc="analysing documents", unit="doc", disable=not progress)
        corpus = [analyzer.tokens(text) for text in texts]
        model = bm25s.BM25(
            k1=float(settings.k1),
            b=float(settings.b),
            method=settings.method.value,
            dtype="float64",
        )
        model.index(corpus, show_progress=progress)
        return cls(model, collection.docnos, settings, collection.fingerprint)

    def _matrix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        scores = self._model.scores
        return scores["data"], scores["indices"], scores["indptr"]

    def term_ids(self, query: str) -> list[int]:
        """Column ids of the query's index terms (repeats kept; unknown terms dropped)."""
        vocab = self._model.vocab_dict
        return [vocab[t] for t in self.settings.analyzer.tokens(query) if t in vocab]

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """BM25 scores of the documents that share a term with ``query``.

        Returns:
            ``(rows, scores)``: `m` document rows (into ``docnos``) and their `m` float64
            scores, for the `m` matching documents.
        """
        ids = self.term_ids(query)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        _, indices, indptr = self._matrix()
        rows = np.unique(np.concatenate([indices[indptr[t] : indptr[t + 1]] for t in ids]))
        scores = np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float64)
        return rows.astype(np.int64), scores[rows]

    def search(
        self,
        topics: Mapping[str, str],
        *,
        k: int = 1000,
        name: str = "bm25",
        progress: bool = False,
    ) -> Run:
        """Rank each topic's matching documents by BM25.

        Args:
            topics: ``{qid: query}``.
            k: Documents per topic at most.
            name: The run's name and tag.
            progress: Show a progress bar over topics.

        Returns:
            A :class:`~probrank.data.trec.Run`; a topic without a matching document has an
            empty ranking.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputDataError(f"k must be a positive integer, got {k!r}")
        out: dict[str, dict[str, float]] = {}
        items = tqdm(topics.items(), desc="BM25", unit="topic", disable=not progress)
        for qid, query in items:
            rows, scores = self.score(query)
            top = np.argsort(-scores, kind="stable")[:k]
            out[qid] = {self.docnos[int(rows[i])]: float(scores[i]) for i in top}
        return Run(out, name=name, tag=name)

    # -- persistence -------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the index folder (created if needed; see the module docstring).

        Raises:
            InputDataError: an empty ``path`` (never the working folder by accident), or
                ``path`` is a file.
        """
        folder = check_output_folder(path, what="BM25 index folder")
        folder.mkdir(parents=True, exist_ok=True)
        data, indices, indptr = self._matrix()
        payloads = {
            "docnos.json": json.dumps(self.docnos).encode("utf-8"),
            "vocab.json": json.dumps(self._model.vocab_dict, sort_keys=True).encode("utf-8"),
            "data.npy": _npy(np.asarray(data)),
            "indices.npy": _npy(np.asarray(indices)),
            "indptr.npy": _npy(np.asarray(indptr)),
        }
        for name, payload in payloads.items():
            write_bytes_atomically(folder / name, payload)
        from probrank import __version__

        manifest = {
            "format": "probrank-bm25-index",
            "format_version": INDEX_FORMAT,
            "probrank_version": __version__,
            "settings": self.settings.to_json(),
            "collection": {"fingerprint": self.fingerprint, "documents": self.num_documents},
            "files": {name: _sha256(payload) for name, payload in payloads.items()},
        }
        write_text_atomically(
            folder / _MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        return folder

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        settings: BM25Settings | None = None,
        collection: Collection | None = None,
    ) -> BM25Index:
        """Read an index written by :meth:`save`.

        Args:
            path: The folder.
            settings: When given, the index must have been built with these settings.
            collection: When given, the index must have been built from this collection.

        Raises:
            InputDataError: no such folder, a missing or damaged manifest, another format
                version, a missing file or one whose SHA-256 differs (damaged or truncated),
                or other settings or another collection than those given.
        """
        import bm25s

        folder = Path(path)
        file = folder / _MANIFEST
        if not file.is_file():
            raise InputDataError(f"not a probrank BM25 index: no {_MANIFEST}", path=folder)
        try:
            manifest = json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputDataError(f"damaged index manifest ({exc})", path=file) from None
        if not isinstance(manifest, dict) or manifest.get("format") != "probrank-bm25-index":
            raise InputDataError("not a probrank BM25 index manifest", path=file)
        if manifest.get("format_version") != INDEX_FORMAT:
            raise InputDataError(
                f"index format version {manifest.get('format_version')!r}, this probrank reads "
                f"{INDEX_FORMAT}: rebuild the index",
                path=file,
            )
        try:
            saved = BM25Settings(
                k1=manifest["settings"]["k1"],
                b=manifest["settings"]["b"],
                method=manifest["settings"]["method"],
                analyzer=Analyzer.from_json(manifest["settings"]["analyzer"]),
            )
            fingerprint = str(manifest["collection"]["fingerprint"])
            checksums = dict(manifest["files"])
        except (KeyError, TypeError) as exc:
            raise InputDataError(f"damaged index manifest (missing {exc})", path=file) from None
        if settings is not None and settings.to_json() != saved.to_json():
            raise InputDataError(
                f"the index was built with {saved.to_json()}, not {settings.to_json()}", path=folder
            )
        if collection is not None and collection.fingerprint != fingerprint:
            raise InputDataError(
                "the index was built from another collection (its fingerprint differs)", path=folder
            )
        payloads: dict[str, bytes] = {}
        for name in ("docnos.json", "vocab.json", *(f"{a}.npy" for a in _ARRAYS)):
            target = folder / name
            if not target.is_file() or name not in checksums:
                raise InputDataError(f"index file {name} is missing", path=folder)
            payload = target.read_bytes()
            if _sha256(payload) != checksums[name]:
                raise InputDataError(
                    "index file damaged or truncated (its SHA-256 does not match the manifest)",
                    path=target,
                )
            payloads[name] = payload
        arrays = {a: np.load(io.BytesIO(payloads[f"{a}.npy"]), allow_pickle=False) for a in _ARRAYS}
        docnos = json.loads(payloads["docnos.json"])
        model = bm25s.BM25(
            k1=float(saved.k1), b=float(saved.b), method=saved.method.value, dtype="float64"
        )
        model.vocab_dict = json.loads(payloads["vocab.json"])
        model.unique_token_ids_set = set(model.vocab_dict.values())
        model.nonoccurrence_array = None
        model.scores = {**arrays, "num_docs": len(docnos)}
        columns = len(arrays["indptr"]) - 1
        if any(not isinstance(i, int) or not 0 <= i <= columns for i in model.vocab_dict.values()):
            raise InputDataError("index arrays and vocabulary do not match", path=folder)
        return cls(model, docnos, saved, fingerprint)


def open_or_build(
    path: str | os.PathLike[str] | None,
    collection: Collection,
    settings: BM25Settings | None = None,
    *,
    progress: bool = True,
) -> tuple[BM25Index, bool]:
    """The saved index at ``path`` when it matches ``collection`` and ``settings``, else a new
    one (saved there).

    Args:
        path: The index folder; None: build in memory, save nothing.
        collection: The documents.
        settings: :class:`BM25Settings` (default: Terrier's).
        progress: Show progress bars while building.

    Returns:
        ``(index, built)``: ``built`` is False when the saved index was reused.
    """
    settings = settings or BM25Settings()
    if path is not None and (Path(path) / _MANIFEST).is_file():
        try:
            return BM25Index.load(path, settings=settings, collection=collection), False
        except InputDataError:
            pass  # stale or damaged: rebuilt below
    index = BM25Index.build(collection, settings, progress=progress)
    if path is not None:
        index.save(path)
    return index, True
