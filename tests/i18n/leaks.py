"""Find English catalog text on a Chinese page.

A page "leaks" when the visible text of a zh-CN page contains the English of a catalog entry
whose Chinese translation is different: the word went past the catalog (a hard-coded copy, a
label rendered once at import, a template without ``_()``). Visible text is what a reader sees
or hears: text nodes (frame ``<template>``s included, they are shown when stepped), SVG text and
the ``title``, ``aria-label``, ``alt`` and ``placeholder`` attributes; ``<script>``, ``<style>``,
``<code>``/``<kbd>``/``<samp>`` and ``translate="no"`` (identifiers), ``lang="en"`` (English on
purpose) and ``<textarea>`` (the scenario's JSON) are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "app" / "locale" / "zh_CN" / "LC_MESSAGES" / "messages.po"

SKIP = {"script", "style", "code", "kbd", "samp", "textarea"}
VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip
SHOWN_ATTRS = ("title", "aria-label", "alt", "placeholder")
# Inline elements continue their line (a narration with glossary <abbr>s is one sentence);
# every other element starts a new one.
INLINE = {
    "a", "abbr", "b", "cite", "dfn", "em", "i", "mark", "q", "s", "small", "span", "strong",
    "sub", "sup", "time", "u", "tspan", "label", "code", "kbd", "samp",
}  # fmt: skip
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\(\w+\)[sd]|<[^>]+>")
LETTERS = re.compile(r"[A-Za-z]")
CJK = re.compile(r"[\u4e00-\u9fff]")

# Catalog ids that are the kernel's or vLLM's own words: shown as they are in Chinese too
# (the catalog may still gloss them elsewhere).
IDENTIFIERS = frozenset(
    {
        "Linux",
        "Linux 6.4",
        "vLLM",
        "GitHub",
        "JSON",
        "SVG",
        "PNG",
        "HTML",
        "sk_buff",
    }
)


# Terms the Chinese text keeps in English on purpose (kernel and vLLM words): not a leak inside
# a Chinese sentence, still one standing alone.
KEPT = frozenset({"IRQ", "softirq", "watermark", "seed", "namespace {ns}"})


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.shown: list[str] = []  # attribute values, each a line of its own
        self.stack: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in INLINE:
            self.parts.append("\n")
        if not self.skipping:
            for name, value in attrs:
                if name in SHOWN_ATTRS and value:
                    self.shown.append(value)
        if tag in VOID:
            return
        self.stack.append(tag)
        # an element marked lang="en" is English on purpose (the glossary's English terms)
        # and translate="no" marks identifiers (a frame's field names)
        marked = dict(attrs)
        if (
            tag in SKIP
            or (marked.get("lang") or "").startswith("en")
            or marked.get("translate") == "no"
        ):
            self.skipping += 1
            self.stack[-1] = "!" + tag

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.skipping:
            for name, value in attrs:
                if name in SHOWN_ATTRS and value:
                    self.shown.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag not in INLINE:
            self.parts.append("\n")
        if tag in VOID or (tag not in self.stack and "!" + tag not in self.stack):
            return
        while self.stack:
            top = self.stack.pop()
            if top.startswith("!"):
                self.skipping -= 1
            if top.lstrip("!") == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data.replace("\n", " "))


def visible_text(html: str) -> str:
    """The page's visible words: one line per block of text (inline elements joined) and per
    shown attribute."""
    parser = _Visible()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts).split("\n") + parser.shown
    lines = (" ".join(line.split()) for line in text)
    return "\n".join(line for line in lines if line)


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    anchor: str  # the longest literal part: a fast first check
    pattern: re.Pattern[str]


# A word is English prose only where it is not part of an identifier or a path: not next to a
# letter, digit, "_", "/", "." + letter or "-" + letter (``net/core/dev.c``, ``request_sock``),
# nor followed by "=" (``batching=continuous``).
BEFORE = r"(?<![\w/])(?<!\w\.)(?<!\w-)"
AFTER = r"(?![\w/=])(?!\.\w)(?!-\w)"


def _literal(part: str) -> str:
    words = part.split()
    if not words:
        return ""
    body = r"\s+".join(re.escape(w) for w in words)
    head = BEFORE if re.match(r"\w", words[0]) else ""
    tail = AFTER if re.search(r"\w$", words[-1]) else ""
    return head + body + tail


def _pattern(msgid: str) -> tuple[str, re.Pattern[str]] | None:
    literals = PLACEHOLDER.split(msgid)
    words = [" ".join(s.split()) for s in literals if s.strip()]
    if not words or sum(len(LETTERS.findall(s)) for s in words) < 3:
        return None
    body = r".{1,80}?".join(_literal(s) for s in literals)
    anchor = max(words, key=len)
    return anchor, re.compile(body)


@cache
def entries() -> tuple[Entry, ...]:
    """Every catalog entry whose Chinese differs from its English, as a pattern over text."""
    with PO.open("rb") as fp:
        catalog = read_po(fp, locale="zh_CN")
    out = []
    for m in catalog:
        if not m.id or not isinstance(m.id, str) or not m.string or m.string == m.id:
            continue
        if m.id in IDENTIFIERS:
            continue
        made = _pattern(m.id)
        if made:
            out.append(Entry(m.id, made[0], made[1]))
    return tuple(out)


def _excused(msgid: str, anchor: str, line: str, hit: re.Match[str]) -> bool:
    """English a Chinese page shows on purpose: a gloss in full-width brackets (负载（payload）,
    发送队列（write queue）, watermark（水位线）), a kept kernel/vLLM term inside Chinese text, or
    quoted program output ("60708944 bytes 322 pkt")."""
    at = line.find(anchor, hit.start())
    at = at if at >= 0 else hit.start()
    before, after = line[:at], line[at + len(anchor) :]
    opened = before.rfind("（")
    if opened > before.rfind("）") and "）" in after:
        inside = before[opened + 1 :] + after[: after.index("）")]
        if not CJK.search(inside) and ("（" not in after or after.index("）") < after.index("（")):
            return True
    if before.count('"') % 2 == 1 and '"' in after:
        return True
    if not CJK.search(line):
        return False
    if after.startswith("（") and CJK.search(after[:3]):
        return True
    return msgid in KEPT


def english_in(html: str) -> list[tuple[str, str]]:
    """(catalog id, the text that matched it) for every English catalog entry on the page."""
    text = visible_text(html)
    found = []
    for e in entries():
        if e.anchor not in text:
            continue
        for line in text.splitlines():
            if e.anchor in line:
                hit = next(
                    (h for h in e.pattern.finditer(line) if not _excused(e.id, e.anchor, line, h)),
                    None,
                )
                if hit:
                    found.append((e.id, line.strip()[:120]))
                    break
    return found
