"""Every cited Linux 6.4 line is the definition line of the named function.

The table cites upstream v6.4; the tree read here is the 6.4.4 stable code, so each line is
mapped with ``line_in_644`` before it is looked up."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from app.sim.tcp.sources import SOURCES, line_in_644

TREE = Path("/work/.mirror/lewisevans2007+linux-6.4/repo")


@cache
def _file(path: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(TREE), "show", f"HEAD:{path}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return out.stdout.splitlines()


@pytest.mark.skipif(
    not TREE.exists() or shutil.which("git") is None, reason="Linux 6.4 tree not available"
)
@pytest.mark.parametrize("key", sorted(SOURCES))
def test_cited_line_defines_the_function(key: str) -> None:
    """The line holds the function's name followed by its opening parenthesis."""
    ref = SOURCES[key]
    line = _file(ref.path)[line_in_644(ref.path, ref.line) - 1]
    name = ref.function
    assert name + "(" in line or name + " (" in line, (ref.path, ref.line, line)
    assert not line.startswith((" ", "\t")), "a definition starts at column 0"


def test_model_cites_only_table_entries() -> None:
    """The engine names citations by key; every key its modules use exists in the table."""
    import re

    text = "".join(p.read_text(encoding="utf-8") for p in sorted(Path("app/sim/tcp").glob("*.py")))
    used = set(re.findall(r'"([a-z_0-9]+)"\)', text)) | set(
        re.findall(r'ref\("([a-z_0-9]+)"\)', text)
    )
    cited = {u for u in used if u.startswith(("tcp_", "inet_", "__", "reqsk", "cookie", "tw_"))}
    assert cited <= set(SOURCES), cited - set(SOURCES)
