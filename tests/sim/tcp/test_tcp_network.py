"""Network events: drop, delay, duplicate and reorder the nth segment of an endpoint."""

from __future__ import annotations

from tcphelp import OPEN, c, run, segments

DATA = [*OPEN, c(100, "client", "send", bytes=3000), c(100, "server", "recv")]


def test_drop_marks_the_nth_segment_lost() -> None:
    """nth counts the segments an endpoint sends, from 1; the dropped one never arrives."""
    tr = run({"script": DATA, "network": [{"drop": {"from": "client", "nth": 4}}]})
    segs = segments(tr, "client")
    assert [s["nth"] for s in segs][:5] == [1, 2, 3, 4, 5]
    lost = [s for s in segs if s["lost"]]
    assert [s["nth"] for s in lost] == [4] and lost[0]["arrive_ms"] is None
    delivered = [f.state["delivered"]["id"] for f in tr.frames if f.state["delivered"]]
    assert lost[0]["id"] not in delivered


def test_delay_adds_to_the_one_way_delay() -> None:
    """delay adds ms to one segment's flight time only."""
    tr = run({"script": DATA, "network": [{"delay": {"from": "client", "nth": 3, "ms": 500}}]})
    segs = {s["nth"]: s for s in segments(tr, "client")}
    assert segs[3]["arrive_ms"] - segs[3]["sent_ms"] == 510
    assert segs[4]["arrive_ms"] - segs[4]["sent_ms"] == 10


def test_duplicate_is_delivered_twice() -> None:
    """A duplicated data segment arrives twice; the copy is old (below RCV.WUP by then, so
    tcp_validate_incoming answers it with a duplicate ACK)."""
    tr = run({"script": DATA, "network": [{"duplicate": {"from": "client", "nth": 3}}]})
    seg3 = next(s for s in segments(tr, "client") if s["nth"] == 3)
    hits = [
        f for f in tr.frames if f.state["delivered"] and f.state["delivered"]["id"] == seg3["id"]
    ]
    assert len(hits) == 2
    assert any(n.id.startswith(("Old data", "The segment is outside")) for n in hits[1].notes)


def test_reorder_swaps_with_the_next_segment() -> None:
    """reorder holds the nth segment until the next one of the same endpoint has arrived; the
    receiver queues the later one out of order and ACKs at once (a duplicate ACK)."""
    tr = run({"script": DATA, "network": [{"reorder": {"from": "client", "nth": 3}}]})
    order = [
        f.state["delivered"]["nth"]
        for f in tr.frames
        if f.state["delivered"] and f.state["delivered"]["src"] == "client"
    ]
    assert order.index(4) < order.index(3)
    acks = [s["ack"] for s in segments(tr, "server") if s["len"] == 0 and "SYN" not in s["flags"]]
    assert acks[0] == 1001  # the duplicate ACK for the gap
    assert max(acks) == 4001
