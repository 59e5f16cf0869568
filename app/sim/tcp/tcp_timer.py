"""The timers of ``net/ipv4/tcp_timer.c`` (and the request sock's and timewait sock's):
retransmission (``tcp_retransmit_timer``, ``tcp_write_timeout``, ``retransmits_timed_out``),
the tail loss probe (``tcp_send_loss_probe``, on the same timer in the kernel),
zero-window persist (``tcp_probe_timer``), delayed ACK (``tcp_delack_timer_handler``),
keepalive (``tcp_keepalive_timer``, which also times out an orphaned FIN_WAIT2), the SYN+ACK
timer (``reqsk_timer_handler``) and TIME_WAIT's end (``tw_timer_handler``). Each timer is
registered by name in the table of the object that owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import (
    calls,
    tcp_input_loss,
    tcp_ipv4,
    tcp_minisocks,
    tcp_output,
    tcp_recovery,
    tcp_sack,
)
from app.sim.tcp.sock import (
    ATO_MIN,
    RTO_INIT,
    RTO_MAX,
    RTO_MIN,
    TIMEWAIT_LEN,
    Obj,
    Req,
    Sock,
    TimeWait,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def timer_timewait(sim: Sim, tw: TimeWait) -> None:
    sim.note(
        msg("{ep}: the timewait sock expires and is freed.", ep=tw.ep.label), "tw_timer_handler"
    )
    tcp_minisocks.kill_tw(sim, tw.ep, tw, "timer")


def timer_synack(sim: Sim, req: Req) -> None:
    """reqsk_timer_handler."""
    lsn = req.listener
    max_retries = sim.p.sysctl.tcp_synack_retries
    qlen = lsn.qlen
    if qlen * 2 > max(8, lsn.backlog):
        young = sum(1 for r in lsn.reqs if r.num_timeout == 0) * 2
        while max_retries > 2:
            if qlen < young:
                break
            max_retries -= 1
            young <<= 1
    if req.num_timeout >= max_retries:
        sim.note(
            msg(
                "The SYN+ACK was retransmitted {n} times without a valid ACK: the request "
                "sock is dropped.",
                n=req.num_timeout,
            ),
            "reqsk_timer_handler",
        )
        tcp_minisocks.drop_req(sim, req, "reqsk_timer_handler")
        return
    req.num_timeout += 1
    sim.note(
        msg("The SYN+ACK timer fires ({n} of {m}).", n=req.num_timeout, m=max_retries),
        "reqsk_timer_handler",
    )
    tcp_ipv4.send_synack(sim, req, retrans=True)
    req.arm("synack", sim.now + min(RTO_INIT * 2**req.num_timeout, RTO_MAX))


def timer_delack(sim: Sim, sk: Sock) -> None:
    """tcp_delack_timer_handler: a missed delayed ACK inflates ato (ato << 1, at most the
    RTO; 0 stays 0) or, in ping-pong mode, leaves it (inet_csk_exit_pingpong_mode) and
    deflates ato to TCP_ATO_MIN."""
    if not sk.ack_sched or sk.state == "CLOSE":
        return
    if not sk.pingpong:
        sk.ato = min(sk.ato * 2, sk.rto)
    else:
        sk.pingpong = False
        sk.ato = ATO_MIN
    sim.note(msg("{ep}: the delayed-ACK timer fires.", ep=sk.ep.label), "tcp_delack_timer_handler")
    tcp_output.send_ack(sim, sk, "delayed_ack", "tcp_delack_timer_handler")


def write_err(sim: Sim, sk: Sock, event: str) -> None:
    """tcp_write_err: the connection timed out; the program sees ETIMEDOUT (if it still holds
    the socket) and the socket closes."""
    if not sk.dead:
        sk.err = "ETIMEDOUT"
    sim.set_state(sk, "CLOSE", event, "tcp_write_err")
    calls.done(sim, sk, "timeout", "tcp_write_err", already=True)


def timed_out(sim: Sim, sk: Sock, boundary: int, rto_base: float) -> bool:
    """retransmits_timed_out (net/ipv4/tcp_timer.c:209) with tcp_model_timeout: the
    TS clock (whole ms) less retrans_stamp, the SYN's send or the first retransmission."""
    if not sk.retransmits or sk.retrans_stamp is None:
        return False
    thresh = (int(RTO_MAX / rto_base)).bit_length() - 1
    if boundary <= thresh:
        timeout = ((2 << boundary) - 1) * rto_base
    else:
        timeout = ((2 << thresh) - 1) * rto_base + (boundary - thresh) * RTO_MAX
    return int(sim.now) - sk.retrans_stamp - timeout >= 0


