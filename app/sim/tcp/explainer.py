"""The TCP connection-lifecycle explainer (issue #12): the simulation half.

A run walks every socket call, every segment sent and delivered, and every timer of a
client/server pair, showing each endpoint in RFC 9293 terms and in Linux 6.4 terms side by
side. ``public_json`` is the documented body of ``POST /api/v1/explainers/tcp/run``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from app.sim.core.errors import ParamError
from app.sim.core.explainer import Explainer, JSONValue, Limits, Preset, Progress, ResultKind
from app.sim.core.i18n import Message, msg
from app.sim.core.share import share
from app.sim.core.sources import LINUX_6_4, SourceProject
from app.sim.core.trace import Field, Frame, Trace
from app.sim.tcp import params as P
from app.sim.tcp.driver import MAX_FRAMES, Sim
from app.sim.tcp.params import TcpParams
from app.sim.tcp.presets import PRESETS
from app.sim.tcp.sock import Seg
from app.sim.tcp.state import TcpState

# 2: role words; 3: v6.4 lines; 4: SYN_SENT TCP_TIMEOUT_MIN re-arm; 5: srtt-capped delayed ACK;
# 6: TIME_WAIT takeover with timestamps; 7: active RST carries the window;
# 8: the request sock is freed, not moved to TCP_SYN_RECV; 9: who drops a request sock;
# 10: segments as 6.4 sends them (options, scaled windows, 1460 MSS, tail loss probes, SACK)
# ... 15: the send buffer (tcp_wmem, SO_SNDBUF, sk_stream_wait_memory; params gain sndbuf)
# 16: F-RTO and undo after an RTO (sysctl gains tcp_frto; the other presets' frames are
# unchanged, their traces differ only by the new field in the params they echo)
# 17: retrans_stamp as 6.4 keeps it: the SYN's send or the first retransmission, one field
# for give-up and undo (a silent peer's connection gives up later; the presets are unchanged)
SIM_VERSION = "tcp-17"
ERRNOS = (
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "EPIPE",
    "ENOTCONN",
    "EISCONN",
    "EALREADY",
    "EINPROGRESS",
    "EAGAIN",
    "EINVAL",
    "EADDRNOTAVAIL",
    "EBADF",
)


_FIELD_KEYS = ("rfc", "snd_una", "snd_nxt", "rcv_nxt", "snd_wnd", "send_queue", "recv_queue")


def _show(v: object) -> int | float | str:
    return v if isinstance(v, int | float | str) else "-"


class TcpExplainer(Explainer[TcpParams, TcpState, None]):
    name: ClassVar[str] = "tcp"
    title: ClassVar[Message] = msg("TCP connection lifecycle")
    summary: ClassVar[Message] = msg(
        "Two endpoints open, use and close a TCP connection over a network that can lose, "
        "delay or reorder segments; every segment and state change in RFC 9293 and Linux 6.4 "
        "terms."
    )
    sim_version: ClassVar[str] = SIM_VERSION
    source: ClassVar[SourceProject] = LINUX_6_4
    presets: ClassVar[tuple[Preset, ...]] = PRESETS
    default_preset: ClassVar[str] = "handshake"
    limits: ClassVar[Limits] = Limits(
        max_work=20_000,
        unit=msg("simulated events"),
        # measured (bench/cost_calibration.py): with the frames counted apart (expected_bytes)
        work_per_second=80_000,
    )
    result_kinds: ClassVar[tuple[ResultKind, ...]] = (
        ResultKind(key="ok", label=msg("ok"), tone="ok"),
        *(ResultKind(key=e.lower(), label=msg("{result}"), tone="warn") for e in ERRNOS),
    )

    # --- params ------------------------------------------------------------------------------
    def parse(self, raw: JSONValue) -> TcpParams:
        p = P.parse(raw)
        c = self.cost(p)
        if c > self.limits.max_work:
            raise ParamError.single(
                ("script",),
                msg(
                    "this run would cost about {n} events (limit {limit})",
                    n=int(c),
                    limit=int(self.limits.max_work),
                ),
            )
        return p

    def dump(self, params: TcpParams) -> dict[str, JSONValue]:
        return P.dump(params)

    def cost(self, params: TcpParams) -> float:
        """About the number of events: calls, segments (data in MSS units, both ways, each sent
        and delivered), timers, and the probes a long run can send."""
        mss = params.mss
        data = sum(math.ceil((c.bytes or 0) / mss) for c in params.script if c.call == "send")
        probes = 0.0
        if any(c.keepalive for c in params.script):
            probes += params.until_ms / (params.sysctl.tcp_keepalive_intvl_s * 1000) * 2
        dup = sum(1 for n in params.network if n.kind == "duplicate")
        return 20 + 8 * len(params.script) + 4 * data + probes + 2 * dup + 4 * len(params.network)

    def expected_bytes(self, params: TcpParams) -> float:
        """Frames × ~600 bytes pickled (both endpoints' sockets and queues; what a frame
        shares with the one before is pickled once, app.sim.core.share: 360-620 bytes a frame
        measured, bench/cost_calibration.py). About 4 frames a call, one per 3 segments of
        data, and 6 per keepalive probe: an answered probe comes every ``tcp_keepalive_time_s``,
        an unanswered one every ``tcp_keepalive_intvl_s`` (a probe each second for an hour made
        the run's 20,000 frames, 7.2 MB; 21.9 MB before the frames shared their parts)."""
        data = sum(
            math.ceil((c.bytes or 0) / params.mss) for c in params.script if c.call == "send"
        )
        probes = 0.0
        if any(c.keepalive for c in params.script):
            s = params.sysctl
            probes = params.until_ms / (min(s.tcp_keepalive_time_s, s.tcp_keepalive_intvl_s) * 1000)
        frames = 10 + 4 * len(params.script) + data / 3 + 6 * probes + 3 * len(params.network)
        return min(frames, MAX_FRAMES + 1) * 600

    # --- run ---------------------------------------------------------------------------------
    def run(self, params: TcpParams, progress: Progress | None = None) -> Trace[TcpState, None]:
        frames: list[Frame[TcpState]] = []

        def on_frame(sim: Sim, f: dict[str, Any]) -> None:
            state = sim.snapshot()
            state["event"] = f["event"]
            seg: Seg | None = f["segment"]
            dlv: Seg | None = f["delivered"]
            state["segment"] = seg.as_state() if seg is not None else None
            state["delivered"] = dlv.as_state() if dlv is not None else None
            state["transitions"] = f["transitions"]
            state["call"] = f["call"]
            result = "ok"
            call = f["call"]
            if call is not None and call["errno"] is not None:
                result = call["errno"].lower()
            mark: str | None = None
            if seg is not None and seg.lost:
                mark = "loss"
            elif seg is not None and seg.rst:
                mark = "rst"
            elif result != "ok":
                mark = "error"
            if frames:  # what did not change is held once (app.sim.core.share)
                state = share(state, frames[-1].state)
            eps = state["endpoints"]
            prev = frames[-1].state["endpoints"] if frames else eps
            fields = (
                Field(name="t", value=state["t_ms"], unit="ms"),
                *(
                    Field(
                        name=f"{ep} {key}",
                        value=_show(eps[ep][key]),  # type: ignore[literal-required]
                        changed=eps[ep][key] != prev[ep][key],  # type: ignore[literal-required]
                    )
                    for ep in ("client", "server")
                    for key in _FIELD_KEYS
                ),
            )
            if frames:
                fields = share(fields, frames[-1].fields)
            frames.append(
                Frame(
                    index=len(frames),
                    op=f["event"],
                    result=result,
                    narration=f["narration"],
                    source=f["source"],
                    state=state,
                    fields=fields,
                    mark=mark,
                    notes=f["notes"],
                    time=state["t_ms"] / 1000,
                )
            )

        sim = Sim(params, on_frame)
        sim.run(progress, self.cost(params))
        summary: dict[str, Any] = {
            "segments": sim.segments_total,
            "lost": sum(1 for f in frames if f.state["segment"] and f.state["segment"]["lost"]),
            "final": {n: sim.rfc_state(e) for n, e in sim.eps.items()},
            "frames": len(frames),
        }
        return Trace(
            explainer=self.name,
            sim_version=self.sim_version,
            params=params,
            frames=tuple(frames),
            series=None,
            summary=summary,
            ended_early=sim.ended,
        )

    # --- JSON --------------------------------------------------------------------------------
    def public_json(self, trace: Trace[TcpState, None]) -> dict[str, JSONValue]:
        out: list[dict[str, JSONValue]] = []
        for fr in trace.frames:
            st: TcpState = fr.state
            seg = st["segment"]
            errors: list[dict[str, str]] = []
            call = st["call"]
            if call is not None and call["errno"] is not None:
                errors.append(
                    {"endpoint": call["endpoint"], "call": call["call"], "errno": call["errno"]}
                )
            item: dict[str, JSONValue] = {
                "index": fr.index,
                "t_ms": st["t_ms"],
                "event": st["event"],
                "states": {n: e["rfc"] for n, e in st["endpoints"].items()},
                "linux_states": {
                    n: [
                        {
                            "object": o["object"],
                            "state": o["state"],
                            "tw_substate": o["tw_substate"],
                        }
                        for o in e["linux"]
                    ]
                    for n, e in st["endpoints"].items()
                },
                "segment": (
                    {
                        "from": seg["src"],
                        "flags": seg["flags"],
                        "seq": seg["seq"],
                        "ack": seg["ack"],
                        "len": seg["len"],
                        "window": seg["window"],
                        "window_scaled": seg["window_scaled"],
                        "options": list(seg["options"]),
                        "lost": seg["lost"],
                        "nth": seg["nth"],
                    }
                    if seg is not None
                    else None
                ),
                "errors": errors,
                "call": call,
                "transitions": st["transitions"],
                "narration": fr.narration.render(),
                "source": fr.source.as_dict() if fr.source else None,
            }
            out.append(item)
        return {
            "explainer": self.name,
            "params": self.dump(trace.params),
            "frames": out,
            "summary": dict(trace.summary),
            "ended_early": trace.ended_early,
        }
