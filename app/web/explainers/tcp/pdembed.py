"""A packetdrill run in the generic player (issue 25): ``/embed/tcp/packetdrill?s=…`` (or
``?example=…``) is the chrome-free player of a script's run against the model, for a slide.

Each step is one script line (comments and blank lines are skipped, as on the page). Its
picture holds the verdict, the script around the line (each line marked ✓, ✗ or ?) and the
model's ladder: the segments the model sent and the script injected up to this line, the
line's own drawn bold. Its fields table compares the script's expectation with the model's
answer field by field; its narration says whether the line matched, why not, and what the
model did (each with the kernel function). Keys, the postMessage API, themes and controls are
the player's own (``embed/player.html``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, TypedDict
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from app.sim.core import Field, Frame, Message, Trace, msg
from app.sim.core.explainer import ResultKind
from app.sim.core.i18n import join
from app.sim.tcp.explainer import TcpExplainer
from app.sim.tcp.packetdrill.runner import DEFAULT_TOLERANCE_US, LineResult, Result
from app.web import i18n
from app.web.deps import Autoplay, Controls, StepQuery, Theme
from app.web.explainers.tcp import packetdrill as pd
from app.web.player import FRAME_CHUNK_MAX, render_embed, render_frame_chunk
from app.web.plugin import Plugin
from app.web.site import Site
from app.web.sources import SiteDep, Source
from app.web.svgtext import advance, attr, esc

# One column, as wide as an embed's picture box (960 px less the narration): the verdict, the
# script around the step's line, then the ladder; every text at 16 px, so the player need not
# zoom it (and cut the ladder off) to reach its type floor.
WIDTH = 600
FONT = 16
SRC_ROWS = 7  # script lines shown around the step's line
SRC_TOP = 50
SRC_ROW = 22
SRC_CHARS = 52  # characters of a script line that fit its pane (16 px monospace)
LANE = {">": 110.0, "<": 560.0}  # the model's lane, the script's lane (x)
LAD_HEAD = SRC_TOP + SRC_ROWS * SRC_ROW + 14
LAD_TOP = LAD_HEAD + 26
LAD_ROW = 38
LAD_ROWS = 5
HEIGHT = LAD_TOP + LAD_ROW * LAD_ROWS + 34
GLYPH = {"match": "✓", "mismatch": "✗", "unsupported": "?"}
STATUS_WORD: dict[str, Message] = {
    "match": msg("match"),
    "mismatch": msg("mismatch"),
    "unsupported": msg("unsupported"),
}
MAX_MODEL_NOTES = 6  # the model's own narrations a step's text carries at most


class PdStep(TypedDict):
    line: int  # the script line this step shows
    status: str  # match | mismatch | unsupported
    frames: list[int]  # the run's frames this line caused
    upto: int  # the ladder shows the run's segments of frames < upto
    focus: list[int]  # indexes (in summary["segments"]) of the segments drawn bold


class _PdSim(TcpExplainer):
    """The TCP explainer with a packetdrill line's outcomes as result kinds (the badge)."""

    result_kinds = (
        *TcpExplainer.result_kinds,
        ResultKind(key="match", label=msg("match"), tone="ok"),
        ResultKind(key="mismatch", label=msg("mismatch"), tone="fatal"),
        ResultKind(key="unsupported", label=msg("unsupported"), tone="warn"),
    )


PD_SIM = _PdSim()


# A segment here is the runner's RunFrame.segment (a JSON object) plus its frame and time.
def _seg_text(seg: dict[str, Any]) -> str:
    """A segment as a script writes it: ``P. 1:2001(2000) ack 1 win 65535``."""
    text = f"{seg.get('flags') or '.'} {seg.get('seq')}:{seg.get('end', seg.get('seq'))}"
    text += f"({seg.get('len', 0)})"
    if seg.get("ack") is not None:
        text += f" ack {seg['ack']}"
    if seg.get("win") is not None:
        text += f" win {seg['win']}"
    return text