def current_ssthresh(sk: Sock) -> int:
    """tcp_current_ssthresh (include/net/tcp.h:1260): ssthresh during a window reduction,
    else at least 3/4 of cwnd."""
    if tcp_input_loss.in_cwnd_reduction(sk):
        return sk.ssthresh
    return max(sk.ssthresh, (sk.cwnd >> 1) + (sk.cwnd >> 2))


def enter_loss(sim: Sim, sk: Sock) -> None:
    """tcp_enter_loss (net/ipv4/tcp_input.c:2137) with tcp_timeout_mark_lost (net/ipv4/tcp_input.c:2106): every segment not
    SACKed is lost, except (RACK) those sent less than the last RTT ago, the head always;
    ssthresh is recomputed unless this loss episode already did (the undo state saved then:
    prior_ssthresh, tcp_init_undo); cwnd = in flight + 1. F-RTO (tp->frto) runs when
    tcp_frto is set and no recovery was under way, or this is a repeated timeout (RFC 5682
    3.1 step 1, 3.2; path MTU probing, which also disables it, is not modelled)."""
    new_recovery = tcp_recovery.CA_ORDER[sk.ca_state] < tcp_recovery.CA_ORDER["Recovery"]
    if not sk.sack_ok:
        sk.reno_sacked = 0
    for i, o in enumerate(sk.rtx):
        if i and tcp_recovery.skb_timeout(sim, sk, o, 0) > 0:
            continue
        tcp_sack.mark_skb_lost(sk, o)
    order = tcp_recovery.CA_ORDER
    if (
        order[sk.ca_state] <= order["Disorder"]
        or sk.high_seq <= sk.snd_una
        or (sk.ca_state == "Loss" and not sk.retransmits)
    ):
        sk.prior_ssthresh = current_ssthresh(sk)
        sk.prior_cwnd = sk.cwnd
        sk.ssthresh = tcp_input_loss.cubic_ssthresh(sk)
        sk.undo_marker = sk.snd_una  # tcp_init_undo (net/ipv4/tcp_input.c:2089)
        sk.undo_retrans = tcp_sack.retrans_out(sk) or -1
    sk.cwnd = tcp_sack.packets_in_flight(sk) + 1
    sk.snd_cwnd_cnt = 0
    sk.ca_state = "Loss"
    sk.high_seq = sk.snd_nxt
    sk.frto = bool(sim.p.sysctl.tcp_frto) and (new_recovery or sk.retransmits > 0)
    if sk.frto and sk.state not in ("SYN_SENT", "SYN_RECV"):
        sim.note(
            msg(
                "tcp_enter_loss arms F-RTO (tcp_frto = {v}): the ACKs after this "
                "retransmission will tell whether the timeout was spurious.",
                v=sim.p.sysctl.tcp_frto,
            )
        )  # no source of its own: the frame keeps citing tcp_retransmit_timer


