"""ECN end to end (RFC 3168 as Linux 6.4 does it): the RED queue marks, the receiver echoes,
the sender enters CWR.

* Negotiation: a sender with ``net.ipv4.tcp_ecn = 1`` sends an ECN-setup SYN (ECE + CWR,
  ``tcp_ecn_send_syn``); the receiver's default ``tcp_ecn = 2`` accepts it, so the flow has
  TCP_ECN_OK. With the default 2 on the sender nothing is asked and nothing is marked.
* Sender (``tcp_ecn_send``, tcp_output.c:363): new data segments are ECT(0); retransmissions
  and pure ACKs are not ECN-capable, so RED drops them where it would mark. After a reduction
  (``tcp_init_cwnd_reduction`` / ``tcp_enter_loss`` queue it) the next new segment carries CWR.
* Queue (:mod:`~app.sim.congestion.red`): with ``aqm = "red-ecn"``, an ECT packet RED picks is
  marked CE and queued instead of dropped.
* Receiver: ``tcp_ack`` first accepts CWR (``tcp_ecn_accept_cwr``, tcp_input.c:319: stop
  echoing, ACK at once), then ``tcp_event_data_recv`` / ``tcp_data_queue_ofo`` check the IP
  ECN field (``__tcp_ecn_check_ce``, :338): the first CE sets TCP_ECN_DEMAND_CWR and quick-ACK
  mode for 2 ACKs; a non-ECT segment after ECT ones (a retransmission) also gets quick ACKs.
  Every ACK sent while TCP_ECN_DEMAND_CWR is set has ECE (``tcp_ecn_send``).
* Sender on an ACK with ECE (``tcp_ecn_rcv_ecn_echo``, :388, gives FLAG_ECE): in Open or
  Disorder with no loss to recover, ``tcp_fastretrans_alert`` → ``tcp_try_to_open`` (:2695)
  → ``tcp_enter_cwr`` (:2668): ``tcp_init_cwnd_reduction`` (ssthresh from the algorithm's
  ``ssthresh`` hook, high_seq = snd_nxt, PRR counters reset, CWR queued) and state CWR.
  ``tcp_cong_control`` then runs PRR (``tcp_cwnd_reduction``) while in CWR, exactly as in
  Recovery but without retransmitting anything. CWR ends once an ACK goes *beyond* high_seq
  (so the CWR flag has reached the receiver): ``tcp_end_cwnd_reduction`` (:2651) sets
  cwnd = ssthresh and the state returns to Open. A loss found during CWR enters Recovery
  without a second reduction (``tcp_enter_recovery``, :2801, asks ``tcp_in_cwnd_reduction``).
* BBR: ``tcp_cong_control`` hands the ACK to ``bbr_main`` and returns, so PRR never runs, and
  ``tcp_end_cwnd_reduction`` returns at once for an ops table with ``cong_control``. BBR's
  ``ssthresh`` hook only saves cwnd and BBR's cwnd logic reacts to Recovery and Loss, not CWR:
  the flow enters CWR (it shows in ``ca_state``) but its cwnd and pacing ignore the marks.

The ACK carries ECE as a high bit of its SACK count (:data:`ECE_BIT`), so the engine's fast
path for plain in-order ACKs, which requires a count of 0, never sees an echo.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from app.sim.congestion.flow import CA_CWR, CA_DISORDER, CA_RECOVERY, Flow, ss_or_none
from app.sim.congestion.red import DROP, MARK, Red
from app.sim.core.i18n import msg

if TYPE_CHECKING:
    from app.sim.congestion.receiver import Receiver
    from app.sim.congestion.recovery import Recovery

ECE_BIT: Final = 1 << 30  # set in an ACK's SACK count when the ACK has ECE
# A data segment's ECN bits as the RED path hands them to the receiver: the IP field's ECT(0)
# and CE, and the TCP header's CWR flag
ECT: Final = 1
CE: Final = 2
CWR: Final = 4


def transmit(eng: Receiver, red: Red, f: Flow, seq: int, now: float, retrans: bool) -> None:
    """One segment into a RED bottleneck, then (if it gets through) into the receiver.

    The link's steps as :meth:`~app.sim.congestion.link.Link.enqueue`, plus the IP ECN field:
    ECT on new data of an ECN flow, CE when RED marks it, and the CWR flag on the first new
    segment after a reduction; the receiver (:meth:`~app.sim.congestion.receiver.Receiver.rcv_data`)
    gets those bits."""
    pkt = (seq, now, retrans, f.delivered, f.delivered_mstamp, f.first_tx_mstamp, f.app_limited)
    ect = f.ecn_ok and not retrans
    bits = ECT if ect else 0
    if ect and f.ecn_queue_cwr:  # tcp_ecn_send: the flag goes out on this segment
        f.ecn_queue_cwr = False
        bits |= CWR
    if eng.loss_rate and eng.rng.random() < eng.loss_rate:
        eng.random_drops += 1
        f.drops += 1
        f.undetected.append(pkt)
        return
    tx = eng.tx
    backlog = eng.last_dep - now
    if backlog > 0:
        waiting = max(0, math.ceil(backlog / tx - 1e-6) - 1)
        idle = 0.0
    else:
        waiting = 0
        idle = -backlog / tx if eng.last_dep > 0 else 0.0
    act = red.enqueue(waiting, idle, ect)
    if act == DROP or backlog > eng.limit_time:  # RED's drop, or the FIFO's hard limit
        eng.tail_drops += 1
        f.drops += 1
        f.undetected.append(pkt)
        return
    if act == MARK:
        eng.ce_marks += 1
        bits |= CE
    dep = (eng.last_dep if backlog > 0 else now) + tx
    eng.last_dep = dep
    eng.accepted += 1
    eng.rcv_data(f, [(dep + f.owd, pkt)], bits)


def data_ecn(f: Flow, bits: int, seq: int, nxt: int) -> bool:
    """The receiver's ECN steps for one arriving segment: ``tcp_ecn_accept_cwr`` (tcp_ack runs
    it first: CWR stops the echo and asks for an ACK at once, ICSK_ACK_NOW, the result), then
    ``__tcp_ecn_check_ce`` for new in-order or out-of-order data (``bits``: :data:`ECT`,
    :data:`CE`, :data:`CWR`)."""
    now_ack = False
    if bits & CWR:
        f.ecn_demand_cwr = False
        now_ack = True  # ICSK_ACK_NOW
    if f.ecn_ok and seq >= nxt:  # tcp_ecn_check_ce, for new in-order or out-of-order data
        if bits & CE:
            f.ce_marks += 1
            if not f.ecn_demand_cwr:
                f.quick = max(f.quick, 2)  # tcp_enter_quickack_mode(sk, 2)
                f.ecn_demand_cwr = True
            f.ecn_seen = True
        elif not bits & ECT:
            if f.ecn_seen:
                f.quick = max(f.quick, 2)
        else:
            f.ecn_seen = True
    return now_ack


def send_new(eng: Receiver, red: Red, f: Flow, n: int, now: float) -> None:
    """:meth:`~app.sim.congestion.sender.Sender.send_new` through a RED queue: one :func:`transmit` per segment."""
    seq0 = f.snd_nxt
    f.snd_nxt = seq0 + n
    for seq in range(seq0, seq0 + n):
        transmit(eng, red, f, seq, now, False)


def alert(eng: Recovery, f: Flow, now: float, ece: bool) -> None:
    """tcp_fastretrans_alert (tcp_input.c:2953) for an ACK with ECE or a flow in CWR.

    D: CWR ends once snd_una is beyond high_seq. E: in CWR a loss enters Recovery (without a
    second reduction); otherwise the usual Recovery/Loss/Open handling, and then, in Open or
    Disorder, tcp_try_to_open enters CWR on ECE."""
    if f.ca_state == CA_CWR and f.snd_una > f.high_seq:
        end_cwr(f, now, eng)
    if f.ca_state == CA_CWR:
        if f.holes:
            eng.enter_recovery(f, now)
        return
    eng.ca_state_machine(f, now)
    if ece and f.ca_state <= CA_DISORDER:
        enter_cwr(eng, f, now)


def enter_cwr(eng: Recovery, f: Flow, now: float) -> None:
    """tcp_enter_cwr (tcp_input.c:2668) with tcp_init_cwnd_reduction (:2611)."""
    cwnd = f.cwnd
    f.high_seq = f.snd_nxt
    f.tlp_high_seq = 0
    f.snd_cwnd_cnt = 0
    f.prior_cwnd = cwnd
    f.prr_delivered = 0
    f.prr_out = 0
    f.ssthresh = f.ca.ssthresh(f, now)
    f.undo_marker = False  # tcp_init_cwnd_reduction: this reduction is never undone
    f.prior_ssthresh = 0
    f.ecn_queue_cwr = f.ecn_ok  # tcp_ecn_queue_cwr
    eng.set_ca_state(f, CA_CWR, now)
    f.cwr_entries += 1
    nums: dict[str, Any] = {
        "cwnd": cwnd,
        "ssthresh": f.ssthresh,
        "high_seq": f.high_seq,
        "marks": f.ce_marks,
    }
    if f.cong_control is not None:
        text = msg(
            "an ACK with ECE: the receiver saw a CE mark, so tcp_enter_cwr puts the flow in "
            "CWR until segment {high_seq} is ACKed. For BBR this changes nothing: "
            "tcp_cong_control hands every ACK to bbr_main, which ignores ECN, and BBR's "
            "ssthresh hook only remembers cwnd {cwnd}",
            **nums,
        )
    else:
        text = msg(
            "an ACK with ECE: the receiver saw a CE mark (congestion without a loss), so "
            "tcp_enter_cwr reduces as for a loss but retransmits nothing: cwnd {cwnd}, ssthresh "
            "{ssthresh} from the algorithm's ssthresh hook, and PRR walks cwnd down over one "
            "round trip in state CWR until segment {high_seq} is ACKed; the next new segment "
            "carries CWR so the receiver stops echoing",
            **nums,
        )
    f.event(
        "cwr",
        now,
        {"cwnd": cwnd, "ssthresh": ss_or_none(f), "high_seq": f.high_seq, "ce_marks": f.ce_marks},
        text,
    )


def end_cwr(f: Flow, now: float, eng: Recovery) -> None:
    """tcp_end_cwnd_reduction (tcp_input.c:2651), then state Open: cwnd = ssthresh, unless
    the ops table has cong_control (BBR keeps its own cwnd)."""
    before = eng.end_cwnd_reduction(f, now)
    f.event(
        "cwr_exit",
        now,
        {"cwnd": f.cwnd, "ssthresh": ss_or_none(f), "cwnd_before": before},
        (
            msg(
                "CWR ends: an ACK beyond segment {high_seq} shows the CWR flag has arrived; BBR "
                "keeps its cwnd {cwnd}",
                high_seq=f.high_seq,
                cwnd=f.cwnd,
            )
            if f.cong_control is not None
            else msg(
                "CWR ends: an ACK beyond segment {high_seq} shows the CWR flag has arrived; "
                "cwnd = ssthresh = {cwnd} (PRR had it at {before})",
                high_seq=f.high_seq,
                cwnd=f.cwnd,
                before=before,
            )
        ),
    )


def recovery_from_cwr(eng: Recovery, f: Flow, now: float) -> None:
    """tcp_enter_recovery (tcp_input.c:2801) while in CWR: tcp_in_cwnd_reduction is true, so
    there is no second tcp_init_cwnd_reduction: ssthresh, high_seq and PRR carry on."""
    lost = len(f.holes)
    f.loss_events += 1
    eng.set_ca_state(f, CA_RECOVERY, now)
    f.event(
        "recovery_enter",
        now,
        {
            "cwnd": f.cwnd,
            "ssthresh": ss_or_none(f),
            "high_seq": f.high_seq,
            "lost": lost,
            "from_cwr": 1,
        },
        msg(
            "RACK marks {lost} segments lost during CWR, so the flow enters Recovery; the "
            "window is already being reduced for this round trip (tcp_in_cwnd_reduction), so "
            "ssthresh stays {ssthresh} and PRR carries on until segment {high_seq} is ACKed",
            lost=lost,
            ssthresh=f.ssthresh,
            high_seq=f.high_seq,
        ),
    )
