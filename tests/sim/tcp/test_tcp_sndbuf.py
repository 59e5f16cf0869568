"""The send buffer as 6.4 bounds it (app.sim.tcp.sndbuf): sk_sndbuf from tcp_wmem and
tcp_sndbuf_expand, SO_SNDBUF, the truesize every skb charges to sk_wmem_queued, a blocking
write that sleeps in sk_stream_wait_memory until sk_stream_write_space wakes it, and a
non-blocking one that returns what it copied or EAGAIN. The scripts are our own; the same
ones run on this machine's kernel (content/tcp-packetdrill-kernel-check.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.sim.tcp import sndbuf
from app.sim.tcp.driver import Sim
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import Result, run
from app.sim.tcp.params import Call, NetEvent, Sysctls, TcpParams
from app.sim.tcp.sock import SOCK_MIN_SNDBUF, WMEM_MAX, Sock, so_sndbuf
from tests.linux_v64 import require_v6_4, v6_4_file
from tests.pdscripts import NONBLOCK, RESET_AFTER_COPY, RESET_BEFORE_COPY

EXAMPLE = Path(__file__).resolve().parents[3] / "content" / "packetdrill" / "send-buffer.pkt"

# (function, file, v6.4 line, text on that line) for every line app.sim.tcp.sndbuf cites
CITED: tuple[tuple[str, str, int, str], ...] = (
    ("tcp_init_sock", "net/ipv4/tcp.c", 458, "sk->sk_sndbuf"),
    ("tcp_sndbuf_expand", "net/ipv4/tcp_input.c", 400, "static void tcp_sndbuf_expand("),
    ("tcp_init_buffer_space", "net/ipv4/tcp_input.c", 535, "static void tcp_init_buffer_space("),
    ("tcp_init_buffer_space", "net/ipv4/tcp_input.c", 541, "SOCK_SNDBUF_LOCK"),
    ("tcp_should_expand_sndbuf", "net/ipv4/tcp_input.c", 5439, "tcp_should_expand_sndbuf("),
    ("tcp_new_space", "net/ipv4/tcp_input.c", 5474, "static void tcp_new_space("),
    ("tcp_check_space", "net/ipv4/tcp_input.c", 5496, "void tcp_check_space("),
    ("tcp_data_snd_check", "net/ipv4/tcp_input.c", 5508, "tcp_data_snd_check("),
    ("tcp_tso_acked", "net/ipv4/tcp_input.c", 3196, "static u32 tcp_tso_acked("),
    ("tcp_clean_rtx_queue", "net/ipv4/tcp_input.c", 3238, "static int tcp_clean_rtx_queue("),
    ("sk_setsockopt", "net/core/sock.c", 1141, "case SO_SNDBUF:"),
    ("tcp_stream_alloc_skb", "net/ipv4/tcp.c", 861, "struct sk_buff *tcp_stream_alloc_skb("),
    ("tcp_skb_entail", "net/ipv4/tcp.c", 659, "void tcp_skb_entail("),
    ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1217, "int tcp_sendmsg_locked("),
    ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1320, "if (!sk_stream_memory_free(sk))"),
    ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1443, "wait_for_space:"),
    ("tcp_poll", "net/ipv4/tcp.c", 565, "__sk_stream_is_writeable(sk, 1)"),
    ("skb_copy_to_page_nocache", "include/net/sock.h", 2289, "sk_wmem_queued_add(sk, copy)"),
    ("__sk_stream_memory_free", "include/net/sock.h", 1382, "__sk_stream_memory_free("),
    ("__sk_stream_is_writeable", "include/net/sock.h", 1397, "__sk_stream_is_writeable("),
    ("SK_WMEM_MAX", "include/net/sock.h", 2889, "#define SK_WMEM_MAX"),
    ("TCP_SKB_MIN_TRUESIZE", "include/net/sock.h", 2540, "#define TCP_SKB_MIN_TRUESIZE"),
    ("SOCK_MIN_SNDBUF", "include/net/sock.h", 2542, "#define SOCK_MIN_SNDBUF"),
    ("tcp_stream_memory_free", "net/ipv4/tcp_ipv4.c", 3088, "bool tcp_stream_memory_free("),
    ("sk_stream_write_space", "net/core/stream.c", 30, "void sk_stream_write_space("),
    ("sk_stream_wait_memory", "net/core/stream.c", 118, "int sk_stream_wait_memory("),
    (
        "sk_stream_wait_memory",
        "net/core/stream.c",
        133,
        "if (sk->sk_err || (sk->sk_shutdown & SEND_SHUTDOWN))",
    ),
    ("sk_stream_wait_connect", "net/core/stream.c", 63, "int err = sock_error(sk);"),
    ("sk_stream_error", "net/core/stream.c", 187, "err = sock_error(sk) ? : -EPIPE;"),
    ("sock_error", "include/net/sock.h", 2476, "static inline int sock_error("),
    ("tcp_done", "net/ipv4/tcp.c", 4652, "WRITE_ONCE(sk->sk_shutdown, SHUTDOWN_MASK);"),
    ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1468, "if (copied + copied_syn)"),
    ("tcp_poll", "net/ipv4/tcp.c", 545, "if (shutdown == SHUTDOWN_MASK || state == TCP_CLOSE)"),
    ("tcp_poll", "net/ipv4/tcp.c", 594, "if (READ_ONCE(sk->sk_err) ||"),
    ("tcp_event_new_data_sent", "net/ipv4/tcp_output.c", 85, "tcp_check_space(sk);"),
    ("tcp_fragment", "net/ipv4/tcp_output.c", 1527, "int tcp_fragment("),
    ("tcp_trim_head", "net/ipv4/tcp_output.c", 1663, "int tcp_trim_head("),
    ("tso_fragment", "net/ipv4/tcp_output.c", 2121, "static int tso_fragment("),
    ("MAX_TCP_HEADER", "include/net/tcp.h", 56, "#define MAX_TCP_HEADER"),
    ("LL_MAX_HEADER", "include/linux/netdevice.h", 155, "# define LL_MAX_HEADER 128"),
    ("MAX_HEADER", "include/linux/netdevice.h", 170, "#define MAX_HEADER (LL_MAX_HEADER + 48)"),
    ("kmalloc_reserve", "net/core/skbuff.c", 566, "SKB_SMALL_HEAD_CACHE_SIZE"),
    ("SKB_TRUESIZE", "include/linux/skbuff.h", 272, "#define SKB_TRUESIZE(X)"),
)


@pytest.mark.parametrize(("func", "path", "line", "text"), CITED)
def test_the_send_buffer_cites_v6_4_lines(func: str, path: str, line: int, text: str) -> None:
    require_v6_4()
    assert text in v6_4_file(path)[line - 1], (func, path, line)


def script(body: str) -> Result:
    return run(parse(body))


def assert_passes(res: Result) -> None:
    bad = [
        (r.line, [m.render() for m in r.reasons])
        for r in res.lines
        if r.status not in ("match", "comment")
    ]
    assert res.verdict.passed, bad


def test_so_sndbuf_doubles_the_value_within_wmem_max_and_sock_min_sndbuf() -> None:
    """sk_setsockopt(SO_SNDBUF): min(val, wmem_max) * 2, at least SOCK_MIN_SNDBUF (2 *
    (2048 + the aligned struct sk_buff))."""
    assert so_sndbuf(21000) == 42000
    assert so_sndbuf(1) == SOCK_MIN_SNDBUF == 4608
    assert so_sndbuf(10 * WMEM_MAX) == 2 * WMEM_MAX == 425984


OPEN_CLIENT = """
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 getsockopt(3, SOL_SOCKET, SO_SNDBUF, [16384], [4]) = 0
   +0...0.100 connect(3, ..., ...) = 0
   +0 > S 0:0(0) <...>
  +.1 < S. 0:0(0) ack 1 win 60000 <mss {mss}>
   +0 > . 1:1(0) ack 1
   +0 getsockopt(3, SOL_SOCKET, SO_SNDBUF, [{sndbuf}], [4]) = 0