def _segments(res: Result) -> list[dict[str, Any]]:
    """Every segment of the run in order: the model's (``>``) and the injected ones (``<``),
    each with the frame it belongs to."""
    written = {r.line: r.expected for r in res.lines if r.kind == "packet" and r.expected}
    out = []
    for f in res.frames:
        if f.segment is None or f.segment.get("dir") not in LANE:
            continue
        seg = {**f.segment, "frame": f.index, "t_ms": f.t_ms}
        if seg["dir"] == "<":  # an injected segment: as its script line wrote it
            line = written.get(f.line) or {}
            seg.update({k: line[k] for k in ("end", "ack", "win") if line.get(k) is not None})
        out.append(seg)
    return out


def _focus(r: LineResult, segs: list[dict[str, Any]]) -> list[int]:
    """The segments a step draws bold: those its own frames sent or injected; for an expected
    outbound packet, the model's segments it was compared with (by sequence range)."""
    own = [i for i, s in enumerate(segs) if s["frame"] in r.frames]
    if own or r.kind != "packet" or not r.got or "seq" not in r.got:
        return own
    lo, hi = int(r.got["seq"]), int(r.got.get("end", r.got["seq"]))
    return [
        i
        for i, s in enumerate(segs)
        if s["dir"] == ">"
        and lo <= int(s["seq"])
        and int(s.get("end", s["seq"])) <= max(hi, lo)
        and abs(float(s["t_ms"]) - float(r.got.get("t_ms") or 0.0)) < 1e-6
    ]


def _steps(res: Result, segs: list[dict[str, Any]]) -> list[PdStep]:
    steps: list[PdStep] = []
    seen = -1
    for r in res.lines:
        if r.kind == "comment" or r.status == "comment":
            continue
        seen = max([seen, *r.frames])
        focus = _focus(r, segs)
        upto = max([seen + 1, *(segs[i]["frame"] + 1 for i in focus)])
        steps.append(
            {
                "line": r.line,
                "status": r.status,
                "frames": list(r.frames),
                "upto": upto,
                "focus": focus,
            }
        )
    return steps


def _narration(r: LineResult, res: Result) -> Message:
    """The step's words: the line's outcome (with the reasons of a mismatch), then what the
    model did meanwhile."""
    if r.status == "match":
        head = msg("Line {line} matches the script.", line=r.line)
    elif r.status == "unsupported":
        head = msg("Line {line} is not supported: {why}", line=r.line, why=join("; ", r.reasons))
    else:
        head = msg(
            "Line {line} differs from the script: {why}", line=r.line, why=join("; ", r.reasons)
        )
    said = [res.frames[i].narration for i in r.frames[:MAX_MODEL_NOTES]]
    return join(" ", [head, *said])


def _fields(r: LineResult) -> tuple[Field, ...]:
    """Field by field: the script's value and the model's (changed when they differ)."""
    step = {"expected": r.expected, "got": r.got, "diffs": r.diffs}
    script_w, model_w = i18n.render(msg("script expects")), i18n.render(msg("model"))
    out = []
    for row in pd.compare_rows(step):  # the page's own comparison
        e = "—" if row["expected"] is None else row["expected"]
        g = "—" if row["got"] is None else row["got"]
        mark = "✗" if row["bad"] else "✓"
        out.append(
            Field(
                name=row["field"],
                value=f"{script_w}: {e} · {model_w}: {g} {mark}",
                changed=bool(row["bad"]),
            )
        )
    return tuple(out)


