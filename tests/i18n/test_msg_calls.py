"""Every msg() id reaches the catalog: Babel cannot see a msg() call written inside an f-string
(the whole f-string is one token to it), so such a call would stay English for every reader."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
FSTRING = re.compile(r"^[rbuRBU]*[fF]")


def test_no_msg_call_inside_an_f_string() -> None:
    """No app module calls msg() inside an f-string's replacement fields."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and FSTRING.match(tok.string) and "msg(" in tok.string:
                found.append(f"{path.relative_to(APP.parent)}:{tok.start[0]}")
    assert found == [], "hoist these msg() calls out of their f-strings:\n" + "\n".join(found)


def test_buffer_captions_are_translated(client) -> None:  # type: ignore[no-untyped-def]
    """The sk_buff picture names where a buffer came from in the reader's language (cache
    names such as kmalloc-2k are identifiers and stay)."""
    zh = client.get("/explainers/skb/presets/gro-linearize?step=0&lang=zh-CN").text
    en = client.get("/explainers/skb/presets/gro-linearize?step=0&lang=en").text
    assert "napi 1K frag" in en or "driver page frag" in en
    assert "napi 1K 片段" in zh or "驱动页片段" in zh
