"""Recorded packet paths beside the walks (app.sim.path.recorded), on recordings the tests
write themselves (tests/sim/path/pathrec.py): packets grouped by skb address and time, the
path each took, the walk that models it and, per event, the walk's step with the functions
both stacks have, the ones the model skips and the ones the recording lacks."""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.core import ParamError
from app.sim.path.recorded import (
    MAX_FRAMES,
    bare,
    group_packets,
    parse_events,
    recorded_trace,
)
from tests.sim.path.pathrec import event, nic_drop, nic_rx, nic_tx, recording, veth_tx


def _trace(*groups: list[dict[str, Any]]) -> Any:
    return recorded_trace(recording(*groups), {})


def test_packets_are_grouped_by_skb_address_until_freed() -> None:
    events = parse_events(recording(veth_tx(), nic_rx(), nic_tx(), nic_drop()))
    packets = group_packets(events)
    # the TX skb's address comes back for the dropped segment after consume_skb freed it
    assert [p.path for p in packets] == ["veth", "rx", "tx", "rx"]
    assert [len(p.events) for p in packets] == [4, 2, 3, 2]
    # sk_data_ready names a socket: it joins the packet last received
    assert packets[0].events[-1].event == "sock:sk_data_ready"
    assert packets[1].events[-1].event == "sock:sk_data_ready"
    assert [p.dev for p in packets] == ["veth0", "eth0", "eth0", "eth0"]
    assert packets[3].drop == "NO_SOCKET" and packets[3].walk == ("rx", "nic", "no_socket", None)


def test_each_event_meets_the_step_where_its_tracepoint_sits() -> None:
    trace = _trace(veth_tx(), nic_rx(), nic_tx(), nic_drop())
    got = [
        (f.state["event"], f.state["model_walk"], f.state["model_function"]) for f in trace.frames
    ]
    assert got == [
        ("net:net_dev_queue", "tx/veth", "__dev_queue_xmit"),
        ("net:net_dev_start_xmit", "tx/veth", "xmit_one"),
        ("net:netif_receive_skb", "tx/veth", "__netif_receive_skb_core"),
        ("sock:sk_data_ready", "tx/veth", "sock_def_readable"),
        ("net:netif_receive_skb", "rx/nic", "__netif_receive_skb_core"),
        ("sock:sk_data_ready", "rx/nic", "sock_def_readable"),
        ("net:net_dev_queue", "tx/nic", "__dev_queue_xmit"),
        ("net:net_dev_start_xmit", "tx/nic", "xmit_one"),
        ("skb:consume_skb", "tx/nic", "igb_clean_tx_irq"),  # the walk's TX completion
        ("net:netif_receive_skb", "rx/nic drop=no_socket", "__netif_receive_skb_core"),
        ("skb:kfree_skb", "rx/nic drop=no_socket", "kfree_skb_reason"),
    ]
    steps = [f.state["model_step"] for f in trace.frames[:4]]
    assert steps == sorted(steps)  # a packet's steps go forward through its walk
    assert trace.summary["paths"] == {"veth": 1, "rx": 2, "tx": 1}
    assert trace.frames[-1].result == "drop" and trace.frames[-1].mark == "drop"
    assert trace.frames[-1].state["reason"] == "NO_SOCKET"


