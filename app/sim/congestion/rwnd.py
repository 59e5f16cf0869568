"""Flow control: the receiver's advertised window against the congestion window.

``tcp_write_xmit`` (tcp_output.c:2601) sends a segment only if both tests pass:
``tcp_cwnd_test`` (:2038, packets in flight below cwnd) and ``tcp_snd_wnd_test`` (:2102, the
segment ends within ``tcp_wnd_end`` = snd_una + snd_wnd, the window the receiver last
advertised). So the usable window is min(cwnd, rwnd). A receiver that never reads slower than
data arrives advertises its whole window again from each cumulative ACK, so here the window's
right edge is snd_una + ``rwnd`` (segments out of order still take buffer space in Linux; the
model does not shrink the window for them). Without ``rwnd_bytes`` the window never binds: in
Linux the receiver's autotuning (``tcp_rcv_space_adjust``) grows it ahead of a bulk flow from the
65160-byte initial window.

When the window, not cwnd, stops ``tcp_write_xmit``, the flow is not cwnd-limited, and
``tcp_cwnd_validate`` (:1870) remembers that for the current window (``is_cwnd_limited``,
``max_packets_out``, ``cwnd_usage_seq``). Reno's and CUBIC's ``cong_avoid`` return at once
unless ``tcp_is_cwnd_limited`` (include/net/tcp.h:1305) says the window was used: cwnd-limited,
or in slow start while cwnd is below twice the most packets that were out. So a window-limited
flow's cwnd stops growing, in slow start at twice the receive window. BBR does not ask.

Linux's retransmissions are not held back by the receive window (they lie below snd_nxt);
here a flow may send its pending retransmissions plus the new data the window allows.
``tcp_cwnd_application_limited`` (shrinking an unused cwnd after an idle RTO) needs an
application that stops writing; a bulk sender's full socket buffer (SOCK_NOSPACE) prevents it,
so it is not modelled.
"""

from __future__ import annotations

from app.sim.congestion.flow import Flow
from app.sim.core.i18n import msg


def window_room(f: Flow, room: int, now: float) -> int:
    """How many segments tcp_write_xmit may send now: ``room`` (cwnd less in flight) capped by
    the receive window; records whether the flow is cwnd- or window-limited
    (tcp_cwnd_validate)."""
    wnd = f.snd_una + f.rwnd - f.snd_nxt + len(f.rtxq)
    if room <= wnd:
        sent = room if room > 0 else 0
        cwnd_limited = True  # tcp_packets_in_flight >= cwnd once these are out
    else:
        sent = wnd if wnd > 0 else 0
        cwnd_limited = False  # tcp_snd_wnd_test stopped the loop: is_rwnd_limited
    cwnd_validate(f, sent, cwnd_limited, now)
    return sent


def cwnd_validate(f: Flow, sent: int, cwnd_limited: bool, now: float) -> None:
    """tcp_cwnd_validate (tcp_output.c:1870), called by tcp_write_xmit when it sent something
    or was cwnd-limited; and the start/stop of window-limited time (tcp_chrono_start with
    TCP_CHRONO_RWND_LIMITED), with an event when the window starts to bind."""
    if sent or cwnd_limited:
        packets_out = min(f.snd_nxt + sent, f.snd_una + f.rwnd) - f.snd_una
        if f.snd_nxt < packets_out + f.snd_una:
            snd_nxt = packets_out + f.snd_una
        else:
            snd_nxt = f.snd_nxt
        if (
            f.snd_una >= f.cwnd_usage_seq
            or cwnd_limited
            or (not f.is_cwnd_limited and packets_out > f.max_packets_out)
        ):
            f.is_cwnd_limited = cwnd_limited
            f.max_packets_out = packets_out
            f.cwnd_usage_seq = snd_nxt
    if cwnd_limited:
        if f.rwnd_limited_since >= 0:
            f.rwnd_limited_s += now - f.rwnd_limited_since
            f.rwnd_limited_since = -1.0
    elif f.rwnd_limited_since < 0:
        f.rwnd_limited_since = now
        f.event(
            "rwnd_limited",
            now,
            {"cwnd": f.cwnd, "rwnd": f.rwnd},
            msg(
                "flow control: the receiver's window of {rwnd} segments, not cwnd {cwnd}, now "
                "stops tcp_write_xmit (tcp_snd_wnd_test). The flow is not cwnd-limited, so "
                "tcp_is_cwnd_limited stops cwnd growth (in slow start once cwnd reaches twice "
                "the packets out)",
                rwnd=f.rwnd,
                cwnd=f.cwnd,
            ),
        )


def tcp_is_cwnd_limited(f: Flow) -> bool:
    """tcp_is_cwnd_limited (include/net/tcp.h:1305): the window was used, or in slow start
    cwnd is still below twice the most packets that were out."""
    if f.is_cwnd_limited:
        return True
    if f.cwnd < f.ssthresh:  # tcp_in_slow_start
        return f.cwnd < 2 * f.max_packets_out
    return False


def finish(f: Flow, end: float) -> None:
    """Close the window-limited time still open at the end of the run."""
    if f.rwnd_limited_since >= 0:
        f.rwnd_limited_s += end - f.rwnd_limited_since
        f.rwnd_limited_since = -1.0
