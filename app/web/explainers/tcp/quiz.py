"""The TCP explainer's question at a step: which RFC 9293 state does an endpoint move to next?

The right answer is the next state change in the trace after the step; the wrong ones are the
other states RFC 9293's state diagram (its Figure 5) allows from the state the endpoint is in,
so each choice is a move a socket in that state could make."""

from __future__ import annotations

from app.sim.core import Frame, Message, Trace, msg
from app.sim.tcp.state import TcpState
from app.web.quiz import Question

# RFC 9293 Figure 5: from each state, the states one event can lead to.
SUCCESSORS: dict[str, tuple[str, ...]] = {
    "CLOSED": ("LISTEN", "SYN_SENT"),
    "LISTEN": ("SYN_RECEIVED", "SYN_SENT", "CLOSED"),
    "SYN_SENT": ("SYN_RECEIVED", "ESTABLISHED", "CLOSED"),
    "SYN_RECEIVED": ("ESTABLISHED", "FIN_WAIT_1", "LISTEN", "CLOSED"),
    "ESTABLISHED": ("FIN_WAIT_1", "CLOSE_WAIT", "CLOSED"),
    "FIN_WAIT_1": ("FIN_WAIT_2", "CLOSING", "TIME_WAIT", "CLOSED"),
    "FIN_WAIT_2": ("TIME_WAIT", "CLOSED"),
    "CLOSING": ("TIME_WAIT", "CLOSED"),
    "CLOSE_WAIT": ("LAST_ACK", "CLOSED"),
    "LAST_ACK": ("CLOSED",),
    "TIME_WAIT": ("CLOSED",),
}
ORDER = tuple(SUCCESSORS)  # the diagram's order, top to bottom
WHO = {"client": msg("client"), "server": msg("server")}
MAX_CHOICES = 4


def _states(frame: Frame[TcpState]) -> dict[str, str]:
    return {name: e["rfc"] for name, e in frame.state["endpoints"].items()}


def question(trace: Trace[TcpState, None], step: int) -> Question | None:
    """Which state an endpoint enters at the next state change after ``step``; None when no
    endpoint changes state after it."""
    if not 0 <= step < len(trace.frames):
        return None
    before = _states(trace.frames[step])
    for frame in trace.frames[step + 1 :]:
        after = _states(frame)
        moved = [e for e in sorted(after) if before.get(e) != after[e] and e in before]
        if moved:
            who = moved[0]
            return _ask(who, before[who], after[who], frame)
    return None


def _ask(who: str, state: str, nxt: str, frame: Frame[TcpState]) -> Question:
    wrong = [s for s in SUCCESSORS.get(state, ()) if s != nxt]
    wrong += [s for s in ORDER if s not in wrong and s not in (state, nxt)]  # too few: neighbours
    names = sorted([nxt, *wrong[: MAX_CHOICES - 1]], key=ORDER.index)
    return Question(
        prompt=msg(
            "The {who} is in {state}. Which state does it move to next (step {at})?",
            who=WHO.get(who, Message("{value}", {"value": who})),
            state=state,
            at=frame.index,
        ),
        choices=tuple(Message("{value}", {"value": n}) for n in names),
        correct=names.index(nxt),
        answer_step=frame.index,
        explanation=frame.narration,
    )
