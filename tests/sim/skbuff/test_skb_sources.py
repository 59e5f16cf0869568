"""The sk_buff explainer's sources: every op cites a kernel function (the lines themselves are
checked in v6.4 by tests/sim/path/test_cited_lines.py), and the drop reasons are 6.4's enum."""

from __future__ import annotations

import re

from app.sim.skbuff.sources import SOURCES
from tests.linux_v64 import require_v6_4, v6_4_file


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

    require_v6_4()
    text = "\n".join(v6_4_file("include/net/dropreason-core.h"))
    body = text[text.index("enum skb_drop_reason {") :]
    body = body[: body.index("\n};")]
    names = re.findall(r"^\s*(SKB_[A-Z0-9_]+)", body, flags=re.M)
    want = ["SKB_NOT_DROPPED_YET", "SKB_CONSUMED"]
    want += [f"SKB_DROP_REASON_{r}" for r in DROP_REASONS[1:]]
    assert names[: len(want)] == want
    assert names[len(want)] == "SKB_DROP_REASON_MAX"