def timer_retransmit(sim: Sim, sk: Sock) -> None:
    """tcp_retransmit_timer and tcp_write_timeout."""
    if not sk.rtx or sk.state == "CLOSE":
        return
    if sk.state in ("SYN_SENT", "SYN_RECV"):
        limit = sim.p.sysctl.tcp_syn_retries
        expired = sk.retransmits >= limit or timed_out(sim, sk, limit, RTO_INIT)
    else:
        limit = sim.p.sysctl.tcp_retries2
        if sk.dead:
            limit = 8 if sk.rto < RTO_MAX else 0  # tcp_orphan_retries
        expired = timed_out(sim, sk, limit, RTO_MIN)
    if expired:
        sim.note(
            msg(
                "{ep} gives up after {n} retransmissions: the connection times out (ETIMEDOUT).",
                ep=sk.ep.label,
                n=sk.retransmits,
            ),
            "tcp_write_timeout",
        )
        write_err(sim, sk, "retransmission timeout")
        return
    sim.note(
        msg(
            "{ep}: the retransmission timer fires after {rto} ms.",
            ep=sk.ep.label,
            rto=round(sk.rtx_after or sk.rto, 3),
        ),
        "tcp_retransmit_timer",
    )
    sk.tlp_high_seq = 0
    enter_loss(sim, sk)
    sk.retransmits += 1
    head = sk.rtx[0]
    tcp_output.retransmit(sim, sk, head, "rto")
    sk.backoff += 1
    sk.rtx_after = 0.0
    sk.rto = min(sk.rto * 2, RTO_MAX)
    sk.arm("retransmit", sim.now + sk.rto)
    sim.note(
        msg("Exponential backoff: the next RTO is {rto} ms.", rto=round(sk.rto, 3)),
        "tcp_retransmit_timer",
    )


def timer_loss_probe(sim: Sim, sk: Sock) -> None:
    """tcp_retransmit_timer's ICSK_TIME_LOSS_PROBE case: tcp_send_loss_probe."""
    if not sk.rtx or sk.state == "CLOSE":
        return
    sim.note(
        msg(
            "{ep}: the loss-probe timer fires (no ACK for 2 RTTs): a tail loss probe goes out.",
            ep=sk.ep.label,
        ),
        "tcp_send_loss_probe",
    )
    tcp_output.send_loss_probe(sim, sk)


def timer_probe0(sim: Sim, sk: Sock) -> None:
    """tcp_probe_timer / tcp_send_probe0: a zero-window probe."""
    if sk.rtx or sk.state == "CLOSE":
        sk.probes_out = 0
        return
    if not sk.has_unsent():
        return
    max_probes = sim.p.sysctl.tcp_retries2
    if sk.dead:
        alive = min(sk.rto * 2**sk.backoff, RTO_MAX) < RTO_MAX
        max_probes = 8 if alive else 0
    if sk.probes_out >= max_probes:
        sim.note(
            msg("{ep}: too many unanswered window probes: ETIMEDOUT.", ep=sk.ep.label),
            "tcp_probe_timer",
        )
        write_err(sim, sk, "probe timeout")
        return
    sim.note(
        msg("{ep}: the persist timer fires; a zero-window probe goes out.", ep=sk.ep.label),
        "tcp_probe_timer",
    )
    wnd_end = sk.snd_una + sk.snd_wnd
    if sk.snd_nxt < wnd_end:
        tcp_output.push(sim, sk)
        if sk.rtx:
            sk.probes_out = 0
            sk.backoff = 0
            return
    tcp_output.xmit_probe(
        sim,
        sk,
        "probe",
        "tcp_xmit_probe_skb",
        msg(
            "{ep} sends a window probe seq={seq} (SND.UNA - 1).",
            ep=sk.ep.label,
            seq=sk.snd_una - 1,
        ),
    )
    if sk.backoff < sim.p.sysctl.tcp_retries2:
        sk.backoff += 1
    when = tcp_output.probe0_when(sk)
    sk.arm("probe0", sim.now + when)


