"""Two set-up lines the kernel's Nagle selftest needs: ``ethtool -K <dev> tso off gso off``
(the tun device takes MSS-sized packets: the runner stops joining the model's segments into
TSO packets, and the real-kernel runner opens its device without TSO) and TCP_NODELAY
(tp->nonagle's TCP_NAGLE_OFF: tcp_nagle_test no longer holds a small segment). Our own
scripts."""

from __future__ import annotations

from app.sim.tcp.packetdrill.ast import Shell, Unsupported
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import run, tso_on
from tests.pdscripts import CLIENT, NO_TSO, TSO


def _shell(text: str) -> Shell | Unsupported:
    ev = parse(text).events[0]
    assert isinstance(ev, Shell | Unsupported)
    return ev


def test_ethtool_tso_and_gso_are_read_other_features_are_not_supported() -> None:
    ev = _shell("`ethtool -K tun0 tso off gso off`\n")
    assert isinstance(ev, Shell) and ev.offloads == (("tso", False), ("gso", False))
    assert not tso_on(parse("`ethtool -K tun0 tso off`\n"))
    assert tso_on(parse("`ethtool -K tun0 gso off`\n"))
    bad = _shell("`ethtool -K tun0 gro off`\n")
    assert isinstance(bad, Unsupported) and bad.construct == "ethtool feature gro"
    other = _shell("`ethtool -s tun0 speed 10`\n")
    assert isinstance(other, Unsupported) and other.construct.startswith("ethtool")


def test_without_tso_each_segment_is_a_packet_and_psh_ends_each_gso_packet() -> None:
    """A 2000-byte GSO packet (two segments, PSH from __tcp_transmit_skb) reaches a tun
    device without TSO as two packets: software GSO (tcp_gso_segment) leaves PSH on the
    last. The runner compares the model's segments one by one then; with TSO it joins them."""
    off = "`ethtool -K tun0 tso off gso off`"
    assert run(parse(CLIENT.format(setup=off, nodelay=1, packets=NO_TSO))).verdict.passed
    assert run(parse(CLIENT.format(setup="", nodelay=1, packets=TSO))).verdict.passed
    joined = run(parse(CLIENT.format(setup=off, nodelay=1, packets=TSO)))
    assert not joined.verdict.passed
    first = next(r for r in joined.lines if r.status == "mismatch")
    assert first.got is not None and first.got["len"] == 1000


def test_tcp_nodelay_sends_the_small_tail_at_once_nagle_holds_it() -> None:
    """tcp_nagle_test: with TCP_NODELAY the 100-byte tail goes with the rest; without it, a
    small segment (the first write's) is still unacknowledged, so Nagle holds the tail
    (tcp_nagle_check, Minshall's rule) until an ACK."""
    assert run(parse(CLIENT.format(setup="", nodelay=1, packets=TSO))).verdict.passed
    held = run(parse(CLIENT.format(setup="", nodelay=0, packets=TSO)))
    assert not held.verdict.passed
    first = next(r for r in held.lines if r.status == "mismatch")
    assert first.expected is not None and first.expected["seq"] == 2101