def build_trace(res: Result, text: str) -> Trace[PdStep, None]:
    """The run as a player's trace: one frame per script line that is not a comment. Words
    are rendered here, so build it in the reader's language (``i18n.speaking``)."""
    segs = _segments(res)
    steps = _steps(res, segs)
    by_line = {r.line: r for r in res.lines}
    lines = text.split("\n")
    frames = []
    for i, st in enumerate(steps):
        r = by_line[st["line"]]
        src = r.source or next(
            (res.frames[k].source for k in r.frames if res.frames[k].source), None
        )
        t = r.t_ms if r.t_ms is not None else (res.frames[r.frames[0]].t_ms if r.frames else None)
        frames.append(
            Frame(
                index=i,
                op=lines[r.line - 1].strip()[:120] if r.line <= len(lines) else "",
                result=r.status,
                narration=_narration(r, res),
                source=src,
                state=st,
                fields=_fields(r),
                mark="loss" if r.status != "match" else None,
                time=None if t is None else t / 1000.0,
            )
        )
    v = res.verdict
    verdict = (
        "✓ " + msg("Pass: every line matches.")
        if v.passed
        else "✗ " + msg("Fails at line {line}: {why}", line=v.line or 0, why=v.reason)
    )
    return Trace(
        explainer="tcp",
        sim_version=PD_SIM.sim_version,
        params={},
        frames=tuple(frames),
        series=None,
        summary={
            "lines": lines,
            "status": {st["line"]: st["status"] for st in steps},
            "segments": segs,
            "verdict": i18n.render(verdict),
            "passed": v.passed,
            "model": i18n.render(msg("Linux 6.4 (model)")),
            "peer": i18n.render(msg("the script")),
        },
    )


# --- the picture ---------------------------------------------------------------------------

STYLE = (
    "<style>"
    ".pd-svg text { fill: var(--fg); }"
    ".pd-svg .muted { fill: var(--muted); }"
    ".pd-svg .src { font-family: ui-monospace, monospace; font-size: 16px; }"
    ".pd-svg .now-row { fill: #F0E442; opacity: 0.35; }"
    ".pd-svg .ok { fill: #009E73; font-weight: 700; }"
    ".pd-svg .bad { fill: #D55E00; font-weight: 700; }"
    ".pd-svg .lane { stroke: var(--muted); stroke-dasharray: 4 4; }"
    ".pd-svg .seg line { stroke: var(--muted); stroke-width: 1.5; }"
    ".pd-svg .seg path { fill: var(--muted); }"
    ".pd-svg .seg.now line { stroke: #0072B2; stroke-width: 3.5; }"
    ".pd-svg .seg.now path { fill: #0072B2; }"
    ".pd-svg .seg.now text.lbl { font-weight: 700; }"
    ".pd-svg .seg.rst line { stroke: #D55E00; }"
    ".pd-svg .lbl { font-family: ui-monospace, monospace; font-size: 16px; }"
    ".pd-svg .head { font-size: 16px; font-weight: 700; }"
    ".pd-svg .panel { fill: var(--panel); stroke: var(--line); }"
    "</style>"
)


def _fit(text: str, n: int) -> str:
    """``text`` cut to about ``n`` narrow characters' width (a CJK character counts two)."""
    if advance(text, 1.0, 2.0) <= n:
        return text
    while text and advance(text, 1.0, 2.0) > n - 1:
        text = text[:-1]
    return text + "…"


