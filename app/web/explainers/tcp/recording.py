"""The TCP explainer's view of a user's own connection (a capture, or a ``stepscope record tcp``
run): the ladder of the real segments around the step, each endpoint's lane headed by the
state inferred after it, the step's segment (or kernel event) highlighted. The trace comes from
app/sim/tcp/recorded.py; the generic recordings pages (``/r/{id}``) find this view by kind."""

from __future__ import annotations

from collections.abc import Mapping

from app.sim.core import Frame, Trace, msg
from app.sim.tcp.recorded import RecordedState, build
from app.web.explainers.tcp.common import COLOUR, INK
from app.web.plugin import RecordingView
from app.web.sources import encode_params
from app.web.svgtext import attr, esc

WIDTH = 960
LANES = (300.0, 700.0)
TOP = 86
ROW = 40
SHOWN = 10  # segments drawn: the step's and those before it


def _lane_colour(i: int) -> tuple[str, str]:
    key = ("client", "server")[i % 2]
    return COLOUR[key], INK[key]


def _lanes(trace: Trace[RecordedState, None]) -> list[str]:
    return [str(ep) for ep in trace.summary.get("endpoints", [])][:2]


def _head(eps: list[str], state: RecordedState) -> list[str]:
    out = []
    for i, ep in enumerate(eps):
        x = LANES[i]
        fill, ink = _lane_colour(i)
        now = state["states"].get(ep, "") or "—"
        ring = ' stroke="#d62728" stroke-width="3"' if ep in state["moved"] else ""
        out.append(
            f'<text x="{x}" y="22" text-anchor="middle" class="rec-ep" font-size="14">{esc(ep)}</text>'
            f'<rect x="{x - 80}" y="32" width="160" height="30" rx="6" fill="{fill}"'
            f"{ring}/>"
            f'<text x="{x}" y="52" text-anchor="middle" fill="{ink}" font-size="14"'
            f' font-weight="bold" data-state="{attr(now)}">{esc(now)}</text>'
            f'<line x1="{x}" y1="64" x2="{x}" y2="{TOP + ROW * SHOWN}" stroke="#8a8f98"'
            ' stroke-dasharray="4 4"/>'
        )
    return out


def _arrow(row: int, seg: Mapping[str, object], eps: list[str], current: bool) -> str:
    src = str(seg.get("from"))
    left_to_right = not eps or src == eps[0]
    x1, x2 = (LANES[0], LANES[1]) if left_to_right else (LANES[1], LANES[0])
    y1 = TOP + row * ROW
    y2 = y1 + ROW - 10
    colour = "#d62728" if "R" in str(seg.get("flags")) else "#1b1f24"
    width = 3 if current else 1.5
    label = (
        f"{seg.get('flags') or '—'} seq {seg.get('seq')} ack {seg.get('ack')} win {seg.get('win')}"
    )
    if seg.get("len"):
        label += f" len {seg.get('len')}"
    opts = str(seg.get("options") or "")
    mid = (x1 + x2) / 2
    head = -8 if x2 > x1 else 8
    cls = "rec-seg current" if current else "rec-seg"
    return (
        f'<g class="{cls}" opacity="{1 if current else 0.55}">'
        f'<text x="40" y="{y1 + 14}" font-size="12" fill="#555">{esc(seg.get("t_ms"))} ms</text>'
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="{width}"/>'
        f'<path d="M{x2} {y2} l{head} -2 l2 -8 z" fill="{colour}"/>'
        f'<text x="{mid}" y="{(y1 + y2) / 2 - 4}" text-anchor="middle" font-size="12"'
        f' font-family="monospace" translate="no">{esc(label)}</text>'
        + (
            f'<text x="{mid}" y="{(y1 + y2) / 2 + 11}" text-anchor="middle" font-size="12"'
            f' font-family="monospace" fill="#555" translate="no">{esc(opts[:70])}</text>'
            if opts
            else ""
        )
        + "</g>"
    )


def picture(trace: Trace[RecordedState, None], frame: Frame[RecordedState]) -> str:
    eps = _lanes(trace)
    state = frame.state
    parts = _head(eps, state)
    segments = trace.summary.get("segments", [])
    if state["segment"] >= 0:
        first = max(0, state["segment"] - SHOWN + 1)
        for row, index in enumerate(range(first, state["segment"] + 1)):
            parts.append(_arrow(row, segments[index], eps, index == state["segment"]))
    else:
        events = trace.summary.get("events", [])
        ev = events[state["event"]] if 0 <= state["event"] < len(events) else {}
        parts.append(
            f'<text x="{WIDTH / 2}" y="{TOP + 30}" text-anchor="middle" font-size="16"'
            f' font-family="monospace" translate="no">{esc(ev.get("event", ""))}</text>'
        )
    title = msg("The recorded connection, step {step}", step=frame.index)
    return (
        f'<svg class="tcp-recorded" viewBox="0 0 {WIDTH} {TOP + ROW * SHOWN + 20}" role="img"'
        f' aria-label="{attr(title)}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def _states_row(states: list[str], first_diff: int | None) -> str:
    cells = []
    for i, name in enumerate(states):
        cls = (
            ' class="differs" style="background:#fde2e1;color:#8a1c1c"'
            if first_diff is not None and i >= first_diff
            else ""
        )
        cells.append(f"<code{cls}>{esc(name)}</code>")
    return " → ".join(cells) or "—"


def replay_panel(trace: Trace[RecordedState, None]) -> str:
    """ "Replay in the model": the model's run of the nearest params beside the machine's
    states, from the first state where they differ marked; a link opens that run."""
    found = trace.summary.get("replay")
    if not found:
        return ""
    rows = []
    for ep in ("client", "server"):
        first = found["differ"].get(ep)
        verdict = (
            msg("the model differs from state {n} on", n=first + 1)
            if first is not None
            else msg("the model agrees")
        )
        rows.append(
            f'<tr data-endpoint="{attr(ep)}" data-agrees="{"0" if first is not None else "1"}">'
            f'<th scope="row" translate="no">{esc(found["endpoints"][ep])}</th>'
            f"<td>{_states_row(found['machine'][ep], first)}</td>"
            f"<td>{_states_row(found['model'][ep], first)}</td><td>{esc(verdict)}</td></tr>"
        )
    link = "/explainers/tcp/custom?p=" + encode_params(found["params"])
    params = found["params"]
    title = msg("Replay in the model")
    about = msg(
        "The same socket calls in the model: RTT {rtt} ms, MSS {mss}, the captured initial "
        "sequence numbers.",
        rtt=params["rtt_ms"],
        mss=params["mss"],
    )
    open_it = msg("Open the replay")
    machine, model = msg("machine"), msg("model")
    endpoint, agreement = msg("endpoint"), msg("agreement")
    return (
        '<details class="replay-panel" id="replay-panel">'  # closed: the ladder first
        f"<summary>{esc(title)}</summary><p>{esc(about)} "
        f'<a class="button" id="replay-link" href="{attr(link)}">{esc(open_it)}</a></p>'
        '<div class="table-scroll" tabindex="0"><table class="fields"><thead><tr>'
        f'<th scope="col">{esc(endpoint)}</th><th scope="col">{esc(machine)}</th>'
        f'<th scope="col">{esc(model)}</th><th scope="col">{esc(agreement)}</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></details>"
    )


RECORDING: RecordingView[RecordedState, None] = RecordingView(
    kinds=("tcp", "capture"), trace=build, picture=picture, static=replay_panel
)
