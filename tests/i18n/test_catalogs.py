"""The gettext catalogs: every extracted id is translated, with the same placeholders."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from app.sim.core import msg
from app.web import i18n

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "app" / "locale"
# {name}, {name:g}, {name!r} (str.format, msg() ids) and %(name)s (Jinja2 {% trans %}).
BRACE = re.compile(r"(?<!\{)\{(\w+)((?:![rsa])?(?::[^{}]*)?)\}(?!\})")
PERCENT = re.compile(r"%\((\w+)\)[sd]")


def _load(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as fp:
        return read_po(fp, locale=locale)


def placeholders(text: str) -> set[str]:
    """The named fields of a format string, with their format spec (``{v:g}`` ≠ ``{v}``)."""
    return {f"{{{n}{spec}}}" for n, spec in BRACE.findall(text)} | {
        f"%({n})" for n in PERCENT.findall(text)
    }


POT = _load(LOCALE / "messages.pot")
ZH = _load(LOCALE / "zh_CN" / "LC_MESSAGES" / "messages.po", "zh_CN")
EN = _load(LOCALE / "en" / "LC_MESSAGES" / "messages.po", "en")
IDS = sorted(str(m.id) for m in POT if m.id)
# Congestion still builds its narration with f-strings; its few msg() ids (titles) are
# translated, and the rest of its words are its owner's next step.
CJK = re.compile(r"[\u4e00-\u9fff]")


def test_template_matches_code() -> None:
    """messages.pot is up to date: a fresh extraction finds exactly its ids (run
    scripts/i18n-extract after changing words)."""
    from babel.messages.frontend import CommandLineInterface

    out = ROOT / ".pytest-extract.pot"
    try:
        CommandLineInterface().run(
            [
                "pybabel",
                "-q",
                "extract",
                "-F",
                str(ROOT / "babel.cfg"),
                "-k",
                "msg",
                "--no-wrap",
                "-o",
                str(out),
                str(ROOT),
            ]
        )
        fresh = {str(m.id) for m in _load(out) if m.id}
    finally:
        out.unlink(missing_ok=True)
    assert fresh == set(IDS), (sorted(fresh - set(IDS))[:5], sorted(set(IDS) - fresh)[:5])


@pytest.mark.parametrize("catalog", [ZH, EN], ids=["zh_CN", "en"])
def test_every_id_is_in_both_catalogs(catalog: Catalog) -> None:
    """Every extracted id has an entry in the en and zh_CN catalogs."""
    missing = [i for i in IDS if catalog.get(i) is None]
    assert not missing, missing[:10]


def test_every_id_has_a_chinese_translation() -> None:
    """Every id has a non-empty, non-fuzzy Chinese msgstr."""
    untranslated = [i for i in IDS if not (m := ZH.get(i)) or not m.string or m.fuzzy]
    assert not untranslated, f"{len(untranslated)} untranslated, e.g. {untranslated[:5]}"


@pytest.mark.parametrize("catalog", [ZH, EN], ids=["zh_CN", "en"])
def test_translations_keep_placeholders(catalog: Catalog) -> None:
    """A translation quotes exactly the placeholders of its id ({name}, {v:g}, %(name)s)."""
    wrong = [
        (i, m.string)
        for i in IDS
        if (m := catalog.get(i)) and m.string and placeholders(str(m.string)) != placeholders(i)
    ]
    assert not wrong, wrong[:5]


def test_chinese_prose_uses_full_width_punctuation() -> None:
    """Chinese sentences end with full-width punctuation (。；：), not ASCII '.', ';', ':' after
    a Chinese character (code and identifiers keep their own)."""
    bad = [
        str(m.string)
        for i in IDS
        if (m := ZH.get(i))
        and m.string
        and re.search(r"[\u4e00-\u9fff][,;:.](?:\s|$)", str(m.string))
    ]
    assert not bad, bad[:5]


def test_placeholder_parser() -> None:
    """The placeholder parser sees names and specs, and ignores escaped braces."""
    assert placeholders("{key} must be ≥ {limit:g}{unit}; {{x}}") == {
        "{key}",
        "{limit:g}",
        "{unit}",
    }
    assert placeholders("step %(step)s of %(last)s") == {"%(step)", "%(last)"}


def test_compiled_catalog_translates_messages() -> None:
    """The runtime catalog renders a message id in Chinese with the same values."""
    m = msg("{key} must be ≥ {limit}; you gave {v}", key="len", limit=0, v=-4)
    zh = m.render(i18n.gettext_for("zh-CN"))
    assert CJK.search(zh) and "len" in zh and "-4" in zh
    assert m.render(i18n.gettext_for("en")) == "len must be ≥ 0; you gave -4"


def test_bootstrap_compiles_catalogs() -> None:
    """scripts/_bootstrap.sh compiles the catalogs (the .mo files are not committed)."""
    text = (ROOT / "scripts" / "_bootstrap.sh").read_text()
    assert "pybabel compile -d app/locale" in text, "the bootstrap must compile the catalogs"
    tracked = subprocess.run(
        ["git", "ls-files", "app/locale"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    assert not [p for p in tracked if p.endswith(".mo")]
    assert sys.version_info >= (3, 11)
