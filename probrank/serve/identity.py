"""Who is asking: annotator names, their tokens, and the admin token.

Every annotator has a link of their own (``probrank annotators add NAME --db FILE``): a random
256-bit token bound to the name. The database keeps only its SHA-256 (a random token of that
size needs no slow hash), so a copy of the database opens nothing. ``probrank serve`` makes a
new admin token at every start (the previous admin link ends): that link alone opens ``/admin``
and the exports. An annotator's token judges only as that annotator.

Names are NFC-normalised and checked (:func:`check_name`): 1 to 40 letters, digits, combining
marks or ``_ . @ -``, starting with a letter or digit; no compatibility characters (full-width
``ａｌｉｃｅ``: NFKC changes it), one script (no Cyrillic ``а`` inside a Latin name); and a name
whose skeleton (:func:`skeleton`: NFKC, case-folded, look-alike letters and digits mapped to one
representative, after Unicode's confusables) equals an existing name's is refused as a
look-alike (``Alice``, ``аlice``, ``a1ice`` next to ``alice``).
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from probrank.exceptions import InputDataError

__all__ = [
    "Identity",
    "Role",
    "check_name",
    "hash_token",
    "new_token",
    "skeleton",
]

MAX_NAME = 40
"""Longest annotator name (characters, after NFC)."""

_PUNCTUATION = frozenset("_.@-")
# Look-alikes of Latin letters (lower case, after case folding) from Unicode's confusables
# table (UTS #39): Cyrillic and Greek letters, digits, and Latin letter pairs.
_CONFUSABLES = {
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "ɡ": "g", "һ": "h", "н": "h",
    "і": "i", "ї": "i", "ı": "i", "ј": "j", "к": "k", "ӏ": "l", "м": "m", "п": "n", "о": "o",
    "р": "p", "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", "ц": "u", "ѵ": "v", "ԝ": "w", "х": "x",
    "у": "y", "ү": "y", "з": "3", "α": "a", "β": "b", "ϲ": "c", "δ": "d", "ε": "e", "η": "n",
    "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y",
    "ω": "w", "0": "o", "1": "l", "|": "l", "5": "s",
}  # fmt: skip
_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))
# Scripts written together in one name (Japanese mixes Han and kana; Korean Han and Hangul).
_SCRIPT_GROUPS = {"CJK": "Han", "HIRAGANA": "Han", "KATAKANA": "Han", "HANGUL": "Han"}


class Role(str, Enum):
    """What a token opens."""

    ADMIN = "admin"
    """``/admin``, the exports, every ranking; judges nothing."""
    ANNOTATOR = "annotator"
    """Judging as one annotator, and that annotator's own pages."""


@dataclass(frozen=True)
class Identity:
    """The holder of a valid token.

    Attributes:
        role: What the token opens.
        annotator: The annotator's name (None for the admin).
    """

    role: Role
    annotator: str | None = None


def new_token() -> str:
    """A random 256-bit URL-safe token."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _script(char: str) -> str | None:
    """The script of a letter (first word of its Unicode name), None for other characters."""
    if not unicodedata.category(char).startswith("L"):
        return None
    word = unicodedata.name(char, "UNKNOWN").split(" ")[0]
    return _SCRIPT_GROUPS.get(word, word)


def skeleton(name: str) -> str:
    """The form two look-alike names share: NFKC, case-folded, confusables mapped, marks kept."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = "".join(_CONFUSABLES.get(char, char) for char in text)
    for pair, single in _PAIRS:
        text = text.replace(pair, single)
    return unicodedata.normalize("NFC", text)


def check_name(name: str, existing: Iterable[str] = ()) -> str:
    """``name`` NFC-normalised, if it is a valid new annotator name next to ``existing``.

    Args:
        name: The name asked for.
        existing: Names already registered (a name equal to one of them is accepted: it is
            that annotator).

    Returns:
        The NFC form of ``name``.

    Raises:
        InputDataError: an empty or long name, a character that is not allowed, compatibility
            characters, mixed scripts, or a look-alike of an existing name (naming it).
    """
    if not isinstance(name, str):
        raise InputDataError(f"an annotator name must be text, got {name!r}")
    nfc = unicodedata.normalize("NFC", name)
    shown = nfc[:60]
    if not 1 <= len(nfc) <= MAX_NAME:
        raise InputDataError(f"annotator name {shown!r} must be 1 to {MAX_NAME} characters")
    nfkc = unicodedata.normalize("NFKC", nfc)
    if nfkc != nfc:
        raise InputDataError(
            f"annotator name {shown!r} holds compatibility characters (full-width letters, "
            f"ligatures, ...); write it as {nfkc!r}"
        )
    for position, char in enumerate(nfc):
        mark = unicodedata.category(char).startswith("M") and position > 0
        if not (char.isalnum() or char in _PUNCTUATION or mark):
            raise InputDataError(
                f"annotator name {shown!r}: {char!r} (U+{ord(char):04X}) is not allowed; use "
                "letters, digits or _ . @ -"
            )
    if not nfc[0].isalnum():
        raise InputDataError(f"annotator name {shown!r} must start with a letter or a digit")
    scripts = sorted({s for s in map(_script, nfc) if s is not None})
    if len(scripts) > 1:
        raise InputDataError(
            f"annotator name {shown!r} mixes scripts ({', '.join(scripts).lower()}): a "
            "look-alike of another name? write it in one script"
        )
    mine = skeleton(nfc)
    for other in existing:
        if other != nfc and skeleton(other) == mine:
            raise InputDataError(
                f"annotator name {shown!r} looks like the existing annotator {other!r}; "
                "choose a name that cannot be mistaken for it"
            )
    return nfc
