"""Safe XML parsing for the dataset loaders: defusedxml refuses entity declarations, DTD
retrieval and external references before expanding anything, so an entity-expansion bomb is
rejected at once without memory growth; every failure becomes an ``InputDataError`` naming the
file (and the line where the parser gives one): a folder, an empty file, bytes that are not
UTF-8 in a file that declares no other encoding, malformed XML, or a root without the elements
a loader reads (:func:`children`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeElementTree
from defusedxml import DefusedXmlException

from probrank.exceptions import InputDataError

__all__ = ["child_text", "children", "parse_xml"]

_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_UTF8_NAMES = {"utf-8", "utf8"}


def _read(path: Path) -> bytes:
    if path.is_dir():
        raise InputDataError("is a directory, not an XML file", path=path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except OSError as exc:
        raise InputDataError(f"cannot read: {exc.strerror}", path=path) from None


def _check_utf8(data: bytes, path: Path) -> None:
    """Bytes that are not UTF-8 in a file declaring UTF-8 (or nothing: XML's default)."""
    declared = _DECLARED.match(data)
    if declared is not None and declared.group(1).decode().lower() not in _UTF8_NAMES:
        return  # the parser decodes the declared encoding
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1]
        raise InputDataError(
            f"undecodable byte {bad!r} (the file must be UTF-8)",
            path=path,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None


def parse_xml(path: str | os.PathLike[str]) -> Element:
    """Parse an XML file safely and return its root element.

    Raises:
        InputDataError: a missing file, a folder, an empty file, bytes that are not UTF-8
            (with their line), malformed XML (with its line), or a forbidden construct (entity
            declarations, external entities, DTD retrieval).
    """
    path = Path(path)
    data = _read(path)
    if not data.strip():
        raise InputDataError("empty file", path=path)
    _check_utf8(data, path)
    try:
        return SafeElementTree.fromstring(data)
    except DefusedXmlException as exc:
        raise InputDataError(f"refused unsafe XML ({type(exc).__name__})", path=path) from None
    except ParseError as exc:
        line = exc.position[0] if exc.position else None
        raise InputDataError(f"malformed XML: {exc}", path=path, line=line) from None


def children(root: Element, tag: str, path: Path, what: str) -> list[Element]:
    """The ``<tag>`` children of ``root`` (the items a loader reads).

    Raises:
        InputDataError: there is none (a file of another kind, or a wrong root element); the
            message names the root and says what file was expected.
    """
    items = root.findall(tag)
    if not items:
        raise InputDataError(
            f"no <{tag}> elements under the root element <{root.tag}> (not {what}?)", path=path
        )
    return items


def child_text(element: Element, tag: str, path: Path, *, required: bool = True) -> str:
    """Stripped text of ``element``'s child ``tag`` ("" for an empty child).

    Raises:
        InputDataError: the child is missing, or empty when ``required``; names the element.
    """
    child = element.find(tag)
    text = "".join(child.itertext()).strip() if child is not None else ""
    if child is None or (required and not text):
        ident = " ".join(f'{k}="{v}"' for k, v in element.attrib.items())
        state = "no" if child is None else "an empty"
        raise InputDataError(f"<{element.tag} {ident}> has {state} <{tag}>", path=path)
    return text
