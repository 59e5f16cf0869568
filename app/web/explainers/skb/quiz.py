"""The sk_buff explainer's question at a step: where will ``data`` point after the next
pointer op (skb_push, skb_pull, skb_reserve, skb_put)?

The right answer is the trace's offset (bytes from ``head``); the wrong ones are what the other
ops would have done with the same length: moving ``data`` the other way (push against pull),
not moving it (what skb_put does: it moves ``tail``), and where ``tail`` was."""

from __future__ import annotations

from app.sim.core import Frame, Message, Trace, msg
from app.sim.skbuff.state import SkbSnapshot, SkbState
from app.web.quiz import Question

POINTER_OPS = ("skb_push", "skb_pull", "skb_reserve", "skb_put")


def _skb(frame: Frame[SkbState], name: str) -> SkbSnapshot | None:
    return next((s for s in frame.state["skbs"] if s["name"] == name), None)


def question(trace: Trace[SkbState, None], step: int) -> Question | None:
    """About the first pointer op after ``step`` on an skb that exists at ``step``."""
    if not 0 <= step < len(trace.frames):
        return None
    now = trace.frames[step]
    for frame in trace.frames[step + 1 :]:
        if frame.op not in POINTER_OPS:
            continue
        name = frame.state["primary"]
        before, after = _skb(now, name), _skb(frame, name)
        if before is None or after is None:
            return None
        return _ask(frame, name, before, after)
    return None


def _ask(frame: Frame[SkbState], name: str, before: SkbSnapshot, after: SkbSnapshot) -> Question:
    moved = (
        abs(after["data"] - before["data"])
        or abs(after["tail"] - before["tail"])
        or abs(after["len"] - before["len"])
    )
    data = before["data"]
    options = {after["data"], data, data + moved, before["tail"]}
    if data - moved >= 0:
        options.add(data - moved)
    values = sorted(options)
    return Question(
        prompt=msg(
            "{skb}->data is {data} bytes from head (tail {tail}). Step {at} calls {op}: "
            "where will data point?",
            skb=name,
            data=data,
            tail=before["tail"],
            at=frame.index,
            op=frame.op,
        ),
        choices=tuple(Message("{value}", {"value": v}) for v in values),
        correct=values.index(after["data"]),
        answer_step=frame.index,
        explanation=frame.narration,
    )
