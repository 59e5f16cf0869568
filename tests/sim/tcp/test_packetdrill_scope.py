"""docs/packetdrill-scope.md and bench/packetdrill_scope.py name the same kernel selftests as
in scope for a 6.4 model, the page's count reads "N of N in scope pass" with N the list's
length, and each script classed out of scope as later than 6.4 names, on the page and in the
bench, the commit that changed the kernel code it depends on."""

from __future__ import annotations

import re
from pathlib import Path

from bench.packetdrill_scope import AFTER_6_4, IN_SCOPE

DOC = Path(__file__).resolve().parents[3] / "docs" / "packetdrill-scope.md"
ROW = re.compile(r"^\| `([^`]+\.pkt)` \| (.*) \|$", re.M)


def _rows() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text(encoding="utf-8")))


def test_the_pages_in_rows_are_the_benchs_in_scope_list() -> None:
    rows = _rows()
    listed_in = {name for name, why in rows.items() if re.match(r"in\b", why)}
    assert listed_in == IN_SCOPE


def test_the_page_counts_every_in_scope_script_as_passing() -> None:
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    n = len(IN_SCOPE)
    assert f"**{n} of {n} in scope pass line for line**" in text
    assert re.search(r"\b\d+ of \d+ in scope pass", text.replace(f"{n} of {n}", "")) is None


def test_each_script_later_than_6_4_is_out_and_names_its_commit() -> None:
    rows = _rows()
    for name, (commit, why) in AFTER_6_4.items():
        assert name not in IN_SCOPE
        assert re.fullmatch(r"[0-9a-f]{40}", commit)
        assert rows[name].startswith("out — later than 6.4: pins `" + commit[:12] + "`"), name
        assert "6.4" in why and "line" in why