def test_stacks_side_by_side() -> None:
    trace = _trace(veth_tx())
    queue, start, rx, ready = (f.state for f in trace.frames)
    # outermost first, compiler suffixes dropped
    assert queue["recorded"][0] == "entry_SYSCALL_64_after_hwframe"
    assert queue["recorded"][-1] == "__dev_queue_xmit" == queue["model"][-1]
    assert "__netif_receive_skb_core" in rx["recorded"]
    # both: in the order of the model's stack; what the walk does not model: the syscall layer
    assert queue["both"][:3] == ["tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push"]
    assert {"entry_SYSCALL_64_after_hwframe", "inet_sendmsg", "sock_sendmsg"} <= set(
        queue["skipped"]
    )
    # what the recording lacks: inlined (__ip_finish_output, xmit_one)
    assert queue["missing"] == ["__ip_finish_output"]
    assert start["missing"] == ["__ip_finish_output", "xmit_one"]
    for st in (queue, start, rx, ready):
        assert set(st["both"]) | set(st["skipped"]) == set(st["recorded"])
        assert set(st["both"]) | set(st["missing"]) == set(st["model"])
    # the receive ran inside the sender's __dev_queue_xmit: both stacks say so
    assert {"__local_bh_enable_ip", "__dev_queue_xmit", "tcp_sendmsg"} <= set(ready["both"])
    words = trace.frames[0].narration.render()
    assert "tx/veth" in words and "inet_sendmsg" in words and "__ip_finish_output" in words


def test_loopback_is_told_by_its_device() -> None:
    events = [
        {**e, "fields": {**e["fields"], "name": "lo"}} for e in veth_tx() if e["fields"].get("name")
    ]
    trace = _trace(events)
    assert {f.state["path"] for f in trace.frames} == {"loopback"}
    assert {f.state["model_walk"] for f in trace.frames} == {"tx/loopback"}


def test_frames_are_bounded_by_whole_packets() -> None:
    groups = [veth_tx(t=i * 1.0, skb=f"ffff8880{i:08x}") for i in range(MAX_FRAMES // 4 + 20)]
    trace = _trace(*groups)
    assert len(trace.frames) == MAX_FRAMES
    assert trace.summary["shown_packets"] == MAX_FRAMES // 4
    assert trace.summary["packets"] == len(groups)
    assert trace.frames[-1].state["event"] == "sock:sk_data_ready"


def test_bare_names() -> None:
    assert bare("__netif_receive_skb_core.constprop.0") == "__netif_receive_skb_core"
    assert bare("tcp_v4_rcv+0x7e/0x1000") == "tcp_v4_rcv"
    assert bare("do_softirq.part.0") == "do_softirq"


@pytest.mark.parametrize(
    ("rec", "loc"),
    [
        ({"kind": "path"}, ("events",)),
        ({"events": []}, ("events",)),
        ({"events": [{"event": "tcp:tcp_probe", "t_ms": 0, "fields": {}}]}, ("events",)),
        ({"events": [5]}, ("events", 0)),
        ({"events": [event(0, "net:net_dev_queue", ["a"], skbaddr="1") | {"t_ms": "x"}]},
         ("events", 0, "t_ms")),
        ({"events": [event(0, "net:net_dev_queue", ["a"]) | {"stack": "tcp_sendmsg"}]},
         ("events", 0, "stack")),
        ({"events": [event(0, "net:net_dev_queue", ["a"]) | {"fields": []}]},
         ("events", 0, "fields")),
    ],
)  # fmt: skip
def test_bad_recordings_name_the_field(rec: dict[str, Any], loc: tuple[str | int, ...]) -> None:
    with pytest.raises(ParamError) as err:
        recorded_trace(rec, {})
    assert [i.loc for i in err.value.issues] == [loc]


def test_an_event_without_its_stack_meets_its_tracepoint() -> None:
    events = [{k: v for k, v in e.items() if k != "stack"} for e in veth_tx()]
    trace = _trace(events)
    assert [f.state["model_function"] for f in trace.frames] == [
        "__dev_queue_xmit",
        "xmit_one",
        "__netif_receive_skb_core",
        "sock_def_readable",
    ]
    assert all(f.state["recorded"] == [] and f.state["both"] == [] for f in trace.frames)


def test_overrides_are_refused_by_name() -> None:
    with pytest.raises(ParamError) as err:
        recorded_trace(recording(veth_tx()), {"device": "nic"})
    assert [i.loc for i in err.value.issues] == [("device",)]
