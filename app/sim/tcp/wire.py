"""What a segment's header carries besides flags and numbers: its options, in the order and
packing ``tcp_options_write`` (net/ipv4/tcp_output.c) gives them, and its window, as
``tcp_select_initial_window`` (the SYN and SYN-ACK) and ``tcp_select_window`` (every later
segment) compute it.

Options (include/net/tcp.h TCPOPT_*, lengths TCPOLEN_*): ``tcp_syn_options`` always puts an
MSS option on a SYN and adds timestamps, window scale and SACK-permitted when
``tcp_timestamps``, ``tcp_window_scaling`` and ``tcp_sack`` allow; ``tcp_synack_options`` adds
each only if the SYN offered it too (``ireq->tstamp_ok``, ``wscale_ok``, ``sack_ok``);
``tcp_established_options`` puts timestamps on every segment once both sides agreed, and SACK
blocks (a D-SACK block first) when the receiver holds out-of-order data or saw a duplicate.
``tcp_options_write`` packs them: MSS first; SACK-permitted shares a word with the timestamp
(``sackOK,TS``), or goes alone after two NOPs; the window scale after one NOP; SACK blocks
after two NOPs.

Timestamps: TSval is ``tcp_skb_timestamp`` (a 1 ms clock, CONFIG_HZ-independent ``TCP_TS_HZ``)
plus the connection's offset. 6.4 takes the offset from ``secure_tcp_ts_off(saddr, daddr)``
(tcp_v4_connect, tcp_v4_init_ts_off): a keyed hash of the two addresses with a boot-time
secret, the same for every connection between them. The model cannot draw that secret; it
fixes one offset per endpoint (``app.sim.tcp.sock.TS_OFFSET``), so runs are reproducible.

Windows: the receive space is ``tcp_full_space`` = ``tcp_win_from_space(sk_rcvbuf)`` (half the
buffer with 6.4's ``tcp_adv_win_scale`` of 1). Simplifications: the model counts queued payload
as taking twice its size in ``sk_rmem_alloc`` (the ratio ``tcp_adv_win_scale`` = 1 assumes),
so ``tcp_space`` is the full space less the queued bytes; there is no receive-buffer
autotuning (``tcp_rcv_space_adjust``), no memory pressure, and ``tcp_grow_window`` grows
``rcv_ssthresh`` by ``2 * advmss`` per in-order data segment (its "check #2" path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.tcp.options import TcpOption

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim
    from app.sim.tcp.sock import Req, Sock

TCP_MAX_WSCALE = 14  # include/net/tcp.h
U16_MAX = 65535
TCP_MSS_DEFAULT = 536  # include/net/tcp.h: RFC 1122's default MSS
TCP_MIN_MSS = 88
TCPOLEN_TSTAMP_ALIGNED = 12
MAX_TCP_OPTION_SPACE = 40
TCPOLEN_SACK_BASE_ALIGNED = 4
TCPOLEN_SACK_PERBLOCK = 8
TCP_NUM_SACKS = 4
TCP_APP_WIN = 31  # net.ipv4.tcp_app_win
SYSCTL_RMEM_MAX = 212_992  # net.core.rmem_max on x86-64 (SK_RMEM_MAX)
TS_MOD = 2**32


def ts_now(sim: Sim, off: int) -> int:
    """tcp_skb_timestamp + tsoffset: the TSval a segment sent now carries (1 ms clock)."""
    return (int(sim.now) + off) % TS_MOD


def write_options(
    *,
    mss: int | None = None,
    ts: tuple[int, int] | None = None,
    sack_perm: bool = False,
    wscale: int | None = None,
    sacks: tuple[tuple[int, int], ...] = (),
) -> tuple[TcpOption, ...]:
    """tcp_options_write: the options in wire order, with the NOPs that align them."""
    out: list[TcpOption] = []
    if mss is not None:
        out.append(TcpOption("mss", (mss,)))
    if ts is not None:
        if sack_perm:
            out.append(TcpOption("sackOK"))
            sack_perm = False
        else:
            out += [TcpOption("nop"), TcpOption("nop")]
        out.append(TcpOption("TS", ts))
    if sack_perm:
        out += [TcpOption("nop"), TcpOption("nop"), TcpOption("sackOK")]
    if wscale is not None:
        out += [TcpOption("nop"), TcpOption("wscale", (wscale,))]
    if sacks:
        out += [TcpOption("nop"), TcpOption("nop")]
        out.append(TcpOption("sack", tuple(v for block in sacks for v in block)))
    return tuple(out)


def syn_options(sim: Sim, sk: Sock) -> tuple[TcpOption, ...]:
    """tcp_syn_options (a SYN from connect(), or a simultaneous open's SYN-ACK)."""
    s = sim.p.sysctl
    ts = (ts_now(sim, sk.ts_off), sk.ts_recent) if s.tcp_timestamps else None
    return write_options(
        mss=sk.advmss,
        ts=ts,
        sack_perm=bool(s.tcp_sack),
        wscale=sk.rcv_wscale if s.tcp_window_scaling else None,
    )


def synack_options(sim: Sim, req: Req) -> tuple[TcpOption, ...]:
    """tcp_synack_options: each option only if the SYN offered it too."""
    return write_options(
        mss=req.advmss,
        ts=(ts_now(sim, req.ts_off), req.ts_recent) if req.ts_ok else None,
        sack_perm=req.sack_ok,
        wscale=req.rcv_wscale if req.wscale_ok else None,
    )


def established_options(sim: Sim, sk: Sock) -> tuple[TcpOption, ...]:
    """tcp_established_options: timestamps, then SACK blocks (a pending D-SACK block first)
    as many as fit in the 40 option bytes; writing them clears the D-SACK."""
    size = 0
    ts = None
    if sk.ts_ok:
        ts = (ts_now(sim, sk.ts_off), sk.ts_recent)
        size += TCPOLEN_TSTAMP_ALIGNED
    blocks: list[tuple[int, int]] = []
    if sk.sack_ok:
        if sk.dsack is not None:
            blocks.append(sk.dsack)
        blocks += sk.sacks
    room = (MAX_TCP_OPTION_SPACE - size - TCPOLEN_SACK_BASE_ALIGNED) // TCPOLEN_SACK_PERBLOCK
    sacks = tuple(blocks[: max(room, 0)])
    if sacks:
        sk.dsack = None
    return write_options(ts=ts, sacks=sacks)


def select_initial_window(
    space: int, mss: int, clamp: int, wscale_ok: bool, rmem2: int
) -> tuple[int, int, int]:
    """tcp_select_initial_window: (rcv_wnd, window_clamp, rcv_wscale) for a space, an MSS
    (less the timestamp option when one is used) and a clamp (0: none yet). The scale is
    chosen for the largest window the socket may ever offer: tcp_rmem[2] or rmem_max."""
    space = max(space, 0)
    if clamp == 0:
        clamp = U16_MAX << TCP_MAX_WSCALE
    space = min(clamp, space)
    if space > mss:
        space = space // mss * mss
    rcv_wnd = min(space, U16_MAX)  # tcp_workaround_signed_windows is 0
    wscale = 0
    if wscale_ok:
        top = min(max(space, rmem2, SYSCTL_RMEM_MAX), clamp)
        wscale = min(max(top.bit_length() - 1 - 15, 0), TCP_MAX_WSCALE)
    clamp = min(U16_MAX << wscale, clamp)
    return rcv_wnd, clamp, wscale


def win_from_space(space: int) -> int:
    """tcp_win_from_space with tcp_adv_win_scale = 1."""
    return space - (space >> 1)


def tcp_space(sim: Sim, sk: Sock) -> int:
    """tcp_space: the window the free receive buffer allows (see the module's note)."""
    return sk.full_space - sk.recv_q - sum(n for _, n, _ in sk.ooo)


def init_buffer_space(sk: Sock) -> None:
    """tcp_init_buffer_space: the window clamp once the connection is established (less
    1/2**tcp_app_win, and one segment reserved), and rcv_ssthresh within it."""
    maxwin = sk.full_space
    if sk.window_clamp >= maxwin:
        sk.window_clamp = maxwin
        if maxwin > 4 * sk.advmss:
            sk.window_clamp = max(maxwin - (maxwin >> TCP_APP_WIN), 4 * sk.advmss)
    if sk.window_clamp > 2 * sk.advmss and sk.window_clamp + sk.advmss > maxwin:
        sk.window_clamp = max(2 * sk.advmss, maxwin - sk.advmss)
    sk.rcv_ssthresh = min(sk.rcv_ssthresh, sk.window_clamp)


def grow_window(sim: Sim, sk: Sock, length: int) -> None:
    """tcp_grow_window for an in-order data segment (see the module's note)."""
    room = min(sk.window_clamp, tcp_space(sim, sk)) - sk.rcv_ssthresh
    if room <= 0:
        return
    incr = max(2 * sk.advmss, 2 * length)
    sk.rcv_ssthresh += min(room, incr)


def _align(x: int, shift: int) -> int:
    a = 1 << shift
    return (x + a - 1) // a * a


def raw_select_window(sim: Sim, sk: Sock) -> int:
    """__tcp_select_window: the window in bytes the free space allows, before the
    never-shrink rule."""
    mss = sk.rcv_mss
    free = tcp_space(sim, sk)
    allowed = sk.full_space
    full = min(sk.window_clamp, allowed)
    if mss > full:
        mss = full
        if mss <= 0:
            return 0
    if free < (full >> 1):
        free = free >> sk.rcv_wscale << sk.rcv_wscale
        if free < (allowed >> 4) or free < mss:
            return 0
    free = min(free, sk.rcv_ssthresh)
    if sk.rcv_wscale:
        return _align(free, sk.rcv_wscale)
    window = sk.rcv_wnd
    if window <= free - mss or window > free:
        window = free // mss * mss if mss > 0 else free
    elif mss == full and free > window + (full >> 1):
        window = free
    return window


def select_window(sim: Sim, sk: Sock) -> tuple[int, int]:
    """tcp_select_window: never shrink the offered window; remember it (rcv_wnd, rcv_wup);
    return (what the header carries, the bytes it means)."""
    cur = sk.receive_window()
    new = raw_select_window(sim, sk)
    if new < cur:
        new = _align(cur, sk.rcv_wscale)
    sk.rcv_wnd = new
    sk.rcv_wup = sk.rcv_nxt
    new = min(new, U16_MAX << sk.rcv_wscale)
    wire = new >> sk.rcv_wscale
    return wire, wire << sk.rcv_wscale