"""


@pytest.mark.parametrize(("mss", "sndbuf"), [(1460, 87040), (1000, 46080)])
def test_tcp_sndbuf_expand_at_establishment(mss: int, sndbuf: int) -> None:
    """tcp_init_sock starts at tcp_wmem[1] (16384); tcp_init_buffer_space's
    tcp_sndbuf_expand makes room for 2 * TCP_INIT_CWND skbs of roundup_pow_of_two(mss +
    MAX_TCP_HEADER + shared info) + struct sk_buff: 2 * 10 * (4096 + 256) for 1460, 2 * 10 *
    (2048 + 256) for 1000 (this machine's 6.18 kernel, whose MAX_TCP_HEADER is smaller,
    gives 46080 for both)."""
    assert_passes(script(OPEN_CLIENT.format(mss=mss, sndbuf=sndbuf)))
    wrong = script(OPEN_CLIENT.format(mss=mss, sndbuf=16384))
    assert wrong.verdict.line is not None and "value" in wrong.lines[-1].diffs


def test_so_sndbuf_locks_the_size_against_tcp_sndbuf_expand() -> None:
    body = OPEN_CLIENT.format(mss=1460, sndbuf=20000).replace(
        "[16384], [4]) = 0",
        "[16384], [4]) = 0\n+0 setsockopt(3, SOL_SOCKET, SO_SNDBUF, [10000], 4) = 0",
    )
    assert_passes(script(body))


def test_a_blocking_write_sleeps_until_an_ack_leaves_half_of_the_queue_free() -> None:
    """content/packetdrill/send-buffer.pkt: with an 8000-byte buffer and 2000-byte skbs (2896
    bytes of truesize each), the write sleeps after three skbs; the ACK that frees one leaves
    5792 queued (2208 free < 2896), the next leaves 2896 (5104 free): only then
    sk_stream_write_space wakes it. It returns at 300 ms, and not one ACK earlier."""
    text = EXAMPLE.read_text()
    assert_passes(script(text))
    early = text.replace("+0...0.200 write(3, ..., 12000)", "+0...0.150 write(3, ..., 12000)")
    res = script(early)
    line = next(r for r in res.lines if r.kind == "syscall" and r.got and r.got["call"] == "write")
    assert line.status == "mismatch" and "time" in line.diffs
    assert line.got is not None and line.got["t_ms"] == 300.0


def test_a_non_blocking_write_returns_what_it_copied_then_eagain_and_pollout_follows() -> None:
    """tcp_sendmsg_locked with no timeout: the bytes copied before the buffer filled (6000),
    then EAGAIN; tcp_poll says POLLOUT only once __sk_stream_is_writeable holds (the same
    ACK that would wake a blocking writer). The real kernel here passes it too."""
    assert_passes(script(NONBLOCK))


@pytest.mark.parametrize("body", [RESET_AFTER_COPY, RESET_BEFORE_COPY], ids=["copied", "none"])
def test_a_reset_ends_a_blocked_write_and_later_writes_get_epipe(body: str) -> None:
    """sk_stream_wait_memory (net/core/stream.c line 133) wakes on sk_err. A write that had
    copied bytes returns them (tcp_sendmsg_locked's do_error, net/ipv4/tcp.c line 1468) and
    leaves sk_err, so the next write's sk_stream_wait_connect reads it: ECONNRESET. One that
    had copied none returns the error itself (sk_stream_error's sock_error). sock_error
    clears sk_err (include/net/sock.h line 2476) and tcp_done set SHUTDOWN_MASK (net/ipv4/tcp.c
    line 4652), SEND_SHUTDOWN with it, so every write after that gets EPIPE. This machine's
    kernel answers the same (tests/kernel/test_packetdrill_kernel.py)."""
    assert_passes(script(body))
    again = body.replace(
        "-1 EPIPE (Broken pipe)\n", "-1 ECONNRESET (Connection reset by peer)\n", 1
    )
    res = script(again)
    assert not res.verdict.passed
    assert res.verdict.line == body.count("\n") - 1
    assert "EPIPE" in res.verdict.reason.render()


def _check_queues(sim: Sim, _f: dict[str, Any]) -> None:
    for ep in sim.eps.values():
        sk = ep.fd
        if not isinstance(sk, Sock):
            continue
        total = sum(t.truesize for t in sk.txq) + sum(s.truesize for s in sk.wq)
        assert sk.wmem_queued == total
        assert sk.wmem_queued >= 0
        assert all(a.end == b.seq for a, b in zip(sk.txq, sk.txq[1:], strict=False))
        if sk.txq:
            assert sk.txq[0].seq <= max(sk.snd_una, sk.iss + 1) < sk.txq[0].end


def test_wmem_queued_is_the_sum_of_every_skbs_truesize_through_loss_and_recovery() -> None:
    """Every frame of a bulk transfer with losses (SACK recovery, retransmissions that split
    skbs with tcp_fragment, partial ACKs trimmed by tcp_trim_head): sk_wmem_queued is the
    truesize of the retransmission queue's and the write queue's skbs, the retransmission
    queue's skbs are contiguous from SND.UNA, and everything is freed at the end."""
    reads = tuple(Call(t_ms=100 + 50 * k, endpoint="server", call="recv") for k in range(300))
    p = TcpParams(
        script=(
            Call(t_ms=0, endpoint="server", call="listen"),
            Call(t_ms=0, endpoint="server", call="accept"),
            Call(t_ms=0, endpoint="client", call="connect"),
            Call(t_ms=100, endpoint="client", call="send", bytes=300_000),
            *reads,
        ),
        network=(NetEvent(kind="drop", src="client", nth=12, count=3),),
        until_ms=20_000,
        sndbuf=30_000,
        sysctl=Sysctls(),
    )
    sim = Sim(p, _check_queues)
    sim.run()
    sk = sim.eps["client"].fd
    assert isinstance(sk, Sock)
    assert sk.snd_una == sk.write_seq  # all 300000 bytes arrived, through the small buffer
    assert sk.wmem_queued == 0 and not sk.txq
    assert sndbuf.SKB_BASE == 896


def test_an_unlocked_buffer_grows_with_cwnd_when_acks_free_space() -> None:
    """tcp_new_space: a writer waiting with SOCK_NOSPACE and a cwnd that is not full grows
    sk_sndbuf by tcp_sndbuf_expand (2 * cwnd skbs), up to tcp_wmem[2]."""
    p = TcpParams(
        script=(
            Call(t_ms=0, endpoint="server", call="listen"),
            Call(t_ms=0, endpoint="server", call="accept"),
            Call(t_ms=0, endpoint="client", call="connect"),
            Call(t_ms=100, endpoint="client", call="send", bytes=2_000_000),
            *(Call(t_ms=100 + 20 * k, endpoint="server", call="recv") for k in range(240)),
        ),
        until_ms=5_000,
    )
    seen: list[int] = []

    def watch(sim: Sim, _f: dict[str, Any]) -> None:
        sk = sim.eps["client"].fd
        if isinstance(sk, Sock):
            seen.append(sk.sndbuf)

    Sim(p, watch).run()
    assert seen[0] == 16384  # tcp_wmem[1] before the handshake
    assert 87040 in seen  # tcp_init_buffer_space at establishment
    assert max(seen) > 87040  # tcp_new_space as cwnd grew
    assert seen == sorted(seen)  # never shrinks
    assert max(seen) <= Sysctls().tcp_wmem[2]
