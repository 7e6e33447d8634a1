"""An HTML page -> its visible text and title, in one linear pass (lxml's parser target).

Nothing in a page is executed or fetched: links, images and scripts are never followed, and
elements that are never visible (script, style, hidden) are dropped. Rejected: building a tree
and walking it (a page nested 100,000 levels deep recursed past Python's limit).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from typing import Any

from core.ingest.plain_text import BOMS, checked_text, decode_text
from core.ingest.results import ReadError

#: Elements whose content is never visible text.
_INVISIBLE_TAGS = (
    "script", "style", "noscript", "template", "head", "svg", "math", "iframe",
    "object", "embed", "canvas", "audio", "video", "select", "button",
)  # fmt: skip
#: Elements that start a new paragraph of text.
_BLOCK_TAGS = (
    "p", "div", "section", "article", "main", "aside", "header", "footer", "nav",
    "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd",
    "table", "tr", "blockquote", "pre", "figure", "figcaption", "hr", "form",
    "fieldset", "address", "details", "summary", "caption",
)  # fmt: skip
#: Paragraph and line markers used while flattening HTML (private-use characters; one already
#: in the page only adds a break).
_BLOCK_MARK = "\ue000"
_LINE_MARK = "\ue001"
#: Horizontal whitespace collapsed to one space in HTML text.
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
#: Bytes of an HTML page searched for a ``<meta charset>`` (the HTML standard says 1,024).
_CHARSET_SNIFF_BYTES = 4096
#: ``<meta charset="x">`` or ``<meta http-equiv=... content="text/html; charset=x">``.
_META_CHARSET = re.compile(
    rb"<meta[^>]{0,200}?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]{1,40})", re.IGNORECASE
)


class _HtmlText:
    """An lxml parser target that keeps visible text: one pass, one small entry per open element.

    libxml2 balances every start with an end, so a stack of each open element's effect
    (hides its content? preformatted?) is enough: no tree is built, nothing recurses, and the
    work is linear in the size of the page whatever its depth.
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.title: list[str] = []
        self._stack: list[tuple[bool, bool]] = []
        self._hidden = 0
        self._pre = 0
        self._in_title = False

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        name = tag.casefold() if isinstance(tag, str) else ""
        style = str(attrib.get("style", "")).replace(" ", "").casefold()
        hides = (
            name in _INVISIBLE_TAGS
            or "hidden" in attrib
            or "display:none" in style
            or "visibility:hidden" in style
        )
        pre = name == "pre"
        self._stack.append((hides, pre))
        self._hidden += hides
        self._pre += pre
        if name == "title" and not self.title:
            self._in_title = True
        if name in _BLOCK_TAGS:
            self.pieces.append(_BLOCK_MARK)
        elif name == "br":
            self.pieces.append(_LINE_MARK)

    def end(self, tag: str) -> None:
        name = tag.casefold() if isinstance(tag, str) else ""
        if self._stack:
            hides, pre = self._stack.pop()
            self._hidden -= hides
            self._pre -= pre
        if name == "title":
            self._in_title = False
        if name in _BLOCK_TAGS:
            self.pieces.append(_BLOCK_MARK)

    def data(self, value: str) -> None:
        if self._in_title:
            self.title.append(value)
        if self._hidden:
            return
        if self._pre:
            self.pieces.append(value.replace("\n", _LINE_MARK))
        else:
            self.pieces.append(_SPACES.sub(" ", value.replace("\n", " ")))

    def close(self) -> None:
        return None


def _declared_charset(data: bytes) -> str | None:
    """The codec a ``<meta charset>`` near the start names, if Python knows it."""
    found = _META_CHARSET.search(data[:_CHARSET_SNIFF_BYTES])
    if found is None:
        return None
    try:
        return codecs.lookup(found.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None


def html_text(data: bytes) -> tuple[str, str, dict[str, Any], list[str]]:
    from lxml import etree

    declared = None if any(data.startswith(bom) for bom, _ in BOMS) else _declared_charset(data)
    if declared is not None:
        markup, notes = checked_text(data.decode(declared, errors="replace"), [])
    else:
        markup, notes = decode_text(data)
    target = _HtmlText()
    parser = etree.HTMLParser(target=target, recover=True, no_network=True)
    try:
        parser.feed(markup)
        parser.close()
    except etree.Error as exc:  # recover=True makes this rare: a page libxml2 gives up on
        raise ReadError(f"damaged HTML: {exc}") from exc
    title = " ".join("".join(target.title).split())
    paragraphs = []
    for block in "".join(target.pieces).split(_BLOCK_MARK):
        lines = [_SPACES.sub(" ", line).strip() for line in block.split(_LINE_MARK)]
        joined = "\n".join(line for line in lines if line)
        if joined:
            paragraphs.append(joined)
    return "\n\n".join(paragraphs), title, {}, notes
