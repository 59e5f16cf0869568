"""Lessons: ``content/<stem>.md`` with front matter and optional ``## Step N`` notes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import markdown as md

from app.settings import ROOT

CONTENT_DIR = ROOT / "content"
# A lesson's file stem; bounded so a long /notes/<stem> never reaches the filesystem (a name
# over 255 bytes raises "File name too long" instead of answering "no such file").
STEM_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
_STEP_HEADING = re.compile(r"^##\s+Step\s+(\d+)\s*$", re.IGNORECASE | re.MULTILINE)


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


@lru_cache(maxsize=64)
def _load(path: Path, mtime: float) -> Lesson:
    return parse_lesson(path.stem, path.read_text(encoding="utf-8"))


def lesson(stem: str) -> Lesson | None:
    if not STEM_RE.fullmatch(stem):
        return None
    path = CONTENT_DIR / f"{stem}.md"
    if not path.is_file():
        return None
    return _load(path, path.stat().st_mtime)


def lessons_for(explainer: str) -> list[Lesson]:
    found = []
    for path in sorted(CONTENT_DIR.glob("*.md")):
        item = lesson(path.stem)
        if item and item.explainer == explainer:
            found.append(item)
    return found