def timer_keepalive(sim: Sim, sk: Sock) -> None:
    """tcp_keepalive_timer."""
    if not sk.keepalive or sk.state in ("CLOSE", "SYN_SENT"):
        return
    s = sim.p.sysctl
    ktime = s.tcp_keepalive_time_s * 1000
    if sk.rtx or sk.unsent():
        sk.arm("keepalive", sim.now + ktime)
        return
    elapsed = sim.now - max(sk.lrcvtime, sk.rcv_tstamp)
    if elapsed + 1e-9 >= ktime:
        if sk.probes_out >= s.tcp_keepalive_probes:
            sim.note(
                msg(
                    "{ep}: {n} keepalive probes went unanswered: RST and ETIMEDOUT.",
                    ep=sk.ep.label,
                    n=sk.probes_out,
                ),
                "tcp_keepalive_timer",
            )
            tcp_output.active_reset(sim, sk)
            write_err(sim, sk, "keepalive timeout")
            return
        sim.note(
            msg(
                "{ep}: idle for {s} s; keepalive probe {n}.",
                ep=sk.ep.label,
                s=round(elapsed / 1000, 3),
                n=sk.probes_out + 1,
            ),
            "tcp_keepalive_timer",
        )
        tcp_output.xmit_probe(
            sim,
            sk,
            "keepalive",
            "tcp_write_wakeup",
            msg(
                "{ep} sends a keepalive probe seq={seq} (SND.UNA - 1).",
                ep=sk.ep.label,
                seq=sk.snd_una - 1,
            ),
        )
        sk.arm("keepalive", sim.now + s.tcp_keepalive_intvl_s * 1000)
    else:
        sk.arm("keepalive", sim.now + ktime - elapsed)
        sim.note(
            msg(
                "{ep}: the keepalive timer fires, but the peer was heard from {s} s ago; it "
                "is re-armed.",
                ep=sk.ep.label,
                s=round(elapsed / 1000, 3),
            ),
            "tcp_keepalive_timer",
        )


def timer_fin_wait2(sim: Sim, sk: Sock) -> None:
    """The keepalive timer of an orphaned FIN_WAIT2 socket."""
    if sk.state != "FIN_WAIT2" or not sk.dead:
        return
    tmo = calls.fin_time(sim, sk) - TIMEWAIT_LEN
    if tmo > 0:
        tcp_minisocks.time_wait(sim, sk, "FIN_WAIT2", tmo)
        return
    sim.note(msg("The orphaned FIN_WAIT2 socket times out: RST."), "tcp_keepalive_timer")
    tcp_output.active_reset(sim, sk)
    calls.done(sim, sk, "fin timeout", "tcp_done")


# Each object's timers by name (the name ``Obj.arm`` was given).
def timer_reo(sim: Sim, sk: Sock) -> None:
    """tcp_retransmit_timer's ICSK_TIME_REO_TIMEOUT case: tcp_rack_reo_timeout."""
    tcp_recovery.reo_timeout(sim, sk)


SOCK_TIMERS: dict[str, Callable[[Sim, Sock], None]] = {
    "retransmit": timer_retransmit,
    "reo": timer_reo,
    "loss_probe": timer_loss_probe,
    "probe0": timer_probe0,
    "delack": timer_delack,
    "keepalive": timer_keepalive,
    "fin_wait2": timer_fin_wait2,
}
REQ_TIMERS: dict[str, Callable[[Sim, Req], None]] = {"synack": timer_synack}
TW_TIMERS: dict[str, Callable[[Sim, TimeWait], None]] = {"timewait": timer_timewait}


def fire(sim: Sim, obj: Obj, name: str) -> None:
    """Run the handler of ``obj``'s timer ``name``."""
    if isinstance(obj, Sock):
        SOCK_TIMERS[name](sim, obj)
    elif isinstance(obj, Req):
        REQ_TIMERS[name](sim, obj)
    elif isinstance(obj, TimeWait):
        TW_TIMERS[name](sim, obj)
    else:
        raise KeyError(f"{obj.kind} has no timer {name}")
