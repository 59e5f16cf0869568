"""``record path --port/--dst``: the flow's packets found among every packet's path events,
by skb address where a TCP tracepoint prints one beside the flow's ports, by the CPU that
handled the flow's segment otherwise (app/record/pathmatch.py); the recorder enables the TCP
events unfiltered and leaves them out of the output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.record import recorder
from app.record.filters import FlowFilter
from app.record.pathmatch import IDENTITY, select
from app.record.recorder import Stopper, record
from tests.record.test_record_tracefs import FakeRoot, fmt, line

FLOW = FlowFilter(port=5201)
MINE = {"src": "10.0.0.1:40000", "dest": "10.0.0.2:5201", "skaddr": "s1"}
OTHER = {"src": "10.0.0.1:50000", "dest": "10.0.0.9:22", "skaddr": "s9"}


def ev(event: str, cpu: int, /, **fields: str) -> dict[str, Any]:
    return {"event": event, "cpu": cpu, "pid": 77, "fields": fields}


def rx(addr: str, cpu: int) -> dict[str, Any]:
    return ev("net:netif_receive_skb", cpu, name="eth0", skbaddr=addr, len="1500")


def tx(addr: str, cpu: int) -> dict[str, Any]:
    return ev("net:net_dev_queue", cpu, name="eth0", skbaddr=addr, len="66")


def probe(cpu: int, who: dict[str, str], skb: str | None) -> dict[str, Any]:
    fields = dict(who)
    if skb is not None:
        fields["skbaddr"] = skb
    else:
        fields.pop("skaddr")  # an older format: neither address printed
    return ev("tcp:tcp_probe", cpu, **fields)


def kept(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = select(events, FLOW)
    return [
        (events[i]["event"].split(":")[1], events[i]["fields"].get("skbaddr", ""))
        for i in found.keep
    ]


def test_received_skbs_are_the_flows_by_the_address_tcp_probe_prints() -> None:
    """Each received skb whose address the flow's tcp_probe prints is kept whole (its receive
    before, its free after); another flow's skb on the other CPU, and the same address reused
    by another flow's segment once delivered, are not."""
    events = [
        rx("A", 0),
        rx("C", 1),
        probe(0, MINE, "A"),
        probe(1, OTHER, "C"),
        ev("skb:consume_skb", 0, skbaddr="A"),
        ev("skb:consume_skb", 1, skbaddr="C"),
        rx("A", 1),
        probe(1, OTHER, "A"),  # the address again, another flow's
    ]
    assert kept(events) == [("netif_receive_skb", "A"), ("consume_skb", "A")]
    found = select(events, FLOW)
    assert found.skbaddr_in_probe and (found.packets, found.kept_packets, found.by_address) == (
        3,
        1,
        1,
    )


def test_sends_are_the_flows_when_its_segment_was_being_handled_on_that_cpu() -> None:
    """An skb queued on a CPU whose latest TCP event was the flow's (the ACK that let it be
    sent) is the flow's; one queued after another flow's segment, or after a new packet
    arrived on that CPU, is not; a wake-up right after a kept packet is kept."""
    events = [
        rx("A", 0),
        probe(0, MINE, "A"),
        tx("B", 0),
        tx("B2", 0),
        ev("sock:sk_data_ready", 0, family="2", protocol="6"),
        rx("C", 0),
        tx("D", 0),  # a new packet on CPU 0: what follows is not known as ours
        rx("E", 1),
        probe(1, OTHER, "E"),
        tx("F", 1),
        ev("sock:sk_data_ready", 1, family="2", protocol="6"),
        ev("skb:consume_skb", 0, skbaddr="B"),
    ]
    assert kept(events) == [
        ("netif_receive_skb", "A"),
        ("net_dev_queue", "B"),
        ("net_dev_queue", "B2"),
        ("sk_data_ready", ""),
        ("consume_skb", "B"),
    ]
    # another task queueing on that CPU after the flow's segment: not the flow's send
    other_task = [rx("A", 0), probe(0, MINE, "A"), {**tx("B", 0), "pid": 78}]
    assert kept(other_task) == [("netif_receive_skb", "A")]
    # a connect names the flow whose SYN follows; another socket's connect ends that
    connects = [
        ev(
            "sock:inet_sock_set_state",
            0,
            sport="40000",
            dport="5201",
            saddr="10.0.0.1",
            daddr="10.0.0.2",
            newstate="TCP_SYN_SENT",
        ),
        tx("S", 0),
        ev(
            "sock:inet_sock_set_state",
            0,
            sport="40001",
            dport="80",
            saddr="10.0.0.1",
            daddr="10.0.0.3",
            newstate="TCP_SYN_SENT",
        ),
        tx("T", 0),
    ]
    assert kept(connects) == [("net_dev_queue", "S")]


