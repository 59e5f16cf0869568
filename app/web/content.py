"""Lessons: ``content/<stem>.md`` with front matter and optional ``## Step N`` notes.

One Markdown file per language per walkthrough: ``content/<stem>.md`` is the English original,
``content/<lang>/<stem>.md`` (e.g. ``content/zh-CN/<stem>.md``) its translation. A lesson is
read in the request's language when that file exists, else in English. Step notes may be
headed ``## Step N`` or ``## 第 N 步``.

The front matter's ``ask`` lists the steps where a live class is asked that step's question
("what happens next?") as soon as the lecturer reaches it, and where "Quiz me" asks: e.g.
``ask: 4, 9``. Both languages' files list the same steps (a test checks); see docs/live-class.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import markdown as md

from app.web import i18n

_STEP_HEADING = re.compile(
    r"^##\s+(?:Step\s+(\d+)|第\s*(\d+)\s*步)\s*$", re.IGNORECASE | re.MULTILINE
)
_STEM = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")


@dataclass(frozen=True, slots=True)
class Lesson:
    stem: str
    title: str
    explainer: str
    preset: str
    summary: str
    intro_html: str
    step_notes: dict[int, str] = field(default_factory=dict)
    ask_steps: tuple[int, ...] = ()  # steps whose question a class is asked on arrival


def _ask_steps(value: str) -> tuple[int, ...]:
    """``"4, 9"`` -> (4, 9): the numbers of the front matter's ``ask`` (anything else ignored;
    the lesson test names a step the explainer has no question for)."""
    return tuple(sorted({int(v) for v in re.findall(r"\d+", value)}))


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---"):
        return {}, text
    _, head, body = text.split("---", 2)
    meta: dict[str, str] = {}
    for line in head.strip().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            meta[key.strip()] = value.strip().strip('"')
    return meta, body


def _html(text: str) -> str:
    html = str(md.markdown(text.strip(), extensions=["fenced_code", "tables"]))
    # Code blocks scroll sideways on narrow screens: keyboard users must be able to reach them.
    return html.replace("<pre>", '<pre tabindex="0">')


def parse_lesson(stem: str, text: str) -> Lesson:
    meta, body = _front_matter(text)
    parts = _STEP_HEADING.split(body)  # text, (en number, zh number, text)*
    intro, notes = parts[0], {}
    for i in range(1, len(parts) - 2, 3):
        notes[int(parts[i] or parts[i + 1])] = _html(parts[i + 2])
    return Lesson(
        stem=stem,
        title=meta.get("title", stem),
        explainer=meta.get("explainer", ""),
        preset=meta.get("preset", ""),
        summary=meta.get("summary", ""),
        intro_html=_html(intro),
        step_notes=notes,
        ask_steps=_ask_steps(meta.get("ask", "")),
    )


@lru_cache(maxsize=128)
def _load(path: Path, mtime: float) -> Lesson:
    return parse_lesson(path.stem, path.read_text(encoding="utf-8"))


class Content:
    """The lessons and notes in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, stem: str, lang: str | None = None) -> Path | None:
        """The file of ``stem`` in ``lang`` (default: the request's), else the English one."""
        # The stem is checked before it touches the file system (no traversal, no long names).
        if not stem or not _STEM.fullmatch(stem):
            return None
        lang = lang or i18n.current()
        if lang != i18n.DEFAULT and lang in i18n.LANGUAGES:
            translated = self.folder / lang / f"{stem}.md"
            if translated.is_file():
                return translated
        path = self.folder / f"{stem}.md"
        return path if path.is_file() else None

    def lesson(self, stem: str, lang: str | None = None) -> Lesson | None:
        path = self.path(stem, lang)
        if path is None:
            return None
        return _load(path, path.stat().st_mtime)

    def lessons_for(self, explainer: str, lang: str | None = None) -> list[Lesson]:
        found = []
        for path in sorted(self.folder.glob("*.md")):
            item = self.lesson(path.stem, lang)
            if item and item.explainer == explainer:
                found.append(item)
        return found
