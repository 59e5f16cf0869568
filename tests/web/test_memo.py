"""app/web/memo.py: the LRU map bounded in entries, and in weight when given one."""

from __future__ import annotations

from app.web.memo import Memo


def test_entries_bound_drops_the_least_recently_used() -> None:
    m: Memo[str, int] = Memo(2)
    m.put("a", 1)
    m.put("b", 2)
    assert m.get("a") == 1  # a is now the newest
    m.put("c", 3)
    assert m.get("b") is None and m.get("a") == 1 and m.get("c") == 3


def test_weight_bound_drops_oldest_until_under_budget_keeping_the_newest() -> None:
    m: Memo[str, list[int]] = Memo(100, weigh=len, budget=10)
    m.put("small", [0] * 3)
    m.put("mid", [0] * 6)
    assert m.weight == 9 and m.get("small") is not None
    m.put("big", [0] * 5)  # 14 > 10: the oldest ("mid", as "small" was just read) goes
    assert m.get("mid") is None and m.get("small") is not None and m.weight == 8
    m.put("huge", [0] * 50)  # over the budget alone: kept, everything else dropped
    assert m.get("huge") is not None and m.get("small") is None and m.weight == 50
    m.put("huge", [0] * 2)  # replacing a key re-weighs it
    assert m.weight == 2
    m.clear()
    assert m.weight == 0 and m.get("huge") is None
