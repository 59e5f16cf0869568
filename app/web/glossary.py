"""Glossary terms defined where they appear: the first mention of a term in a step's narration
is marked up with its definition (shown on hover, and on focus or tap), from the same glossary
page readers and translators use (``content/glossary.md``, ``content/zh-CN/glossary.md``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup, escape

_ROW = re.compile(r"^\|(.+)\|\s*$")
_PAREN = re.compile(r"[（(][^）)]*[）)]")
_CODE = re.compile(r"`([^`]*)`")


@dataclass(frozen=True, slots=True)
class Glossary:
    definitions: dict[str, str]  # term as it appears in text → definition
    pattern: re.Pattern[str] | None

    def annotate(self, text: str) -> Markup:
        """``text`` escaped, with the first mention of each term wrapped in a definition."""
        if self.pattern is None:
            return Markup(escape(text))
        out: list[str] = []
        seen: set[str] = set()
        last = 0
        for m in self.pattern.finditer(text):
            term = m.group(0)
            key = term.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(str(escape(text[last : m.start()])))
            definition = escape(self.definitions[key])
            out.append(
                f'<abbr class="term" tabindex="0" title="{definition}" data-term="{escape(term)}">'
                f"{escape(term)}</abbr>"
            )
            last = m.end()
        out.append(str(escape(text[last:])))
        return Markup("".join(out))


def _variants(cell: str) -> list[str]:
    found = []
    for part in re.split(r"\s*/\s*", cell):
        for piece in (_PAREN.sub("", part).strip(), *re.findall(r"[（(]([^）)]*)[）)]", part)):
            piece = piece.strip()
            if len(piece) >= 2 and not piece.startswith("第"):
                found.append(piece)
    return found


@lru_cache(maxsize=8)
def _load(path: Path, mtime: float, chinese: bool) -> Glossary:
    definitions: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if len(cells) != 4 or set(cells[0]) <= {"-", " "} or cells[0] in ("Term", "术语"):
            continue
        term, english, chinese_term, definition = cells
        definition = _CODE.sub(r"\1", definition)
        names = _variants(term) + (_variants(chinese_term) if chinese else _variants(english))
        for name in names:
            definitions.setdefault(name.lower(), definition)
    if not definitions:
        return Glossary(definitions={}, pattern=None)
    words = sorted(definitions, key=len, reverse=True)
    alternatives = "|".join(
        re.escape(w) if not w.isascii() else rf"(?<![\w>/-]){re.escape(w)}(?![\w-])" for w in words
    )
    return Glossary(definitions=definitions, pattern=re.compile(alternatives, re.IGNORECASE))


def glossary_for(folder: Path, lang: str) -> Glossary:
    chinese = lang != "en"
    path = folder / lang / "glossary.md" if chinese else folder / "glossary.md"
    if not path.is_file():
        path = folder / "glossary.md"
        chinese = False
    return _load(path, path.stat().st_mtime, chinese)
