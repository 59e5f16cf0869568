"""The congestion-control explainer's question at a step: what cwnd or ssthresh will a flow
have after its next loss, recovery exit or round trip?

The right answer is the trace's; the wrong ones are what the other rules would give from the
same numbers: Reno's halving (``tcp_reno_ssthresh``, tcp_cong.c:517: cwnd / 2, at least 2)
against CUBIC's multiplicative decrease (``cubictcp_recalc_ssthresh``, tcp_cubic.c:341:
cwnd × 717 / 1024, at least 2), slow start's doubling against congestion avoidance's one more
segment, and "nothing changes"."""

from __future__ import annotations

from collections.abc import Callable

from app.sim.congestion.run import CwndSeries, CwndState
from app.sim.core import Frame, Message, Trace, msg
from app.web.quiz import Question

BETA = 717  # CUBIC's beta, of BICTCP_BETA_SCALE (1024): about 0.7
BETA_SCALE = 1024


def reno_ssthresh(cwnd: int) -> int:
    return max(cwnd >> 1, 2)


def cubic_ssthresh(cwnd: int) -> int:
    return max(cwnd * BETA // BETA_SCALE, 2)


def _n(frame: Frame[CwndState], key: str) -> int | None:
    value = frame.state.get(key)
    return int(value) if isinstance(value, int | float) else None


def _loss(before: Frame[CwndState], at: Frame[CwndState]) -> Question | None:
    cwnd, ssthresh = _n(at, "cwnd"), _n(at, "ssthresh")
    if cwnd is None or ssthresh is None:
        return None
    options = [ssthresh, reno_ssthresh(cwnd), cubic_ssthresh(cwnd), cwnd]
    prompt = msg(
        "Flow {flow} ({cc}) has cwnd {cwnd} when it detects a loss at step {at}. "
        "What will ssthresh be?",
        flow=int(at.state.get("flow", 0)),
        cc=str(at.state.get("cc", "")),
        cwnd=cwnd,
        at=at.index,
    )
    return _choices(prompt, ssthresh, options, at)


def _recovery_exit(before: Frame[CwndState], at: Frame[CwndState]) -> Question | None:
    cwnd, ssthresh, was = _n(at, "cwnd"), _n(before, "ssthresh"), _n(before, "cwnd")
    if cwnd is None or ssthresh is None or was is None:
        return None
    options = [cwnd, ssthresh, was, reno_ssthresh(ssthresh), 1]
    prompt = msg(
        "Flow {flow} ({cc}) is in recovery with cwnd {was} and ssthresh {ssthresh}. "
        "What will cwnd be when recovery ends (step {at})?",
        flow=int(at.state.get("flow", 0)),
        cc=str(at.state.get("cc", "")),
        was=was,
        ssthresh=ssthresh,
        at=at.index,
    )
    return _choices(prompt, cwnd, options, at)


def _round(before: Frame[CwndState], at: Frame[CwndState]) -> Question | None:
    cwnd, was = _n(at, "cwnd"), _n(before, "cwnd")
    if cwnd is None or was is None:
        return None
    options = [cwnd, was * 2, was + 1, was, reno_ssthresh(was)]
    prompt = msg(
        "Flow {flow} ({cc}) has cwnd {was}. What will cwnd be after the next round trip "
        "(step {at})?",
        flow=int(at.state.get("flow", 0)),
        cc=str(at.state.get("cc", "")),
        was=was,
        at=at.index,
    )
    return _choices(prompt, cwnd, options, at)


def _choices(prompt: Message, right: int, options: list[int], at: Frame[CwndState]) -> Question:
    values = sorted(set(options))
    if len(values) < 2:
        values = sorted({right, right + 1})
    return Question(
        prompt=prompt,
        choices=tuple(Message("{value}", {"value": v}) for v in values),
        correct=values.index(right),
        answer_step=at.index,
        explanation=at.narration,
    )


Asker = Callable[[Frame[CwndState], Frame[CwndState]], Question | None]
ASKERS: dict[str, Asker] = {"loss": _loss, "recovery_exit": _recovery_exit, "round": _round}
NO_SSTHRESH = ("bbr",)  # BBR sets no ssthresh on loss: its questions would be about other rules


def question(trace: Trace[CwndState, CwndSeries], step: int) -> Question | None:
    """About the same flow's next loss, recovery exit or round after ``step`` (the numbers just
    before it are that flow's at its previous step); None for BBR and when none follows."""
    if not 0 <= step < len(trace.frames):
        return None
    flow = trace.frames[step].state.get("flow")
    last = trace.frames[step]
    for frame in trace.frames[step + 1 :]:
        if frame.state.get("flow") != flow:
            continue
        asker = ASKERS.get(str(frame.state.get("event")))
        if asker is not None and str(frame.state.get("cc")) not in NO_SSTHRESH:
            found = asker(last, frame)
            if found is not None:
                return found
        last = frame
    return None
