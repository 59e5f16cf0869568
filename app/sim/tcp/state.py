"""The typed snapshot a TCP frame carries (``Frame.state``), drawn by the state diagram, the
sequence ladder and the endpoint panels. Everything here is plain JSON-shaped data."""

from __future__ import annotations

from typing import TypedDict


class TimerState(TypedDict):
    """One armed timer: ``retransmit``, ``loss_probe`` (tail loss probe), ``probe0``
    (zero-window persist), ``delack``,
    ``keepalive``, ``fin_wait2``, ``synack`` (request sock) or ``timewait``."""

    name: str
    deadline_ms: float


class LinuxObject(TypedDict):
    """One kernel object an endpoint owns: the listener, a request sock (``TCP_NEW_SYN_RECV``),
    a full socket, or a timewait mini-socket (``TCP_TIME_WAIT`` with its ``tw_substate``)."""

    id: int
    object: str  # "listener" | "request_sock" | "sock" | "timewait_sock"
    state: str  # kernel name, e.g. "TCP_SYN_RECV"
    tw_substate: str | None  # timewait_sock only: "TCP_FIN_WAIT2" or "TCP_TIME_WAIT"
    held_by_app: bool  # the script still holds a descriptor for it
    timers: list[TimerState]


class EndpointState(TypedDict):
    """One endpoint in both vocabularies, plus the connection's sequence space."""

    rfc: str  # RFC 9293 name (CLOSED, LISTEN, SYN_RECEIVED, FIN_WAIT_1, ...)
    linux: list[LinuxObject]
    iss: int | None
    irs: int | None
    snd_una: int | None
    snd_nxt: int | None
    rcv_nxt: int | None
    snd_wnd: int | None  # the peer's advertised window
    rcv_wnd: int | None  # the window this endpoint advertises
    send_queue: int  # bytes written and not yet acknowledged (ss Send-Q)
    unsent: int  # of which not yet transmitted
    recv_queue: int  # bytes received and not yet read (ss Recv-Q)
    accept_queue: int  # listener: children waiting for accept() (incl. other clients)
    syn_queue: int  # listener: request socks (incl. half-open ones from a flood)
    rto_ms: float | None
    backoff: int
    cwnd: int | None
    error: str | None  # pending sk_err, reported by the next call
    blocked: str | None  # the call the script is blocked in, if any


class SegmentState(TypedDict):
    """A segment on the wire, decoded."""

    id: int
    src: str
    dst: str
    nth: int  # 1 = the first segment this endpoint sent
    flags: list[str]
    seq: int
    ack: int
    len: int
    window: int  # the 16-bit header field, as the wire carries it
    window_scaled: int  # the bytes it means (window << the sender's scale; a SYN's unscaled)
    options: list[
        str
    ]  # in wire order, packetdrill spelling: "mss 1460", "sackOK", "TS val 5 ecr 0", "nop", "wscale 7", "sack 1:2 3:4"
    lost: bool
    sent_ms: float
    arrive_ms: float | None
    kind: str  # "syn", "data", "ack", "fin", "rst", "retransmit", "challenge_ack", "probe", ...


class TransitionState(TypedDict):
    """A state change just taken, by one kernel object."""

    endpoint: str
    object: str
    object_id: int  # stable per kernel object within a run (pairs a socket's transitions)
    from_state: str
    to_state: str
    rfc_from: str
    rfc_to: str
    event: str
    function: str


class CallState(TypedDict):
    """A socket call made (or completed) in this frame and what it returned."""

    endpoint: str
    call: str
    result: str  # "0", a byte count, or an errno name
    errno: str | None


class TcpState(TypedDict):
    t_ms: float
    event: str  # "call", "return", "send", "deliver", "timer"
    endpoints: dict[str, EndpointState]
    segment: SegmentState | None  # sent in this frame
    delivered: SegmentState | None  # arrived in this frame
    transitions: list[TransitionState]
    call: CallState | None
    in_flight: list[int]  # ids of segments sent and not yet arrived (nor lost)
