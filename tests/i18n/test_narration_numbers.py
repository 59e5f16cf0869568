"""Narration in Chinese quotes the same figures as in English, for every preset step of every
explainer whose simulation speaks in msg() ids (skb, tcp, path, cwnd)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from app.sim.congestion import CwndExplainer
from app.sim.core import Explainer, Message, msg
from app.sim.path import PathExplainer
from app.sim.skbuff import SkbExplainer
from app.sim.tcp import TcpExplainer
from app.web import i18n

EXPLAINERS: list[Explainer[Any]] = [
    SkbExplainer(),
    TcpExplainer(),
    PathExplainer(),
    CwndExplainer(),
]
PRESETS = [(e, p.slug) for e in EXPLAINERS for p in e.presets]
CJK = re.compile(r"[\u4e00-\u9fff]")
DIGITS = re.compile(r"\d+")
PROSE = re.compile(r"\b(?:the|is|are|and|of|to|it|its|with|from|so|not|no|now)\b")
EN = i18n.gettext_for("en")
ZH = i18n.gettext_for("zh-CN")


def numbers(text: str) -> Counter[str]:
    """Every digit run of a text, counted (a figure may move within the sentence)."""
    return Counter(DIGITS.findall(text))


def test_numbers_helper() -> None:
    """The digit-run multiset ignores order and words but not a changed or missing figure."""
    assert numbers("tail 64 → 164, len 100") == numbers("len 100，tail 64 → 164")
    assert numbers("end = 1728") != numbers("end = 1792")
    assert numbers("0x10001") == Counter({"0": 1, "10001": 1})


def test_a_message_changes_language_but_not_its_figures() -> None:
    """A rendered message differs between languages while its parameters stay the same."""
    m = msg("{key} must be ≥ {limit}; you gave {v}", key="len", limit=0, v=-4)
    en, zh = m.render(EN), m.render(ZH)
    assert en != zh and CJK.search(zh) and numbers(en) == numbers(zh)


@pytest.mark.parametrize(("explainer", "slug"), PRESETS, ids=[f"{e.name}-{s}" for e, s in PRESETS])
def test_preset_narration_numbers_match(explainer: Explainer[Any], slug: str) -> None:
    """Every step's narration and notes: the Chinese text is Chinese and its digit runs equal
    the English text's."""
    preset = explainer.preset(slug)
    assert preset is not None
    trace = explainer.run(explainer.parse(dict(preset.params)), None)
    assert trace.frames
    for frame in trace.frames:
        texts: list[Message] = [frame.narration, *frame.notes]
        for m in texts:
            en, zh = m.render(EN), m.render(ZH)
            assert numbers(zh) == numbers(en), (frame.index, en, zh)
        en = frame.narration.render(EN)
        if PROSE.search(en):  # a sentence, not just "f → g": it must read in Chinese
            assert CJK.search(frame.narration.render(ZH)), (frame.index, en)