def test_without_skbaddr_in_tcp_probe_the_delivering_cpu_decides() -> None:
    """A kernel whose tcp_probe prints no skbaddr: a received skb is the flow's when the next
    TCP event on its CPU is the flow's tcp_probe (the same softirq delivered it)."""
    events = [
        rx("A", 0),
        rx("C", 1),
        probe(1, OTHER, None),
        probe(0, MINE, None),
        ev("skb:kfree_skb", 0, skbaddr="A", reason="NOT_SPECIFIED"),
        ev("skb:kfree_skb", 1, skbaddr="C", reason="NOT_SPECIFIED"),
    ]
    assert kept(events) == [("netif_receive_skb", "A"), ("kfree_skb", "A")]
    assert not select(events, FLOW).skbaddr_in_probe


def test_a_drop_is_the_flows_by_its_rx_sk() -> None:
    """kfree_skb's rx_sk (newer kernels) names the flow's socket, learnt from its tcp_probe."""
    events = [
        rx("A", 0),
        probe(0, MINE, "A"),
        rx("G", 1),
        ev("skb:kfree_skb", 1, skbaddr="G", rx_sk="s1", reason="TCP_OFOMERGE"),
        rx("H", 1),
        ev("skb:kfree_skb", 1, skbaddr="H", rx_sk="s9", reason="NO_SOCKET"),
    ]
    assert ("kfree_skb", "G") in kept(events) and ("kfree_skb", "H") not in kept(events)
    assert select(events, FLOW).by_address == 2


PATH_FMT = fmt(["__u16 x"])
TCP_FMT = fmt(["__u16 sport", "__u16 dport"])


def test_record_path_with_a_port_enables_the_tcp_events_unfiltered(tmp_path: Path) -> None:
    """The TCP events that name the flow are enabled without a kernel filter (another flow's
    tell that a CPU moved on), the path events keep the device filter only, and the output
    holds the flow's path events alone, with a note saying how they were found."""
    events = {e: PATH_FMT for e, _ in recorder.EVENTS["path"]}
    events.update({e: TCP_FMT for e in IDENTITY})
    pipe = (
        line(0, 5.0, "netif_receive_skb", "dev=eth0 skbaddr=aa len=1500")
        + line(1, 5.0001, "netif_receive_skb", "dev=eth0 skbaddr=cc len=60")
        + line(
            0,
            5.0002,
            "tcp_probe",
            "family=AF_INET src=10.0.0.1:40000 dest=10.0.0.2:5201 snd_cwnd=10 skbaddr=aa skaddr=s1",
        )
        + line(
            1,
            5.0003,
            "tcp_probe",
            "family=AF_INET src=10.0.0.1:50000 dest=10.0.0.9:22 snd_cwnd=10 skbaddr=cc skaddr=s9",
        )
        + line(0, 5.0004, "net_dev_queue", "dev=eth0 skbaddr=bb len=66")
    )
    fake = FakeRoot(tmp_path, events, pipe)
    inst = fake.tracefs().instance("stepscope-9")
    filters: dict[str, str] = {}

    def until() -> bool:
        for e in events:
            filters[e] = (inst.event_dir(e) / "filter").read_text()
        return True

    notes: list[str] = []
    try:
        got = record(inst, "path", FlowFilter(port=5201, dev="eth0"), until, Stopper(), notes)
    finally:
        inst.close()
    assert all(filters[e] == "none" for e in IDENTITY), filters
    assert [(e["event"], e["fields"]["skbaddr"]) for e in got.events] == [
        ("net:netif_receive_skb", "aa"),
        ("net:net_dev_queue", "bb"),
    ]
    assert all("cpu" not in e for e in got.events)
    assert any(n.startswith("--port/--dst: 2 of 3 packets kept (1 by skb") for n in notes), notes
