"""A user's ``path`` recording beside the packet-path walks (issue 23): each recorded stack
(outermost call first, as the explainer draws its own) beside the walk's stack at the matching
step, functions both have highlighted, then the functions the model skips and the ones the
recording lacks. The trace comes from :func:`app.sim.path.recorded.recorded_trace`."""

from __future__ import annotations

from html import escape

from app.sim.core import Frame, Message, msg
from app.sim.path.recorded import PATH_NAMES, RecordedPathState, RecordedPathTrace, recorded_trace
from app.web import i18n
from app.web.plugin import RecordingView

# The picture's own rules (the recordings page links no explainer stylesheet): the shared
# functions lit in both columns, the others muted, the two stacks side by side where they fit.
# A stack is often deeper than the screen: the picture keeps to the player's picture row
# (--fit-h, player.js), the stacks and each list scrolling in boxes of their own.
STYLE = (
    ".rec-path{display:flex;flex-direction:column;gap:.5rem;"
    "max-height:calc(var(--fit-h,100vh) - 8rem)}"
    ".rec-path>*{flex:none}"
    ".rec-path>.rec-stacks{flex:0 1 auto;min-height:4rem;overflow:auto}"
    ".rec-list{max-height:2.9em;overflow:auto}"
    ".rec-stacks{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:.8rem}"
    ".rec-stacks h2{font-size:.95rem;margin:.2rem 0}"
    ".rec-stack{margin:0;padding-left:2rem;font-family:var(--mono,monospace);font-size:.85rem}"
    ".rec-stack li{padding:0 .3rem;border-radius:3px;color:var(--muted,#5b6470)}"
    ".rec-stack li.both{background:var(--hl,#fff3c4);color:inherit;font-weight:600}"
    ".rec-stack li.top{outline:2px solid var(--blue,#0072B2)}"
    ".rec-list{margin:.2rem 0;font-size:.9rem}"
    ".rec-list code{margin-right:.4rem}"
)


def _t(message: Message | str) -> str:
    return escape(i18n.render(message))


def _stack(functions: list[str], shared: set[str], key: str) -> str:
    items = []
    for depth, fn in enumerate(functions):
        classes = ["both" if fn in shared else "only"]
        if depth == len(functions) - 1:
            classes.append("top")
        items.append(
            f'<li class="{" ".join(classes)}" data-function="{escape(fn)}" translate="no">'
            f"{escape(fn)}</li>"
        )
    return f'<ol class="rec-stack" id="rec-stack-{key}">{"".join(items)}</ol>'


def _list(label: Message, functions: list[str], key: str) -> str:
    if functions:
        names = "".join(f"<code>{escape(f)}</code>" for f in functions)
    else:
        names = _t(msg("none"))
    return (
        # tabindex: the list scrolls in its box, so a keyboard can reach it
        f'<p class="rec-list" id="rec-{key}" tabindex="0" data-count="{len(functions)}">'
        f"<b>{_t(label)}</b> {names}</p>"
    )


def picture(trace: RecordedPathTrace, frame: Frame[RecordedPathState]) -> str:
    """The recorded stack beside the model's, and what each has alone."""
    st = frame.state
    shared = set(st["both"])
    head = msg(
        "packet {n} · {path} · {dev} · {t} ms",
        n=st["packet"] + 1,
        path=PATH_NAMES.get(st["path"], msg("{path}", path=st["path"])),
        dev=st["dev"] or "–",
        t=f"{st['t_ms']:.3f}",
    )
    rec_title = msg("recorded stack, outermost first ({n} deep)", n=len(st["recorded"]))
    model_title = msg(
        "the model's stack at step {step} of its {walk} walk ({n} deep)",
        step=st["model_step"],
        walk=st["model_walk"],
        n=len(st["model"]),
    )
    reason = f' · <span translate="no">reason {escape(st["reason"])}</span>' if st["reason"] else ""
    return (
        f"<style>{STYLE}</style>"
        f'<div class="rec-path" id="rec-path" data-event="{escape(st["event"])}" '
        f'data-path="{escape(st["path"])}" data-walk="{escape(st["model_walk"])}" '
        f'data-model-step="{st["model_step"]}">'
        f'<p class="rec-head"><b translate="no">{escape(st["event"])}</b> · {_t(head)}{reason}</p>'
        '<div class="rec-stacks" tabindex="0">'
        f"<section><h2>{_t(rec_title)}</h2>{_stack(st['recorded'], shared, 'recorded')}</section>"
        f"<section><h2>{_t(model_title)}</h2>{_stack(st['model'], shared, 'model')}</section>"
        "</div>"
        + _list(msg("In both:"), st["both"], "both")
        + _list(msg("The model skips:"), st["skipped"], "skipped")
        + _list(msg("The recording lacks:"), st["missing"], "missing")
        + "</div>"
    )


def static(trace: RecordedPathTrace) -> str:
    """One line on the whole recording: packets, events, which walks."""
    s = trace.summary
    paths: dict[str, int] = s.get("paths", {})  # walk -> packets
    kinds = ", ".join(
        f"{i18n.render(PATH_NAMES[k]) if k in PATH_NAMES else k} × {n}" for k, n in paths.items()
    )
    line = msg(
        "{events} recorded events in {packets} packets; {shown} shown, each beside the walk "
        "that models its path ({kinds}).",
        events=s.get("events", 0),
        packets=s.get("packets", 0),
        shown=s.get("shown_packets", 0),
        kinds=kinds,
    )
    kernel = s.get("kernel")
    recorded_on = msg("Recorded on Linux {release}.", release=str(kernel))
    extra = f" {_t(recorded_on)}" if kernel else ""
    return f'<p class="summary-line rec-path-summary">{_t(line)}{extra}</p>'


RECORDING: RecordingView[RecordedPathState, None] = RecordingView(
    kinds=("path",),
    trace=recorded_trace,
    picture=picture,
    static=static,
)
