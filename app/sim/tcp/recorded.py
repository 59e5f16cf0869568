"""A real connection as a trace: one frame per captured segment (a capture) or per kernel event
(a ``stepscope record tcp`` run), each endpoint's state as the recording's parsed JSON infers it
(app/recordings/tcpflow.py: Linux 6.4's rules), and narration naming the function whose rule
moved the state.

The frames' ``state`` is small (the segment's index and the states after it); the segments
themselves live once in the trace's ``summary`` (``segments``, ``endpoints``), which the
picture reads. At most :data:`MAX_FRAMES` frames: a longer capture is cut there, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from app.sim.core import Field, Frame, Message, ParamError, SourceRef, Trace, msg
from app.sim.core.i18n import join
from app.sim.tcp.replay import replay
from app.sim.tcp.sources import SOURCES

MAX_FRAMES = 5_000
RECORDED_VERSION = "tcp-recorded-1"


class RecordedState(TypedDict):
    segment: int  # index into summary["segments"] (-1: a kernel event, not a segment)
    event: int  # index into summary["events"] (-1: a segment)
    states: dict[str, str]  # endpoint -> its state after this step ("" not seen yet)
    moved: list[str]  # endpoints whose state this step moved


# Why a state moved (the cause keys of app/recordings/tcpflow.py), in words.
CAUSES: dict[str, Message] = {
    "sent_syn": msg(
        "connect() ran {rule}, which set SYN_SENT before the SYN went out (tcp_connect sends it)."
    ),
    "listening": msg(
        "It was listening (inet_csk_listen_start had put the socket in LISTEN), so it answers "
        "the SYN."
    ),
    "sent_synack": msg(
        "{rule} answered the SYN with a SYN-ACK from a request socket: SYN_RECEIVED (Linux calls "
        "it TCP_NEW_SYN_RECV until the handshake's ACK arrives)."
    ),
    "got_synack": msg(
        "tcp_rcv_synsent_state_process accepted the SYN-ACK, and {rule} moved the socket to "
        "ESTABLISHED (the ACK of the SYN-ACK goes out)."
    ),
    "crossed_syn": msg(
        "A SYN crossed its own (simultaneous open): {rule} moves it to SYN_RECEIVED and answers "
        "with a SYN-ACK."
    ),
    "got_ack_of_syn": msg(
        "The ACK of its SYN-ACK arrived: {rule}, in its TCP_SYN_RECV case, moves the new socket "
        "to ESTABLISHED."
    ),
    "midstream": msg(
        "The capture starts after the handshake: this endpoint is taken as ESTABLISHED."
    ),
    "sent_fin": msg(
        "close() or shutdown() ran {rule}: ESTABLISHED becomes FIN_WAIT_1 and tcp_send_fin sends "
        "the FIN."
    ),
    "sent_fin_last": msg(
        "Its application closed after the peer's FIN: {rule} moves CLOSE_WAIT to LAST_ACK and "
        "tcp_send_fin sends the FIN."
    ),
    "got_ack_of_fin": msg(
        "The ACK of its FIN arrived: {rule}, in its TCP_FIN_WAIT1 case, moves it to FIN_WAIT_2."
    ),
    "got_ack_closing": msg(
        "The ACK of its FIN arrived in CLOSING: tcp_rcv_state_process calls {rule}: TIME_WAIT."
    ),
    "got_ack_last": msg(
        "The ACK of its FIN arrived in LAST_ACK: tcp_rcv_state_process calls {rule}: the socket "
        "is CLOSED."
    ),
    "got_fin": msg(
        "The peer's FIN arrived: {rule} moves ESTABLISHED to CLOSE_WAIT (its application will "
        "read end-of-file)."
    ),
    "got_fin_crossed": msg("The peer's FIN crossed its own: {rule} moves FIN_WAIT_1 to CLOSING."),
    "got_fin_last": msg(
        "The peer's FIN arrived in FIN_WAIT_2: tcp_fin acknowledges it and calls {rule}: TIME_WAIT."
    ),
    "sent_rst": msg("It sent a RST ({rule}): the socket is CLOSED."),
    "got_rst": msg("A RST arrived: {rule} closes the socket (CLOSED)."),
    "recorded": msg("The kernel said so itself: inet_sock_set_state reported {old} → {new}."),
}

# The scrubber's tick for a step that moved a state (the player shows marks as catalog words)
MARK_WORDS = (msg("state"), msg("rst"))

EVENT_WORDS: dict[str, Message] = {
    "sock:inet_sock_set_state": msg("The socket changed state."),
    "tcp:tcp_retransmit_skb": msg(
        "tcp_retransmit_skb sent a segment again (its first copy was not acknowledged in time)."
    ),
    "tcp:tcp_send_reset": msg("The kernel sent a RST for this connection."),
    "tcp:tcp_receive_reset": msg("A RST arrived: tcp_reset closes the socket."),
}


def _source(rule: str) -> SourceRef | None:
    return SOURCES.get(rule)


def _move_words(move: Mapping[str, Any]) -> Message:
    cause = CAUSES.get(str(move.get("cause")), CAUSES["recorded"])
    words = Message(
        cause.id,
        {
            "rule": str(move.get("rule", "")),
            "old": str(move.get("from")),
            "new": str(move.get("to")),
        },
    )
    return msg(
        "{endpoint}: {old} → {new}. {why}",
        endpoint=str(move["endpoint"]),
        old=str(move.get("from") or "—"),
        new=str(move["to"]),
        why=words,
    )


def _segment_words(seg: Mapping[str, Any]) -> Message:
    opts = str(seg.get("options") or "")
    return msg(
        "At {t} ms {src} sends {flags} seq {seq} ack {ack} win {win}, {len} bytes of data{opts}.",
        t=seg["t_ms"],
        src=str(seg["from"]),
        flags=str(seg["flags"]) or "—",
        seq=int(seg["seq"]),
        ack=int(seg["ack"]),
        win=int(seg["win"]),
        len=int(seg["len"]),
        opts=" " + opts if opts else "",
    )


def _check(recording: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    kind = recording.get("kind")
    if kind not in ("tcp", "capture"):
        raise ParamError.single(("kind",), msg("this view shows tcp recordings and captures"))
    segments = recording.get("segments")
    events = recording.get("events", [])
    if not isinstance(segments, list) or not isinstance(events, list):
        raise ParamError.single(("segments",), msg("must be a list of segments"))
    return segments, events


def build(recording: Mapping[str, Any], overrides: Mapping[str, Any]) -> Trace[RecordedState, None]:
    """The trace of a parsed capture or ``tcp`` recording (``overrides``: none are taken)."""
    if overrides:
        raise ParamError.single(("overrides",), msg("this view takes no overrides"))
    segments, events = _check(recording)
    by_key = "segment" if segments else "event"
    steps = segments if segments else events
    moves_at: dict[int, list[Mapping[str, Any]]] = {}
    for move in recording.get("transitions", []):
        moves_at.setdefault(int(move.get(by_key, -1)), []).append(move)
    endpoints = list(recording.get("states", {}))
    for seg in segments:
        for ep in (str(seg["from"]), str(seg.get("to", ""))):
            if ep and ep not in endpoints:
                endpoints.append(ep)
    now = dict.fromkeys(endpoints, "")
    frames: list[Frame[RecordedState]] = []
    for index, item in enumerate(steps[:MAX_FRAMES]):
        moves = moves_at.get(index, [])
        for move in moves:
            now[str(move["endpoint"])] = str(move["to"])
        parts: list[Message | str] = []
        if segments:
            parts.append(_segment_words(item))
        else:
            parts.append(EVENT_WORDS.get(str(item.get("event")), msg("A kernel event.")))
        parts.extend(_move_words(m) for m in moves)
        rule = next((str(m["rule"]) for m in moves if _source(str(m["rule"]))), "")
        frames.append(
            Frame(
                index=index,
                op=str(item["flags"]) if segments else str(item.get("event", "")),
                result="ok",
                narration=join(" ", parts),
                source=_source(rule),
                state=RecordedState(
                    segment=index if segments else -1,
                    event=-1 if segments else index,
                    states=dict(now),
                    moved=[str(m["endpoint"]) for m in moves],
                ),
                fields=_fields(item, now, segments=bool(segments)),
                mark="rst" if "R" in str(item.get("flags", "")) else "state" if moves else None,
                time=float(item.get("t_ms") or 0.0) / 1000.0,
            )
        )
    notes = (
        msg("Only the first {n} of {total} steps are shown.", n=MAX_FRAMES, total=len(steps))
        if len(steps) > MAX_FRAMES
        else None
    )
    if notes is not None and frames:
        last = frames[-1]
        frames[-1] = Frame(**{**_frame_dict(last), "notes": (notes,)})
    replayed = replay(recording) if segments else None
    if replayed is not None:
        _note_differences(frames, recording, replayed)
    return Trace(
        explainer="tcp",
        sim_version=RECORDED_VERSION,
        params={"kind": recording.get("kind")},
        frames=tuple(frames),
        series=None,
        summary={
            "segments": segments[:MAX_FRAMES],
            "events": events[:MAX_FRAMES],
            "endpoints": endpoints,
            "recorded": True,
            # "replay in the model": the nearest params, and where model and machine differ
            "replay": replayed,
        },
    )


def _note_differences(
    frames: list[Frame[RecordedState]], recording: Mapping[str, Any], replayed: Mapping[str, Any]
) -> None:
    """At the step where an endpoint's state first differs from the model's replay, a note
    saying what the model has there instead."""
    for ep, first in replayed["differ"].items():
        addr = replayed["endpoints"][ep]
        moves = [m for m in recording.get("transitions", []) if m.get("endpoint") == addr]
        model = replayed["model"][ep]
        if first >= len(moves):
            continue
        index = int(moves[first].get("segment", -1))
        if not 0 <= index < len(frames):
            continue
        note = msg(
            "Replayed in the model, {endpoint} goes to {model} here where the machine went to "
            "{machine}.",
            endpoint=addr,
            model=model[first] if first < len(model) else "—",
            machine=str(moves[first]["to"]),
        )
        frame = frames[index]
        frames[index] = Frame(**{**_frame_dict(frame), "notes": (*frame.notes, note)})


def _frame_dict(frame: Frame[RecordedState]) -> dict[str, Any]:
    return {
        name: getattr(frame, name)
        for name in (
            "index",
            "op",
            "result",
            "narration",
            "source",
            "state",
            "fields",
            "mark",
            "notes",
            "time",
        )
    }


def _fields(
    item: Mapping[str, Any], states: Mapping[str, str], *, segments: bool
) -> tuple[Field, ...]:
    out: list[Field] = [Field(name="t", value=float(item.get("t_ms") or 0.0), unit="ms")]
    if segments:
        out += [
            Field(name="from", value=str(item["from"])),
            Field(name="flags", value=str(item["flags"])),
            Field(name="seq", value=int(item["seq"])),
            Field(name="ack", value=int(item["ack"])),
            Field(name="win", value=int(item["win"])),
            Field(name="len", value=int(item["len"]), unit="B"),
            Field(name="options", value=str(item.get("options") or "—")),
        ]
        if "win_scaled" in item:
            out.append(Field(name="win (scaled)", value=int(item["win_scaled"]), unit="B"))
    else:
        for key, value in list(item.get("fields", {}).items())[:12]:
            out.append(Field(name=str(key), value=str(value)))
    out += [Field(name=ep, value=state or "—") for ep, state in states.items()]
    return tuple(out)