def _source_pane(summary: dict[str, Any], line: int) -> list[str]:
    lines: list[str] = summary["lines"]
    status: dict[int, str] = summary["status"]
    first = max(1, min(line - SRC_ROWS // 2, len(lines) - SRC_ROWS + 1))
    out = []
    for row, n in enumerate(range(first, min(first + SRC_ROWS, len(lines) + 1))):
        y = SRC_TOP + row * SRC_ROW
        if n == line:
            out.append(
                f'<rect class="now-row" x="4" y="{y - 16}" width="{WIDTH - 8}" height="{SRC_ROW}"'
                ' data-focus="1"/>'
            )
        st = status.get(n, "") if n <= line else ""
        glyph = GLYPH.get(st, "")
        cls = "ok" if st == "match" else "bad"
        out.append(f'<text class="src muted" x="40" y="{y}" text-anchor="end">{n}</text>')
        if glyph:
            out.append(f'<text class="{cls}" x="48" y="{y}" font-size="{FONT}">{glyph}</text>')
        weight = ' font-weight="700"' if n == line else ""
        out.append(
            f'<text class="src" x="66" y="{y}"{weight} translate="no"'
            f' data-line="{n}">{esc(_fit(lines[n - 1].rstrip(), SRC_CHARS))}</text>'
        )
    return out


def _arrow(row: int, seg: dict[str, Any], now: bool) -> str:
    x1 = LANE[str(seg["dir"])]
    x2 = LANE["<"] if x1 == LANE[">"] else LANE[">"]
    y1 = LAD_TOP + row * LAD_ROW
    y2 = y1 + LAD_ROW - 12
    head = -9 if x2 > x1 else 9
    cls = "seg now" if now else "seg"
    if "R" in str(seg.get("flags")):
        cls += " rst"
    mid = (x1 + x2) / 2
    return (
        f'<g class="{cls}" data-dir="{attr(seg["dir"])}">'
        f'<text class="muted" x="{x1 + 6 if x1 < x2 else x1 - 6}" y="{y1 + 24}"'
        f' text-anchor="{"start" if x1 < x2 else "end"}" font-size="{FONT}">{seg["t_ms"]:g} ms</text>'
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>'
        f'<path d="M{x2} {y2} l{head} -3 l1 -8 z"/>'
        f'<text class="lbl" x="{mid}" y="{(y1 + y2) / 2 - 8}" text-anchor="middle"'
        f' translate="no">{esc(_fit(_seg_text(seg), 32))}</text></g>'
    )


def _ladder(summary: dict[str, Any], st: PdStep) -> list[str]:
    segs: list[dict[str, Any]] = summary["segments"]
    shown = [i for i, s in enumerate(segs) if s["frame"] < st["upto"]][-LAD_ROWS:]
    out = []
    for key, x in LANE.items():
        name = summary["model"] if key == ">" else summary["peer"]
        out.append(
            f'<text class="head" x="{x if key == ">" else WIDTH - 4}" y="{LAD_HEAD}"'
            f' text-anchor="{"middle" if key == ">" else "end"}">{esc(name)}</text>'
            f'<line class="lane" x1="{x}" y1="{LAD_TOP - 8}" x2="{x}"'
            f' y2="{LAD_TOP + LAD_ROW * LAD_ROWS}"/>'
        )
    for row, i in enumerate(shown):
        out.append(_arrow(row, segs[i], i in st["focus"]))
    return out


def picture(trace: Trace[PdStep, None], frame: Frame[PdStep]) -> str:
    summary = dict(trace.summary)
    st = frame.state
    cls = "ok" if summary["passed"] else "bad"
    parts = [
        STYLE,
        f'<text class="{cls}" x="8" y="20" font-size="{FONT}">{esc(_fit(summary["verdict"], 60))}</text>',
        *_source_pane(summary, st["line"]),
        *_ladder(summary, st),
    ]
    word = i18n.render(STATUS_WORD.get(st["status"], msg("match")))
    glyph = GLYPH.get(st["status"], "")
    s_cls = "ok" if st["status"] == "match" else "bad"
    title = msg("Line {line}: {status}", line=st["line"], status=word)
    parts.append(
        f'<text class="{s_cls}" x="8" y="{HEIGHT - 12}" font-size="{FONT}" data-status='
        f'"{attr(st["status"])}">{glyph} {esc(i18n.render(title))}</text>'
    )
    return (
        f'<svg class="pd-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
        f' aria-label="{attr(i18n.render(title))}" xmlns="http://www.w3.org/2000/svg">'
        f"{''.join(parts)}</svg>"
    )


# --- the source and the routes -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketdrillSource(Source):
    """A packetdrill run as the player's source: its links are the packetdrill page's."""

    query: str = ""  # s= or example=, and tolerance_us when not the default

    @property
    def kind(self) -> str:
        return "packetdrill"

    @property
    def page_path(self) -> str:
        return f"/explainers/tcp/packetdrill?{self.query}"

    @property
    def embed_path(self) -> str:
        return f"/embed/tcp/packetdrill?{self.query}"

    @property
    def walkthrough_key(self) -> str:
        return ""

    @property
    def player_extra(self) -> dict[str, Any]:
        return {"frames_url": f"/embed/tcp/packetdrill/frames?{self.query}"}


def run_query(s: str | None, example: str | None, tolerance_us: int, lang: str | None) -> str:
    q: dict[str, str] = {"s": s} if s is not None else {"example": example or "basic-client"}
    if tolerance_us != DEFAULT_TOLERANCE_US:
        q["tolerance_us"] = str(tolerance_us)
    if lang:
        q["lang"] = lang
    return urlencode(q)


def _opened(
    request: Request, site: Site, s: str | None, example: str, tolerance_us: int
) -> PacketdrillSource:
    """The source of a shared script (``s``) or an example: 422 naming ``query.s`` for a
    damaged link, ``query.example`` for an unknown example."""
    lang = i18n.language_of(request)
    if s is not None:
        text, title = pd.shared_script(s), msg("A shared packetdrill script")
    else:
        found = pd.example_text(example, lang)
        if found is None:
            raise pd.unknown_example(example)
        text, title = found, pd.EXAMPLES[example]
    res = pd.execute(pd.check(text, allow_unsupported=True), tolerance_us)
    with i18n.speaking(lang):
        trace = build_trace(res, text)
        name = i18n.render(title)
    plugin = site.plugin("tcp")
    web = replace(
        plugin.web,
        picture=picture,
        static=None,
        still=None,
        question=None,
        actions=(),
        thumbnail=None,
    )
    query = run_query(
        s, None if s is not None else example, tolerance_us, request.query_params.get("lang")
    )
    return PacketdrillSource(
        plugin=Plugin(sim=PD_SIM, web=web, course_order=plugin.course_order),
        raw={},
        title=name,
        built=trace,
        query=query,
    )


router = APIRouter()
ShareQuery = Annotated[str | None, Query(max_length=8000, description="a shared script")]
ExampleQuery = Annotated[str, Query(max_length=40, description="an example's name")]
ToleranceQuery = Annotated[int, Query(ge=0, le=1_000_000)]


@router.get("/embed/tcp/packetdrill", response_class=HTMLResponse, tags=["embed"])
def packetdrill_embed(
    request: Request,
    site: SiteDep,
    s: ShareQuery = None,
    example: ExampleQuery = "basic-client",
    tolerance_us: ToleranceQuery = DEFAULT_TOLERANCE_US,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    """A packetdrill run's player without the site's chrome, for an iframe in slides."""
    source = _opened(request, site, s, example, tolerance_us)
    assert source.built is not None
    return render_embed(
        request,
        source,
        source.built,
        step=step,
        controls=controls,
        theme=theme,
        autoplay=autoplay,
    )


@router.get("/embed/tcp/packetdrill/frames", response_class=HTMLResponse, include_in_schema=False)
def packetdrill_embed_frames(
    request: Request,
    site: SiteDep,
    s: ShareQuery = None,
    example: ExampleQuery = "basic-client",
    tolerance_us: ToleranceQuery = DEFAULT_TOLERANCE_US,
    start: int = Query(0, ge=0, le=1_000_000),
    count: int = Query(60, ge=1, le=FRAME_CHUNK_MAX),
) -> Response:
    """More of an embedded run's frames (the player fetches those beyond its page's window)."""
    source = _opened(request, site, s, example, tolerance_us)
    trace = source.built
    assert trace is not None
    return render_frame_chunk(request, source.plugin, trace, start, count)
