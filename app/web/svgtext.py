"""Text in the pictures the server draws as SVG: escaping, an estimated width and a word in the
reader's language. Each explainer keeps its own font metrics and word tables; these are the
steps they all take with them."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from html import escape

from app.sim.core import Message


def attr(value: object) -> str:
    """``value`` escaped for an XML attribute (quotes too)."""
    return escape(str(value), quote=True)


def esc(value: object) -> str:
    """``value`` escaped for XML character data."""
    return escape(str(value), quote=False)


@lru_cache(maxsize=16384)
def advance(text: str, narrow: float, wide: float) -> float:
    """The estimated advance of ``text``: ``wide`` for each East-Asian wide or full-width
    character (CJK, full-width punctuation), ``narrow`` for every other one. Remembered per
    (text, metrics): a picture measures the same few labels thousands of times."""
    return sum(wide if unicodedata.east_asian_width(c) in "WF" else narrow for c in text)


def in_words(words: Mapping[str, Message], key: str, fallback: str | None = None) -> str:
    """``key``'s word from ``words``, rendered in the current request's language; ``fallback``
    (``key`` itself by default) for a key that is a name, not a word."""
    word = words.get(key)
    if word:
        return str(word)
    return key if fallback is None else fallback
