"""No user-visible English left in a template outside {% trans %} / _() (explainer-owned
templates under templates/explainers/ are their owners' to convert)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(
    p for p in (ROOT / "templates").rglob("*.html") if "explainers" not in p.relative_to(ROOT).parts
)
VISIBLE_ATTRS = {"title", "aria-label", "placeholder", "alt", "label"}
# Words that are the same in every language: the product, key names, time zone.
ALLOWED = {"Stepscope", "API", "Home", "End", "UTC"}
WORD = re.compile(r"[A-Za-z]{2,}")
# Blocks that fill a class attribute of the base template are not text.
CLASS_BLOCKS = re.compile(r"\{%\s*block\s+\w*_class\s*%\}.*?\{%\s*endblock\s*%\}", re.S)
JINJA = re.compile(
    r"\{%-?\s*trans\b.*?%\}.*?\{%-?\s*endtrans\s*-?%\}|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S
)


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        for name, value in attrs:
            if name in VISIBLE_ATTRS and value:
                self._check(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._check(data)

    def _check(self, text: str) -> None:
        text = " ".join(text.split())
        if any(w not in ALLOWED for w in WORD.findall(text)):
            self.found.append(text)


def untranslated(source: str) -> list[str]:
    """User-visible text of a template once every Jinja construct (and trans block) is out."""
    parser = _Visible()
    parser.feed(JINJA.sub(" ", CLASS_BLOCKS.sub(" ", source)))
    return parser.found


def test_scanner_finds_english() -> None:
    """The scan catches text nodes and visible attributes, and passes translated ones."""
    assert untranslated('<p title="Hello there">x</p>') == ["Hello there"]
    assert untranslated("<p>Hi <b>you</b></p>") == ["Hi", "you"]
    assert untranslated("<p title=\"{{ _('Hi') }}\">{% trans %}Hi{% endtrans %}</p>") == []
    assert untranslated("<script>const a = 'Hello';</script>{# Note #}") == []
    assert untranslated("<code>Stepscope</code> <b>API</b>") == []


@pytest.mark.parametrize("path", TEMPLATES, ids=[str(p.relative_to(ROOT)) for p in TEMPLATES])
def test_template_has_no_untranslated_text(path: Path) -> None:
    """Every visible word of a shared template goes through the catalog."""
    assert untranslated(path.read_text(encoding="utf-8")) == []
