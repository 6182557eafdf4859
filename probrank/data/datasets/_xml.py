"""Safe XML parsing for the dataset loaders: defusedxml refuses entity declarations, DTD
retrieval and external references before expanding anything, so an entity-expansion bomb is
rejected at once without memory growth; every failure becomes an ``InputDataError``."""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeElementTree
from defusedxml import DefusedXmlException

from probrank.exceptions import InputDataError

__all__ = ["child_text", "parse_xml"]


def parse_xml(path: str | os.PathLike[str]) -> Element:
    """Parse an XML file safely and return its root element.

    Raises:
        InputDataError: missing file, malformed XML (with its line), or a forbidden construct
            (entity declarations, external entities, DTD retrieval).
    """
    path = Path(path)
    try:
        return SafeElementTree.parse(path).getroot()
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except DefusedXmlException as exc:
        raise InputDataError(f"refused unsafe XML ({type(exc).__name__})", path=path) from None
    except ParseError as exc:
        line = exc.position[0] if exc.position else None
        raise InputDataError(f"malformed XML: {exc}", path=path, line=line) from None


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
