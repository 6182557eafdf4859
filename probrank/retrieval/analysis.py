"""Text analysis for the first stage: tokens, stop words and stemming.

Defaults (:class:`Analyzer`), the classic IR pipeline that Terrier also uses by default:

* tokens: maximal runs of Unicode word characters (``\\w+``), lower-cased;
* stop words: :attr:`StopWords.ENGLISH_PLUS`, bm25s's 179-word English list (NLTK's);
* stemming: :attr:`Stemmer.PORTER`, Porter's original algorithm (PyStemmer's Snowball
  ``porter``, the stemmer Terrier applies by default).

Queries and documents go through the same analyzer; the index records it in its manifest and
refuses to be searched with another one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = ["Analyzer", "Stemmer", "StopWords"]


class Stemmer(str, Enum):
    """How tokens are reduced to stems."""

    NONE = "none"
    """No stemming."""
    PORTER = "porter"
    """Porter's (1980) algorithm, PyStemmer's ``porter`` (Terrier's default)."""
    ENGLISH = "english"
    """Snowball English (Porter2), PyStemmer's ``english``."""


class StopWords(str, Enum):
    """Which words are dropped before indexing and search."""

    NONE = "none"
    """Keep every token."""
    ENGLISH = "english"
    """bm25s's short English list (33 words)."""
    ENGLISH_PLUS = "english_plus"
    """bm25s's long English list (179 words, NLTK's)."""


def _stop_list(kind: StopWords) -> frozenset[str]:
    if kind is StopWords.NONE:
        return frozenset()
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN if kind is StopWords.ENGLISH else STOPWORDS_EN_PLUS)


@dataclass(frozen=True)
class Analyzer:
    """Turns a text into index terms.

    Attributes:
        token_pattern: Regular expression of a token (default ``\\w+``).
        lowercase: Lower-case before matching stop words and stemming.
        stopwords: :class:`StopWords` list.
        extra_stopwords: Further words dropped (matched after lower-casing).
        stemmer: :class:`Stemmer`.
    """

    token_pattern: str = r"\w+"
    lowercase: bool = True
    stopwords: StopWords = StopWords.ENGLISH_PLUS
    extra_stopwords: tuple[str, ...] = ()
    stemmer: Stemmer = Stemmer.PORTER
    _cache: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stopwords", parse_enum(StopWords, self.stopwords, "stopwords"))
        object.__setattr__(self, "stemmer", parse_enum(Stemmer, self.stemmer, "stemmer"))
        object.__setattr__(self, "extra_stopwords", tuple(str(w) for w in self.extra_stopwords))
        try:
            re.compile(self.token_pattern)
        except re.error as exc:
            raise InputDataError(
                f"token_pattern {self.token_pattern!r} is invalid: {exc}"
            ) from None
        if not isinstance(self.lowercase, bool):
            raise InputDataError(f"lowercase must be true or false, got {self.lowercase!r}")

    def _parts(self) -> tuple[re.Pattern[str], frozenset[str], Any]:
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            stop = _stop_list(self.stopwords) | frozenset(self.extra_stopwords)
            stem = None
            if self.stemmer is not Stemmer.NONE:
                try:
                    import Stemmer as pystemmer
                except ImportError:
                    raise InputDataError(
                        "stemming needs PyStemmer: pip install PyStemmer (or stemmer='none')"
                    ) from None
                stem = pystemmer.Stemmer(self.stemmer.value)
            compiled = (re.compile(self.token_pattern), stop, stem)
            object.__setattr__(self, "_compiled", compiled)
        return compiled

    def tokens(self, text: str) -> list[str]:
        """The index terms of ``text``, in order (repeats kept).

        Args:
            text: Any string.

        Returns:
            Terms after lower-casing, stop-word removal and stemming.
        """
        pattern, stop, stem = self._parts()
        words = pattern.findall(text.lower() if self.lowercase else text)
        words = [w for w in words if w not in stop]
        if stem is None:
            return words
        cache = self._cache
        new = [w for w in set(words) if w not in cache]
        if new:
            cache.update(zip(new, stem.stemWords(new), strict=True))
        return [cache[w] for w in words]

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON (for the index manifest)."""
        data = asdict(self)
        data.pop("_cache", None)
        data["stopwords"] = self.stopwords.value
        data["stemmer"] = self.stemmer.value
        data["extra_stopwords"] = list(self.extra_stopwords)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Analyzer:
        """Inverse of :meth:`to_json`.

        Raises:
            InputDataError: an unknown key or a bad value.
        """
        known = {"token_pattern", "lowercase", "stopwords", "extra_stopwords", "stemmer"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputDataError(f"unknown analyzer settings {unknown}")
        values = dict(data)
        if "extra_stopwords" in values:
            values["extra_stopwords"] = tuple(values["extra_stopwords"])
        return cls(**values)
