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
