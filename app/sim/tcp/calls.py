"""The socket calls a script makes, as ``net/ipv4/tcp.c`` and its callers implement them.

``listen`` (``inet_listen``, ``inet_csk_listen_start``), ``connect`` (``__inet_stream_connect``,
``tcp_v4_connect``), ``accept`` (``inet_csk_accept``), ``send`` (``tcp_sendmsg_locked``),
``recv`` (``tcp_recvmsg_locked``, ``tcp_cleanup_rbuf``), ``shutdown`` (``inet_shutdown``,
``tcp_shutdown``) and ``close`` (``__tcp_close``, ``tcp_close_state``, ``tcp_disconnect``,
``tcp_done``; a listener's ``inet_csk_listen_stop``). A call returns its result, or ``None``
when it blocks; the driver then polls it (``POLLS``) after every step until it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import sndbuf, tcp_minisocks, tcp_output, wire
from app.sim.tcp.params import Call
from app.sim.tcp.sock import (
    ACK_PUSHED,
    ACK_PUSHED2,
    RTO_INIT,
    TCP_HEADER,
    TIMEWAIT_LEN,
    TW_ISN_GAP,
    Endpoint,
    Listener,
    Seg,
    Skb,
    Sock,
    TimeWait,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim

# tcp.c new_state[]: the state close()/shutdown(SHUT_WR) moves to, and whether a FIN is sent
CLOSE_TABLE: dict[str, tuple[str, bool]] = {
    "ESTABLISHED": ("FIN_WAIT1", True),
    "SYN_SENT": ("CLOSE", False),
    "SYN_RECV": ("FIN_WAIT1", True),
    "FIN_WAIT1": ("FIN_WAIT1", False),
    "FIN_WAIT2": ("FIN_WAIT2", False),
    "TIME_WAIT": ("CLOSE", False),
    "CLOSE": ("CLOSE", False),
    "CLOSE_WAIT": ("LAST_ACK", True),
    "LAST_ACK": ("LAST_ACK", False),
    "LISTEN": ("CLOSE", False),
    "CLOSING": ("CLOSING", False),
}
NEED_RESET = frozenset(("ESTABLISHED", "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2", "SYN_RECV"))


def call_listen(sim: Sim, ep: Endpoint, c: Call) -> str:
    sim.note(msg("{ep} calls listen().", ep=ep.label), "inet_listen")
    if ep.listener is not None:
        return "0"
    if ep.fd is not None:
        sim.note(msg("The socket is connected: listen() fails with EINVAL."))
        return "EINVAL"
    backlog = min(c.backlog if c.backlog is not None else 4096, 4096)
    lsn = Listener(sim, ep, backlog, c.queued, c.half_open)
    ep.listener = lsn
    lsn.state = "CLOSE"
    sim.set_state(lsn, "LISTEN", "listen()", "inet_csk_listen_start")
    sim.note(
        msg("The socket enters LISTEN with backlog {b} (sk_max_ack_backlog).", b=backlog),
        "inet_csk_listen_start",
    )
    if c.queued or c.half_open:
        sim.note(
            msg(
                "Other clients already fill the queues: {a} connections wait for accept(), "
                "{s} half-open requests sit in the SYN queue.",
                a=c.queued,
                s=c.half_open,
            )
        )
    return "0"


def take_over_tw(sim: Sim, ep: Endpoint, tw: TimeWait) -> int:
    """__inet_check_established → tcp_twsk_unique for a connect() from the bound port (no twp):
    with timestamps the timewait sock saw a TSval (tw_ts_recent_stamp), PAWS guards the new
    connection, so connect() takes the 4-tuple over at once with write_seq = tw_snd_nxt +
    65535 + 2 and the timewait sock is freed; without timestamps it fails (EADDRNOTAVAIL).
    Returns the new ISN, or 0 when the 4-tuple stays taken."""
    if not sim.p.sysctl.tcp_timestamps:
        sim.note(
            msg(
                "The old connection is still in TIME_WAIT here and used no timestamps: "
                "tcp_twsk_unique refuses it, connect() fails with EADDRNOTAVAIL."
            ),
            "tcp_v4_connect",
        )
        return 0
    isn = (tw.snd_nxt + TW_ISN_GAP) % 2**32 or 1
    sim.note(
        msg(
            "The old connection is in TIME_WAIT, but it used timestamps: tcp_twsk_unique lets "
            "connect() take over its addresses and ports at once, with ISS = the timewait "
            "sock's SND.NXT + 65537 = {isn}; the timewait sock is freed.",
            isn=isn,
        ),
        "tcp_v4_connect",
    )
    tcp_minisocks.kill_tw(sim, ep, tw, "connect()")
    return isn


def call_connect(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sim.note(msg("{ep} calls connect().", ep=ep.label), "__inet_stream_connect")
    sk = ep.fd
    if ep.listener is not None and sk is None:
        return "EISCONN"
    if sk is not None and sk.state in ("SYN_SENT", "SYN_RECV") and sk.nonblock:
        sim.note(msg("A connect() is already in progress: EALREADY."))
        return "EALREADY"
    if sk is not None and (sk.state != "CLOSE" or sk.ever_connected):
        sim.note(msg("The socket is already connected: EISCONN."))
        return "EISCONN"
    tw_isn = 0
    tw_ts: int | None = None
    if isinstance(ep.ehash, TimeWait):
        tw = ep.ehash
        tw_isn = take_over_tw(sim, ep, tw)
        if not tw_isn:
            return "EADDRNOTAVAIL"
        tw_ts = tw.ts_recent if tw.ts_ok else None  # tcp_twsk_unique copies tw_ts_recent
    if sk is None:
        sk = Sock(sim, ep)
        ep.fd = sk
    sk.keepalive = c.keepalive
    sk.nodelay = c.nodelay
    sk.nonblock = c.nonblock
    sk.iss = tw_isn or ep.next_iss()
    sk.snd_una = sk.iss
    sk.snd_nxt = sk.iss
    sk.write_seq = sk.pushed_seq = sk.iss + 1
    sk.rto = RTO_INIT
    sk.err = None
    ep.ehash = sk
    sim.set_state(sk, "SYN_SENT", "connect()", "tcp_v4_connect")
    sim.note(msg("The socket moves to SYN_SENT and picks ISS {iss}.", iss=sk.iss), "tcp_v4_connect")
    tcp_output.connect_init(sim, sk, tw_ts)
    tcp_output.send_syn(sim, sk, retrans=False)
    if c.nonblock:
        return "EINPROGRESS"
    return None


def poll_connect(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sk = ep.fd
    if sk is None:
        return "EBADF"
    if sk.state in ("SYN_SENT", "SYN_RECV"):
        return None
    if sk.state == "CLOSE" or sk.err is not None and not sk.ever_connected:
        err = sk.err or "ECONNRESET"
        sk.err = None
        return err
    return "0"


def call_accept(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sim.note(msg("{ep} calls accept().", ep=ep.label), "inet_csk_accept")
    lsn = ep.listener
    if lsn is None:
        sim.note(msg("The socket is not listening: EINVAL."))
        return "EINVAL"
    return poll_accept(sim, ep, c)


def poll_accept(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    lsn = ep.listener
    if lsn is None:
        return "EINVAL"
    if lsn.phantom_accept:
        lsn.phantom_accept -= 1
        sim.note(
            msg(
                "accept() takes another client's connection off the queue ({n} left).",
                n=lsn.ack_backlog,
            ),
            "inet_csk_accept",
        )
        return "0"
    if not lsn.accept_q:
        return None
    child = lsn.accept_q.pop(0)
    child.held = True
    child.keepalive = c.keepalive
    child.nodelay = c.nodelay  # sk_clone_lock copies the listener's tp->nonagle
    ep.fd = child
    sim.note(
        msg("accept() returns the child socket, now {st}.", st="TCP_" + child.state),
        "inet_csk_accept",
    )
    if c.keepalive and child.state == "ESTABLISHED":
        arm_keepalive(sim, child)
    return "0"


def call_send(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sk = ep.fd
    n = c.bytes or 0
    sim.note(msg("{ep} calls send({n}).", ep=ep.label, n=n), "tcp_sendmsg_locked")
    if sk is None:
        sim.note(msg("The socket is not connected: EPIPE (sk_stream_wait_connect)."))
        return "EPIPE"
    if sk.err is not None:
        err, sk.err = sk.err, None
        return err
    if sk.snd_shut or sk.state in ("CLOSE", "LISTEN") or sk.fin_queued:
        sim.note(msg("Sending is shut down or the connection is gone: EPIPE."))
        return "EPIPE"
    if sk.state in ("SYN_SENT", "SYN_RECV"):
        if sk.nonblock or c.nonblock:
            return "EAGAIN"
    ep.send_total = n
    ep.send_left = sendmsg(sim, sk, n)
    if ep.send_left:
        return send_wait(sim, ep, sk, c)
    sim.note(msg("{n} bytes join the send queue.", n=n), "tcp_sendmsg_locked")
    return str(n)


def send_wait(sim: Sim, ep: Endpoint, sk: Sock, c: Call) -> str | None:
    """tcp_sendmsg_locked's wait_for_space: sk_stream_wait_memory (net/core/stream.c line
    118) sleeps until the writer is woken with memory free; non-blocking, it returns the
    bytes copied so far, or EAGAIN when there are none (do_eagain; SOCK_NOSPACE stays set)."""
    copied = ep.send_total - ep.send_left
    if c.nonblock:
        ep.send_left = 0
        sim.note(
            msg(
                "The send buffer is full ({q} of {b} bytes queued) and the socket is "
                "non-blocking: send() returns the {n} bytes it copied.",
                q=sk.wmem_queued,
                b=sk.sndbuf,
                n=copied,
            ),
            "sk_stream_wait_memory",
        )
        return str(copied) if copied else "EAGAIN"
    sim.note(
        msg(
            "The send buffer is full ({q} of {b} bytes queued, {n} bytes copied): the "
            "writer sleeps until ACKs free space.",
            q=sk.wmem_queued,
            b=sk.sndbuf,
            n=copied,
        ),
        "sk_stream_wait_memory",
    )
    return None


def poll_send(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    """A writer sleeping in sk_stream_wait_memory: an error or a send shutdown ends the
    wait (do_error: the bytes copied so far, else the error); else, once
    sk_stream_write_space woke it and memory is free, it copies on (tcp_sendmsg_locked)."""
    sk = ep.fd
    copied = ep.send_total - ep.send_left
    if sk is None or sk.err is not None or sk.snd_shut:
        ep.send_left = 0
        if copied:
            return str(copied)
        if sk is not None and sk.err is not None:
            err, sk.err = sk.err, None
            return err
        return "EPIPE"
    if not sk.write_wake:
        return None
    sk.write_wake = False
    if not sndbuf.memory_free(sim, sk):
        sk.nospace = True
        return None
    ep.send_left = sendmsg(sim, sk, ep.send_left, copied)
    if ep.send_left:
        return send_wait(sim, ep, sk, c)
    return str(ep.send_total)


def size_goal(sk: Sock, mss: int) -> int:
    """tcp_xmit_size_goal (net/ipv4/tcp.c line 891): an skb grows to sk_gso_max_size cut to
    half the largest window the peer offered (tcp_bound_to_half_wnd, include/net/tcp.h line
    655), in whole MSS (tp->gso_segs)."""
    goal = tcp_output.GSO_MAX_SIZE
    cutoff = sk.max_window >> 1 if sk.max_window > 536 else sk.max_window  # TCP_MSS_DEFAULT
    if cutoff and goal > cutoff:
        goal = max(cutoff, 68 - TCP_HEADER)
    if goal < sk.gso_segs * mss or goal >= sk.gso_segs * mss + mss:
        sk.gso_segs = min(goal // mss, tcp_output.GSO_MAX_SEGS)
    return max(sk.gso_segs * mss, mss)


def mark_push(sk: Sock, skb: Skb) -> None:
    """tcp_mark_push (net/ipv4/tcp.c line 648): PSH on the skb; pushed_seq = write_seq."""
    skb.psh = True
    sk.pushed_seq = sk.write_seq


def sendmsg(sim: Sim, sk: Sock, n: int, copied: int = 0) -> int:
    """tcp_sendmsg_locked's copy loop (net/ipv4/tcp.c line 1217): the bytes fill the write
    queue's unsent tail skb, then new skbs, each up to the size goal. A new skb needs
    sk_stream_memory_free (line 1320; app.sim.tcp.sndbuf); else the loop goes to
    wait_for_space (line 1443): SOCK_NOSPACE, and what was copied is pushed (tcp_push with
    TCP_NAGLE_PUSH). The first byte copied clears PSH from the skb it lands in. When an skb
    fills and more is to come: past half the largest window since the last push (forced_push,
    line 654) the skb is marked PSH and everything pending is pushed
    (__tcp_push_pending_frames); else, if it is the send head, it goes alone (tcp_push_one).
    At the end tcp_push (line 702) marks the tail PSH and pushes. (tcp_should_autocork is
    left out: it waits for a TX completion the model has no queue for.) ``copied``: bytes
    this call copied before it slept. Returns the bytes not copied (0: all)."""
    goal = size_goal(sk, sk.mss_cache)
    established = sk.state not in ("SYN_SENT", "SYN_RECV")
    while n > 0:
        start = sk.wq[-2].end if len(sk.wq) > 1 else max(sk.snd_nxt, sk.iss + 1)
        if not sk.wq or sk.wq[-1].end - start >= goal:
            if not sndbuf.memory_free(sim, sk):
                sk.nospace = True  # wait_for_space
                if copied and sk.wq:
                    mark_push(sk, sk.wq[-1])
                    if established:
                        tcp_output.push(sim, sk, force=True)
                sk.nospace = True  # sk_stream_wait_memory sets it again before it sleeps
                sk.write_wake = False
                return n
            if not sk.wq and established:  # tcp_skb_entail
                tcp_output.slow_start_after_idle_check(sim, sk)
            sk.wq.append(sndbuf.entail(sk))
            start = sk.data_end
        skb = sk.wq[-1]
        if not copied:
            skb.psh = False
        copy = min(goal - (skb.end - start), n)
        skb.end += copy
        sndbuf.charge(sk, skb, copy)
        sk.write_seq += copy
        copied += copy
        n -= copy
        if n == 0 or not established:
            continue
        if sk.write_seq - sk.pushed_seq > sk.max_window >> 1:  # forced_push
            mark_push(sk, skb)
            tcp_output.push(sim, sk, force=True)
        elif skb is sk.wq[0]:
            tcp_output.push(sim, sk, one=True, force=True)
    if sk.wq:
        mark_push(sk, sk.wq[-1])
    if established:
        tcp_output.push(sim, sk)
    return 0


def call_recv(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sim.note(msg("{ep} calls recv().", ep=ep.label), "tcp_recvmsg_locked")
    if ep.fd is None:
        return "ENOTCONN"
    return poll_recv(sim, ep, c)


def poll_recv(sim: Sim, ep: Endpoint, c: Call) -> str | None:
    sk = ep.fd
    if sk is None:
        return "ENOTCONN"
    if sk.recv_q > 0:
        n = sk.recv_q if c.bytes is None else min(c.bytes, sk.recv_q)
        before = sk.receive_window()
        sk.recv_q -= n
        sim.note(msg("recv() copies {n} bytes to the program.", n=n), "tcp_recvmsg_locked")
        cleanup_rbuf(sim, sk, before, n)
        return str(n)
    if sk.sock_done:
        sim.note(msg("The peer's FIN was read up to: recv() returns 0 (EOF)."))
        return "0"
    if sk.err is not None:
        err, sk.err = sk.err, None
        return err
    if sk.rcv_shut:
        sim.note(msg("No data and the receive side is shut down: recv() returns 0 (EOF)."))
        return "0"
    if sk.state == "CLOSE":
        return "ENOTCONN"
    if sk.state in ("SYN_SENT",) and sk.nonblock:
        return "EAGAIN"
    return None


def cleanup_rbuf(sim: Sim, sk: Sock, before: int, copied: int = 0) -> None:
    """tcp_cleanup_rbuf: after reading, an ACK that is scheduled goes now when more than
    rcv_mss is unacknowledged, or when this read emptied the queue and a small segment was
    received (ICSK_ACK_PUSHED2, or ICSK_ACK_PUSHED outside ping-pong mode, set by
    tcp_measure_rcv_mss); else a window update if the window at least doubled (and the old
    one was at most half the buffer)."""
    if sk.state in ("CLOSE", "SYN_SENT", "LISTEN"):
        return
    pushed = sk.ack_pushed & ACK_PUSHED2 or (sk.ack_pushed & ACK_PUSHED and not sk.pingpong)
    if sk.ack_sched and sk.rcv_nxt - sk.rcv_wup > sk.rcv_mss:
        why = msg("More than a segment is unacknowledged after the read: the ACK goes now.")
    elif sk.ack_sched and copied > 0 and pushed and sk.recv_q == 0:
        why = msg("The program read everything after a small segment: the delayed ACK goes now.")
    else:
        why = None
    if why is not None:
        sim.note(why, "tcp_cleanup_rbuf")
        tcp_output.send_ack(sim, sk, "ack", "tcp_cleanup_rbuf")
        return
    if sk.rcv_shut:
        return
    new = wire.raw_select_window(sim, sk)
    if 2 * before <= sk.window_clamp and new and new >= 2 * before:
        sim.note(
            msg(
                "The window reopens from {a} to {b} bytes: a window update goes out.",
                a=before,
                b=new,
            ),
            "tcp_cleanup_rbuf",
        )
        tcp_output.send_ack(sim, sk, "window_update", "tcp_cleanup_rbuf")


def call_shutdown(sim: Sim, ep: Endpoint, c: Call) -> str:
    sk = ep.fd
    how = c.how or "SHUT_WR"
    sim.note(msg("{ep} calls shutdown({how}).", ep=ep.label, how=how), "inet_shutdown")
    if sk is None:
        if ep.listener is not None:
            if how != "SHUT_WR":  # inet_shutdown: a listener disconnects on SHUT_RD
                close_listener(sim, ep)
            return "0"
        return "ENOTCONN"
    if sk.state == "CLOSE":
        return "ENOTCONN"
    if how in ("SHUT_RD", "SHUT_RDWR"):
        sk.rcv_shut = True
    if sk.state == "SYN_SENT":
        disconnect(sim, sk, "shutdown()")
        return "0"
    if how in ("SHUT_WR", "SHUT_RDWR"):
        tcp_shutdown(sim, sk)
    return "0"


def tcp_shutdown(sim: Sim, sk: Sock) -> None:
    if sk.state in ("ESTABLISHED", "SYN_SENT", "SYN_RECV", "CLOSE_WAIT"):
        close_state(sim, sk, "shutdown(SHUT_WR)", "tcp_shutdown")
    sk.snd_shut = True


def close_state(sim: Sim, sk: Sock, event: str, func: str) -> bool:
    new, fin = CLOSE_TABLE[sk.state]
    old = sk.state
    sim.set_state(sk, new, event, func)
    if new == "CLOSE":
        done(sim, sk, event, func, already=True)
    if fin:
        sim.note(
            msg(
                "tcp_close_state: {a} becomes {b} as soon as the FIN is queued, before it "
                "is sent (Linux; RFC 9293 changes state when the FIN is sent).",
                a="TCP_" + old,
                b="TCP_" + new,
            ),
            "tcp_close_state",
        )
        tcp_output.send_fin(sim, sk)
    return fin


def call_close(sim: Sim, ep: Endpoint, c: Call) -> str:
    return close(sim, ep, abort=False)


def call_abort(sim: Sim, ep: Endpoint, c: Call) -> str:
    return close(sim, ep, abort=True)


def close(sim: Sim, ep: Endpoint, abort: bool) -> str:
    if abort:
        sim.note(msg("{ep} sets SO_LINGER to 0 and calls close().", ep=ep.label), "__tcp_close")
    else:
        sim.note(msg("{ep} calls close().", ep=ep.label), "__tcp_close")
    sk = ep.fd
    if sk is None:
        if ep.listener is not None:
            close_listener(sim, ep)
            return "0"
        return "EBADF"
    ep.fd = None
    sk.held = False
    sk.rcv_shut = True
    sk.snd_shut = True
    unread = sk.recv_q
    sk.recv_q = 0
    sk.ooo = []
    if sk.state == "CLOSE":
        sim.note(msg("The socket was already closed; the descriptor is released."))
        return "0"
    sk.dead = True
    if unread:
        sim.note(
            msg(
                "{n} bytes were never read: Linux sends RST instead of FIN (RFC 2525 2.17).",
                n=unread,
            ),
            "__tcp_close",
        )
        sim.set_state(sk, "CLOSE", "close() with unread data", "__tcp_close")
        tcp_output.active_reset(sim, sk)
        done(sim, sk, "close()", "__tcp_close", already=True)
        return "0"
    if abort:
        disconnect(sim, sk, "close() with SO_LINGER 0")
        return "0"
    close_state(sim, sk, "close()", "__tcp_close")
    if sk.state == "FIN_WAIT2":
        orphan_fin_wait2(sim, sk, None)
    return "0"


def close_listener(sim: Sim, ep: Endpoint) -> None:
    lsn = ep.listener
    if lsn is None:
        return
    sim.set_state(lsn, "CLOSE", "close()", "__tcp_close")
    lsn.stop_all()
    for r in lsn.reqs:
        r.stop_all()
        if ep.ehash is r:
            ep.ehash = None
    lsn.reqs = []
    for child in lsn.accept_q:
        sim.note(
            msg("The listener closes: a child nobody accepted is reset."),
            "inet_child_forget",
        )
        child.held = False
        child.dead = True
        disconnect(sim, child, "listener closed")
    lsn.accept_q = []
    ep.listener = None


def disconnect(sim: Sim, sk: Sock, event: str) -> None:
    """tcp_disconnect: RST in the states that need one, then CLOSE."""
    old = sk.state
    if old in NEED_RESET or (old in ("CLOSING", "LAST_ACK") and sk.snd_nxt != sk.write_seq):
        sim.note(
            msg("tcp_disconnect from {st}: a RST aborts the connection.", st="TCP_" + old),
            "tcp_disconnect",
        )
        tcp_output.active_reset(sim, sk)
    sim.set_state(sk, "CLOSE", event, "tcp_disconnect")
    done(sim, sk, event, "tcp_disconnect", already=True)


def done(sim: Sim, sk: Sock, event: str, func: str, already: bool = False) -> None:
    """tcp_done: CLOSE, stop the timers, drop the queues, unhash."""
    if not already:
        sim.set_state(sk, "CLOSE", event, "tcp_done")
    sk.stop_all()
    sk.rtx = []
    sndbuf.purge(sk)
    sk.rcv_shut = True
    sk.snd_shut = True
    if sk.ep.ehash is sk:
        sk.ep.ehash = None
    lsn = sk.listener
    if lsn is not None and sk in lsn.accept_q and sk.dead:
        lsn.accept_q.remove(sk)


def fin_time(sim: Sim, sk: Sock) -> float:
    """tcp_fin_time: tcp_fin_timeout, at least 3.5 RTO."""
    t = sim.p.sysctl.tcp_fin_timeout_s * 1000
    return max(t, sk.rto * 3.5)


def orphan_fin_wait2(sim: Sim, sk: Sock, seg: Seg | None) -> bool:
    """An orphaned FIN_WAIT2 socket: a timewait sock (substate FIN_WAIT2) now, or the
    keepalive timer first when tcp_fin_time exceeds TCP_TIMEWAIT_LEN. True if it left."""
    tmo = fin_time(sim, sk)
    if tmo > TIMEWAIT_LEN:
        sk.arm("fin_wait2", sim.now + tmo - TIMEWAIT_LEN)
        return False
    if seg is not None and seg.fin:
        sk.arm("fin_wait2", sim.now + tmo)
        return False
    tcp_minisocks.time_wait(sim, sk, "FIN_WAIT2", tmo)
    return True


def arm_keepalive(sim: Sim, sk: Sock) -> None:
    if sk.keepalive:
        sk.arm("keepalive", sim.now + sim.p.sysctl.tcp_keepalive_time_s * 1000)


CallHandler = Callable[["Sim", Endpoint, Call], "str | None"]
"""A socket call: its result (``"0"``, a byte count or an errno name), or ``None`` if it blocks."""

CALLS: dict[str, CallHandler] = {
    "listen": call_listen,
    "connect": call_connect,
    "accept": call_accept,
    "send": call_send,
    "recv": call_recv,
    "shutdown": call_shutdown,
    "close": call_close,
    "abort": call_abort,
}
# The calls that can block (return None), polled after every step until they return ...
POLLS: dict[str, CallHandler] = {
    "connect": poll_connect,
    "accept": poll_accept,
    "recv": poll_recv,
    "send": poll_send,
}
# ... and the function each returns from.
RETURNS_FROM: dict[str, str] = {
    "connect": "__inet_stream_connect",
    "accept": "inet_csk_accept",
    "recv": "tcp_recvmsg_locked",
    "send": "tcp_sendmsg_locked",
}
