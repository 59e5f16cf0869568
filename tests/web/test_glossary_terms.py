"""The glossary defines the terms the narration leans on (issue 21), in English and Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.web.glossary import glossary_for

CONTENT = Path(__file__).resolve().parents[2] / "content"
TERMS = (
    "TSO",
    "TSQ",
    "RSS",
    "RPS",
    "FIB",
    "TTL",
    "MTU",
    "IRQ",
    "DMA",
    "IW",
    "HyStart",
    "pacing",
    "GRO",
)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_narration_terms_are_defined(lang: str) -> None:
    glossary = glossary_for(CONTENT, lang)
    for term in TERMS:
        html = str(glossary.annotate(f"the {term} here"))
        assert f'data-term="{term}"' in html, (lang, term, html)
        assert glossary.definitions[term.lower()], term


def test_chinese_definitions_are_chinese() -> None:
    glossary = glossary_for(CONTENT, "zh-CN")
    english = glossary_for(CONTENT, "en")
    for term in TERMS:
        zh = glossary.definitions[term.lower()]
        assert zh != english.definitions[term.lower()]
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), (term, zh)
