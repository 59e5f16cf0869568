"""Lessons: ``content/<stem>.md`` with front matter and optional ``## Step N`` notes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import markdown as md

_STEP_HEADING = re.compile(r"^##\s+Step\s+(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
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
    return str(md.markdown(text.strip(), extensions=["fenced_code", "tables"]))


def parse_lesson(stem: str, text: str) -> Lesson:
    meta, body = _front_matter(text)
    parts = _STEP_HEADING.split(body)
    intro, notes = parts[0], {}
    for i in range(1, len(parts) - 1, 2):
        notes[int(parts[i])] = _html(parts[i + 1])
    return Lesson(
        stem=stem,
        title=meta.get("title", stem),
        explainer=meta.get("explainer", ""),
        preset=meta.get("preset", ""),
        summary=meta.get("summary", ""),
        intro_html=_html(intro),
        step_notes=notes,
    )


@lru_cache(maxsize=128)
def _load(path: Path, mtime: float) -> Lesson:
    return parse_lesson(path.stem, path.read_text(encoding="utf-8"))


class Content:
    """The lessons and notes in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def lesson(self, stem: str) -> Lesson | None:
        # The stem is checked before it touches the file system (no traversal, no long names).
        if not stem or not _STEM.fullmatch(stem):
            return None
        path = self.folder / f"{stem}.md"
        if not path.is_file():
            return None
        return _load(path, path.stat().st_mtime)

    def lessons_for(self, explainer: str) -> list[Lesson]:
        found = []
        for path in sorted(self.folder.glob("*.md")):
            item = self.lesson(path.stem)
            if item and item.explainer == explainer:
                found.append(item)
        return found
