"""The sk_buff picture: drawn to scale, with stable ids, from the trace alone."""

from __future__ import annotations

import re

from app.sim.skbuff import SkbExplainer
from app.web.explainers.skb.picture import picture


def _trace(ops: list[dict]):
    ex = SkbExplainer()
    assert ex is not None
    return ex.run(ex.parse({"ops": ops}))


def test_pointer_offsets_and_positions_follow_the_frame() -> None:
    """Each pointer carries its byte offset and sits at x0 + offset × scale."""
    trace = _trace([{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}])
    svg = picture(trace, trace.frames[-1])
    scale = float(re.search(r'data-scale="([0-9.]+)"', svg).group(1))
    x0 = float(re.search(r'data-x0="([0-9.]+)"', svg).group(1))
    for ptr, offset in (("head", 0), ("data", 64), ("tail", 64), ("end", 1728)):
        m = re.search(
            rf'id="ptr-skb-{ptr}"[^>]*data-offset="(\d+)"[^>]*translate\(([0-9.]+)px', svg
        )
        assert m and int(m.group(1)) == offset
        assert abs(float(m.group(2)) - (x0 + offset * scale)) < 0.01


def test_headers_pushed_by_a_clone_are_drawn_live() -> None:
    """Headers a clone pushed into the shared head are bright while the clone's data covers them."""
    ex = SkbExplainer()
    assert ex is not None
    preset = ex.preset("tcp-transmit")
    trace = ex.run(ex.parse(dict(preset.params)))
    pushed = [f for f in trace.frames if f.op == "skb_push"][-1]  # eth header pushed by the clone
    headers = re.findall(r'-reg[0-9]+" class="seg header( stale)?"', picture(trace, pushed))
    assert headers and not any(headers), "the clone's TCP/IP/eth headers should not be dimmed"
    # once the clone is consumed, the bytes linger outside every live data..tail: dimmed
    after = re.findall(r'-reg[0-9]+" class="seg header( stale)?"', picture(trace, trace.frames[-1]))
    assert after and all(after)


def test_panic_frames_show_the_bug_banner() -> None:
    """A BUG outcome draws the vermillion banner naming it."""
    trace = _trace([{"op": "alloc_skb", "size": 128}, {"op": "skb_put", "len": 400}])
    svg = picture(trace, trace.frames[-1])
    assert 'id="panic-banner"' in svg and "skb_over_panic" in svg
