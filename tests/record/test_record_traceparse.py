"""The trace_pipe parser: event lines in the shapes tracefs prints (built here from the
kernel's print formats), stack traces attached to their event, lost-event markers."""

from __future__ import annotations

import pytest

from app.record.traceparse import (
    MAX_FRAMES,
    StackLine,
    StackStart,
    TraceEvent,
    TraceReader,
    parse_fields,
    parse_line,
)


def head(task: str, pid: int, cpu: int, ts: float, flags: str = "..s1.", tgid: str = "") -> str:
    tg = f"({tgid}) " if tgid else ""
    return f"{task:>16}-{pid:<7} {tg}[{cpu:03d}] {flags} {ts:.6f}: "


PROBE = (
    "family=AF_INET src=10.0.0.1:40312 dest=10.0.0.2:5201 mark=0x0 data_len=0 "
    "snd_nxt=0x6e9cf667 snd_una=0x6e9cbdd7 snd_cwnd={cwnd} ssthresh=2147483647 snd_wnd=65160 "
    "srtt=44187 rcv_wnd=64512 sock_cookie=c807"
)


@pytest.mark.parametrize(
    "task,flags,tgid",
    [("iperf3", "..s1.", ""), ("kworker/u4:2-events", "d.h2.", ""), ("my task", "b....", "42"),
     ("<idle>", "..s.", "")],
)
def test_event_line(task: str, flags: str, tgid: str) -> None:
    line = head(task, 1234, 1, 22466.384173, flags, tgid) + "tcp_probe: " + PROBE.format(cwnd=17)
    ev = parse_line(line)
    assert isinstance(ev, TraceEvent)
    assert (ev.task, ev.pid, ev.cpu, ev.name) == (task, 1234, 1, "tcp_probe")
    assert ev.ts == pytest.approx(22466.384173)
    assert ev.fields["snd_cwnd"] == "17" and ev.fields["src"] == "10.0.0.1:40312"
    assert ev.fields["sock_cookie"] == "c807" and len(ev.fields) == 13


def test_fields_with_colon_spelling_and_symbols() -> None:
    """skb:kfree_skb prints ``reason: NAME``; location is a symbol with its offset."""
    f = parse_fields(
        "skbaddr=00000000abcd rx_sk=0000000000000000 protocol=2048 "
        "location=tcp_v4_rcv+0x1c/0x90 reason: NO_SOCKET"
    )
    assert f == {
        "skbaddr": "00000000abcd",
        "rx_sk": "0000000000000000",
        "protocol": "2048",
        "location": "tcp_v4_rcv+0x1c/0x90",
        "reason": "NO_SOCKET",
    }


def test_stack_lines_and_header() -> None:
    assert parse_line(" => tcp_v4_rcv+0x1c/0x90") == StackLine("tcp_v4_rcv")
    assert parse_line(" => __netif_receive_skb_core.constprop.0") == StackLine(
        "__netif_receive_skb_core"
    )
    assert parse_line(" => veth_xmit+0x5/0x9 [veth]") == StackLine("veth_xmit")
    assert parse_line(head("python", 9, 3, 1.5) + "<stack trace>") == StackStart(3)
    for junk in ("", "# tracer: nop", "#           TASK-PID     CPU#", "garbage"):
        assert parse_line(junk) is None


def _stack(cpu: int, ts: float, funcs: list[str]) -> list[str]:
    return [head("python", 9, cpu, ts) + "<stack trace>"] + [f" => {f}+0x1/0x2" for f in funcs]


def test_reader_attaches_each_stack_to_its_event() -> None:
    lines = [
        head("python", 9, 0, 1.0) + "net_dev_queue: dev=a skbaddr=01 len=74",
        *_stack(0, 1.0, ["trace_event_raw_event_net_dev_template", "__dev_queue_xmit", "ip_output"]),
        head("python", 9, 0, 1.1) + "netif_receive_skb: dev=b skbaddr=01 len=60",
        *_stack(0, 1.1, ["__netif_receive_skb_core", "process_backlog"]),
        head("python", 9, 1, 1.2) + "consume_skb: skbaddr=01 location=tcp_rcv+0x1/0x2",
    ]
    r = TraceReader()
    out: list[TraceEvent] = []
    for ln in lines:
        out += r.feed(ln)
    out += r.flush()
    assert [e.name for e in out] == ["net_dev_queue", "netif_receive_skb", "consume_skb"]
    # the tracepoint's own frame is left out; innermost first
    assert out[0].stack == ["__dev_queue_xmit", "ip_output"]
    assert out[1].stack == ["__netif_receive_skb_core", "process_backlog"]
    assert out[2].stack is None  # no stack printed after it


def test_reader_caps_frames_and_counts_lost_events() -> None:
    r = TraceReader()
    r.feed(head("a", 1, 0, 1.0) + "tcp_probe: " + PROBE.format(cwnd=1))
    for ln in _stack(0, 1.0, [f"f{i}" for i in range(MAX_FRAMES + 10)]):
        r.feed(ln)
    r.feed("CPU:1 [LOST 12 EVENTS]")
    r.feed("CPU:0 [LOST 3 EVENTS]")
    (ev,) = r.flush()
    assert ev.stack is not None and len(ev.stack) == MAX_FRAMES
    assert r.lost == 15


def test_a_stack_from_another_cpu_is_not_attached() -> None:
    r = TraceReader()
    r.feed(head("a", 1, 0, 1.0) + "net_dev_queue: dev=a skbaddr=01 len=74")
    for ln in _stack(1, 1.0, ["elsewhere"]):
        r.feed(ln)
    (ev,) = r.flush()
    assert ev.stack is None
