"""Every Linux 6.4 line the sk_buff explainer cites is the definition line of the named function
(checked in the 6.4 tree when it is present on this machine, skipped otherwise)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from app.sim.path.sources import line_in_644
from app.sim.skbuff.sources import CALLERS, SOURCES

TREE = Path("/work/.mirror/lewisevans2007+linux-6.4/repo")

CITED = sorted(
    {(r.function, r.path, r.line) for r in SOURCES.values()}
    | {(name, path, line) for name, (path, line) in CALLERS.items()}
)


@cache
def _lines(path: str) -> list[str] | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(TREE), "show", f"HEAD:{path}"],
            capture_output=True,
            check=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.decode("utf-8", "replace").splitlines()


@pytest.mark.parametrize(("function", "path", "line"), CITED, ids=lambda v: str(v))
def test_cited_line_defines_function(function: str, path: str, line: int) -> None:
    """The cited line of path (Linux 6.4) holds the function's name followed by "(" and is not
    a prototype or a call (the definition line)."""
    if not TREE.exists():
        pytest.skip("the Linux 6.4 tree is not on this machine")
    lines = _lines(path)
    if lines is None:
        pytest.skip(f"cannot read {path} from the Linux 6.4 tree")
    at = line_in_644(function, path, line)  # the tree holds 6.4.4's code, cited lines are v6.4's
    text = lines[at - 1]
    assert re.search(rf"(^|[\s*]){re.escape(function)}\(", text), (path, line, text)
    assert not text.startswith(("\t", " ")), (path, line, text)  # a call would be indented
    # A definition reaches its "{" before any ";" (a prototype ends with ";" instead).
    rest = "\n".join(lines[at - 1 : at + 12])
    assert rest.find("{") != -1 and (rest.find(";") == -1 or rest.find("{") < rest.find(";")), (
        path,
        line,
        text,
    )


def test_every_op_has_a_source() -> None:
    """Every op the schema accepts cites a kernel function (so no frame lacks a source)."""
    from app.sim.skbuff.ops import OP_NAMES

    assert set(OP_NAMES) == set(SOURCES)


def test_every_op_has_one_registered_handler() -> None:
    """The machine's table holds exactly the ops the schema accepts: none missing, none dead,
    and each handler lives in the module named after its kernel file (not in the machine)."""
    from app.sim.skbuff.machine import HANDLERS
    from app.sim.skbuff.ops import OP_NAMES

    assert set(HANDLERS) == set(OP_NAMES)
    modules = {h.__module__.rsplit(".", 1)[1] for h in HANDLERS.values()}
    assert modules == {
        "alloc",
        "linear",
        "frags",
        "share",
        "proto",
        "free",
        "zerocopy",
        "defrag",
    }


def test_drop_reasons_follow_the_6_4_enum() -> None:
    """DROP_REASONS lists enum skb_drop_reason (include/net/dropreason-core.h, 6.4) in order, so
    the values the narration quotes (CONSUMED 1, NOT_SPECIFIED 2, ...) are the kernel's."""
    from app.sim.skbuff.ops import DROP_REASONS

    if not TREE.exists():
        pytest.skip("the Linux 6.4 tree is not on this machine")
    lines = _lines("include/net/dropreason-core.h")
    if lines is None:
        pytest.skip("cannot read include/net/dropreason-core.h")
    text = "\n".join(lines)
    body = text[text.index("enum skb_drop_reason {") :]
    body = body[: body.index("\n};")]
    names = re.findall(r"^\s*(SKB_[A-Z0-9_]+)", body, flags=re.M)
    want = ["SKB_NOT_DROPPED_YET", "SKB_CONSUMED"]
    want += [f"SKB_DROP_REASON_{r}" for r in DROP_REASONS[1:]]
    assert names[: len(want)] == want
    assert names[len(want)] == "SKB_DROP_REASON_MAX"
