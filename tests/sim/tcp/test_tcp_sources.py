"""Every cited Linux 6.4 line is the definition line of the named function, in a v6.4 tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.sim.tcp.sources import SOURCES
from tests.linux_v64 import require_v6_4, v6_4_file


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_cited_line_defines_the_function(key: str) -> None:
    """The line holds the function's name followed by its opening parenthesis."""
    require_v6_4()
    ref = SOURCES[key]
    line = v6_4_file(ref.path)[ref.line - 1]
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
