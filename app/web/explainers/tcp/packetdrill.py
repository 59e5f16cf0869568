"""packetdrill in the TCP explainer (issue 25): run a script against the model's local
endpoint (app.sim.tcp.packetdrill) from the JSON API or from a page that steps through it.

``POST /api/v1/explainers/tcp/packetdrill`` ``{"script": "...", "tolerance_us": 4000}`` →
``{"verdict": {"pass", "line", "reason"}, "lines": [...], "frames": [...]}``. A syntax error,
an unsupported construct and a script over the run limit are 422 naming the line; a script
over 64 KB is 413. With ``"kernel": true`` the script also runs on this machine's kernel
(app.sim.tcp.packetdrill.realkernel; root and a TUN device needed, else 503 naming why) and
each line carries ``"kernel": {...}``. The page ``/explainers/tcp/packetdrill`` takes a pasted or uploaded script
or one of the examples under ``content/packetdrill/``."""

from __future__ import annotations

import base64
import binascii
import zlib
from pathlib import Path
from typing import Annotated, Any, TypedDict

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from app.sim.core import ParamError, ParamIssue, msg
from app.sim.core.i18n import Message
from app.sim.tcp.packetdrill.ast import Option, Script
from app.sim.tcp.packetdrill.lexer import ScriptSyntaxError
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.realkernel import (
    KernelResult,
    KernelRunError,
    run_kernel,
    unavailable,
)
from app.sim.tcp.packetdrill.runner import (
    DEFAULT_TOLERANCE_US,
    LineResult,
    Result,
    RunFrame,
    RunLimitError,
    run,
)
from app.sim.tcp.packetdrill.settings import knobs
from app.web import i18n
from app.web.errors import wants_json
from app.web.templating import render

MAX_SCRIPT_BYTES = 64 * 1024
MAX_TOLERANCE_US = 1_000_000
MAX_SHARE_CHARS = 8000  # a share link's script, compressed and base64url-encoded, at most
EXAMPLES_DIR = Path(__file__).resolve().parents[4] / "content" / "packetdrill"
TEMPLATE = "explainers/tcp/packetdrill.html"
# The examples in the picker's order, each with its title
EXAMPLES: dict[str, Message] = {
    "basic-client": msg("Basic client: connect, write, close first"),
    "basic-server": msg("Basic server: accept, read, answer, close"),
    "close-paths": msg("Close paths: the peer closes first (CLOSE_WAIT, LAST_ACK)"),
    "rst-challenge-ack": msg("RST and challenge ACK (RFC 5961)"),
    "delayed-ack": msg("Delayed ACK and ping-pong mode"),
    "ping-pong": msg("Ping-pong mode: ACKs ride on replies until the timer fires"),
    "zero-window": msg("Zero window and the persist timer"),
    "send-buffer": msg("A write bigger than the send buffer blocks (SO_SNDBUF)"),
    "fast-retransmit": msg("Fast retransmit after three duplicate ACKs"),
    "spurious-rto": msg("A spurious RTO found out by F-RTO (tcp_frto)"),
}

router = APIRouter()


class PacketdrillRequest(BaseModel):
    script: str = Field(description="the packetdrill script (at most 64 KB)")
    tolerance_us: int = Field(
        default=DEFAULT_TOLERANCE_US,
        ge=0,
        le=MAX_TOLERANCE_US,
        description="how far (µs) a packet or a return may be from its script time",
    )
    kernel: bool = Field(
        default=False,
        description="also run the script on this machine's kernel (needs root and a TUN device)",
    )


def example_text(slug: str, lang: str = "en") -> str | None:
    """An example script; in Chinese, its translation (the same lines, comments translated)
    from content/zh-CN/packetdrill/ when there is one."""
    if slug not in EXAMPLES:
        return None
    if lang != "en":
        local = EXAMPLES_DIR.parent / lang / "packetdrill" / f"{slug}.pkt"
        if local.is_file():
            return local.read_text(encoding="utf-8")
    return (EXAMPLES_DIR / f"{slug}.pkt").read_text(encoding="utf-8")


def too_big(script: str) -> bool:
    return len(script.encode("utf-8", "surrogatepass")) > MAX_SCRIPT_BYTES


def check(script: str, *, allow_unsupported: bool) -> Script:
    """The parsed script; ParamError (422) for a syntax error and, unless allowed, for every
    unsupported construct, each naming its line."""
    try:
        parsed = parse(script)
    except ScriptSyntaxError as exc:
        raise ParamError.single(
            ("script", exc.line, exc.col),
            msg("line {line}, column {col}: {why}", line=exc.line, col=exc.col, why=exc.why),
        ) from None
    bad = _bad_settings(parsed)
    if bad:
        raise ParamError(bad)
    if parsed.unsupported and not allow_unsupported:
        raise ParamError(
            [
                ParamIssue(
                    loc=("script", u.line),
                    msg=msg("line {line}: not supported: {what}", line=u.line, what=u.construct),
                )
                for u in parsed.unsupported
            ]
        )
    return parsed


def _bad_settings(parsed: Script) -> list[ParamIssue]:
    """A sysctl the model has, set to a value it cannot take (not a number, out of its range),
    and a ``--tolerance_usecs`` that is not a whole number of µs within the request's limit:
    each names its line."""
    issues = [
        ParamIssue(
            loc=("script", line),
            msg=msg(
                "line {line}: {setting} is not a value the model takes for this sysctl",
                line=line,
                setting=setting,
            ),
        )
        for line, got in sorted(knobs(parsed).per_line.items())
        for setting in got.get("bad_value", ())
    ]
    for ev in parsed.events:
        if isinstance(ev, Option) and ev.name == "tolerance_usecs":
            v = ev.value.strip()
            if not (v.isdigit() and int(v) <= MAX_TOLERANCE_US):
                issues.append(
                    ParamIssue(
                        loc=("script", ev.line),
                        msg=msg(
                            "line {line}: --tolerance_usecs must be a whole number of "
                            "microseconds from 0 to {max}",
                            line=ev.line,
                            max=MAX_TOLERANCE_US,
                        ),
                    )
                )
    return issues


def execute(parsed: Script, tolerance_us: int) -> Result:
    try:
        return run(parsed, tolerance_us)
    except RunLimitError as exc:
        raise ParamError.single(("script",), exc.why) from None


def execute_kernel(parsed: Script, tolerance_us: int) -> KernelResult:
    try:
        return run_kernel(parsed, tolerance_us)
    except RunLimitError as exc:
        raise ParamError.single(("kernel",), exc.why) from None


# The run as the JSON API answers it and the page reads it: JSON objects (the runner keeps a
# line's expected/got and a frame's segment as dicts) that the page adds to, hence dict[str, Any].
def kernel_line_json(r: LineResult) -> dict[str, Any]:
    return {
        "status": r.status,
        "got": r.got,
        "diffs": r.diffs,
        "reasons": [str(m) for m in r.reasons],
        "t_ms": r.t_ms,
    }


def add_kernel(data: dict[str, Any], k: KernelResult) -> None:
    """The kernel's answer beside the model's: ``kernel`` on each line and on the run."""
    by_line = {r.line: r for r in k.lines}
    for ln in data["lines"]:
        r = by_line.get(ln["line"])
        ln["kernel"] = None if r is None else kernel_line_json(r)
    v = k.verdict
    data["kernel"] = {
        "verdict": {"pass": v.passed, "line": v.line, "reason": str(v.reason)},
        "release": k.release,
        "tolerance_us": k.tolerance_us,
        "runner_late_ms": k.slip_ms,
        "packets": list(k.packets),
    }


def _kernel_refused(request: Request) -> Message | None:
    """Why this server will not run a script on its kernel: not switched on
    (``APP_KERNEL_RUNS``), or the machine cannot (:func:`unavailable`); None when it will."""
    if not request.app.state.settings.kernel_runs:
        return msg("this server does not run scripts on its kernel (APP_KERNEL_RUNS is off)")
    return unavailable()


def _kernel_unavailable_response(why: Message) -> JSONResponse:
    return JSONResponse(
        {"detail": [{"loc": ["body", "kernel"], "msg": str(why), "type": "kernel_unavailable"}]},
        status_code=503,
    )


def line_json(r: LineResult, text: str) -> dict[str, Any]:
    return {
        "line": r.line,
        "status": r.status,
        "kind": r.kind,
        "text": text,
        "expected": r.expected,
        "got": r.got,
        "diffs": r.diffs,
        "reasons": [str(m) for m in r.reasons],
        "function": r.source.function if r.source else None,
        "source": r.source.as_dict() if r.source else None,
        "t_ms": r.t_ms,
        "frames": r.frames,
    }


def frame_json(f: RunFrame) -> dict[str, Any]:
    return {
        "index": f.index,
        "line": f.line,
        "t_ms": f.t_ms,
        "event": f.event,
        "state": f.state,
        "narration": str(f.narration),
        "source": f.source.as_dict() if f.source else None,
        "segment": f.segment,
        "call": f.call,
    }


def result_json(res: Result) -> dict[str, Any]:
    v = res.verdict
    lines = res.script.lines
    return {
        "verdict": {"pass": v.passed, "line": v.line, "reason": str(v.reason)},
        "local": res.local,
        "tolerance_us": res.tolerance_us,
        "lines": [
            line_json(r, lines[r.line - 1] if r.line <= len(lines) else "") for r in res.lines
        ],
        "frames": [frame_json(f) for f in res.frames],
    }


def _too_big_response() -> JSONResponse:
    return JSONResponse(
        {
            "detail": [
                {
                    "loc": ["body", "script"],
                    "msg": str(msg("the script is over {n} KB", n=MAX_SCRIPT_BYTES // 1024)),
                    "type": "too_large",
                }
            ]
        },
        status_code=413,
    )


@router.post("/api/v1/explainers/tcp/packetdrill", tags=["api"])
def api_packetdrill(request: Request, body: PacketdrillRequest) -> Response:
    """Run a packetdrill script against the TCP model's local endpoint (Linux 6.4)."""
    if too_big(body.script):
        return _too_big_response()
    parsed = check(body.script, allow_unsupported=False)
    res = execute(parsed, body.tolerance_us)
    with i18n.speaking(i18n.language_of(request)):
        why = _kernel_refused(request) if body.kernel else None
        if why is not None:
            return _kernel_unavailable_response(why)
        data = result_json(res)
        if body.kernel:
            try:
                kres = execute_kernel(parsed, body.tolerance_us)
            except KernelRunError as exc:
                return _kernel_unavailable_response(exc.why)
            add_kernel(data, kres)
        return JSONResponse(data)


def share_code(script: str) -> str | None:
    """The script as a share link's ``s`` (zlib, base64url), or None when too long for a URL."""
    code = base64.urlsafe_b64encode(zlib.compress(script.encode("utf-8"), 9)).decode("ascii")
    code = code.rstrip("=")
    return code if len(code) <= MAX_SHARE_CHARS else None


def shared_script(code: str) -> str:
    """A share link's script; ParamError (422) when the link is damaged or over 64 KB."""
    try:
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        z = zlib.decompressobj()
        data = z.decompress(raw, MAX_SCRIPT_BYTES + 1)
        if len(data) > MAX_SCRIPT_BYTES or z.unconsumed_tail:
            raise ValueError("too long")
        return data.decode("utf-8")
    except (ValueError, binascii.Error, zlib.error, UnicodeDecodeError):
        raise ParamError.single(
            ("query", "s"), msg("this share link is damaged; paste the script instead")
        ) from None


@router.get("/explainers/tcp/packetdrill", response_class=HTMLResponse)
def page(
    request: Request,
    example: Annotated[str, Query(max_length=40)] = "basic-client",
    tolerance_us: Annotated[int, Query(ge=0, le=MAX_TOLERANCE_US)] = DEFAULT_TOLERANCE_US,
    s: Annotated[
        str | None, Query(max_length=MAX_SHARE_CHARS, description="a shared script")
    ] = None,
) -> Response:
    if s is not None:
        return _page(request, shared_script(s), tolerance_us, None)
    text = example_text(example, i18n.language_of(request))
    if text is None:
        raise unknown_example(example)
    return _page(request, text, tolerance_us, example)


def unknown_example(example: str) -> ParamError:
    """422 naming ``query.example``: no example has this name."""
    return ParamError.single(
        ("query", "example"),
        msg(
            "unknown example {value}; choose one of {names}",
            value=example[:40],
            names=", ".join(EXAMPLES),
        ),
    )


@router.post("/explainers/tcp/packetdrill", response_class=HTMLResponse)
def page_run(
    request: Request,
    script: Annotated[str, Form(max_length=MAX_SCRIPT_BYTES * 4)],
    tolerance_us: Annotated[int, Form(ge=0, le=MAX_TOLERANCE_US)] = DEFAULT_TOLERANCE_US,
    kernel: Annotated[bool, Form()] = False,
) -> Response:
    if too_big(script):
        if wants_json(request):
            return _too_big_response()
        issues: list[Issue] = [
            {"loc": ["script"], "msg": str(msg("the script is over {n} KB", n=64))}
        ]
        return _render(request, script, tolerance_us, None, None, issues, status=413)
    return _page(request, script, tolerance_us, None, kernel=kernel)


def _page(
    request: Request, text: str, tolerance_us: int, example: str | None, *, kernel: bool = False
) -> Response:
    try:
        parsed = check(text, allow_unsupported=True)
        res = execute(parsed, tolerance_us)
    except ParamError as exc:
        return _render(request, text, tolerance_us, example, None, _issues(request, exc), 422)
    kres: KernelResult | None = None
    notes: list[Issue] = []
    if kernel:  # the model's run is shown either way; the kernel's, when it could run
        why = _kernel_refused(request)
        try:
            if why is not None:
                note = msg("Not run on this machine's kernel: {why}", why=why)
                raise ParamError.single(("kernel",), note)
            kres = execute_kernel(parsed, tolerance_us)
        except ParamError as exc:
            notes = _issues(request, exc)
        except KernelRunError as exc:
            note = msg("Not run on this machine's kernel: {why}", why=exc.why)
            notes = [{"loc": ["kernel"], "msg": i18n.render(note, i18n.language_of(request))}]
    return _render(request, text, tolerance_us, example, res, notes, status=200, kres=kres)


class Issue(TypedDict):
    """A problem the page lists: where (as the 422 answer's ``loc``) and what, in words."""

    loc: list[str | int]
    msg: str


def _issues(request: Request, exc: ParamError) -> list[Issue]:
    lang = i18n.language_of(request)
    return [{"loc": list(i.loc), "msg": i18n.render(i.message, lang)} for i in exc.issues]


def _render(
    request: Request,
    text: str,
    tolerance_us: int,
    example: str | None,
    res: Result | None,
    issues: list[Issue],
    status: int,
    kres: KernelResult | None = None,
) -> Response:
    steps: list[dict[str, Any]] = []
    data: dict[str, Any] | None = None
    if res is not None:
        with i18n.speaking(i18n.language_of(request)):
            data = result_json(res)
            if kres is not None:
                add_kernel(data, kres)
        steps = [ln for ln in data["lines"] if ln["kind"] != "comment"]
        for s in steps:
            s["fields"] = compare_rows(s)
            s["narration"] = [data["frames"][i] for i in s["frames"]]
    share = _share_url(text, tolerance_us, example) if res is not None else None
    ctx: dict[str, object] = {
        "examples": EXAMPLES,
        "example": example,
        "script": text,
        "script_lines": text.split("\n"),
        "tolerance_us": tolerance_us,
        "result": data,
        "steps": steps,
        "issues": issues,
        "max_kb": MAX_SCRIPT_BYTES // 1024,
        "share": share,
        "embed": _embed_url(share, i18n.language_of(request)) if share else None,
        "kernel_asked": kres is not None,
    }
    return render(request, TEMPLATE, ctx, status_code=status)


def _share_url(text: str, tolerance_us: int, example: str | None) -> str | None:
    tol = "" if tolerance_us == DEFAULT_TOLERANCE_US else f"&tolerance_us={tolerance_us}"
    if example is not None:
        return f"/explainers/tcp/packetdrill?example={example}{tol}"
    code = share_code(text)
    return None if code is None else f"/explainers/tcp/packetdrill?s={code}{tol}"


def _embed_url(share: str, lang: str) -> str:
    """The embed of a shared run: the share link's query on ``/embed/tcp/packetdrill``, with
    the slide defaults (min controls, projector theme) and the page's language."""
    query = share.split("?", 1)[1]
    lang_q = "" if lang == i18n.DEFAULT else f"&lang={lang}"
    return f"/embed/tcp/packetdrill?{query}&controls=min&theme=projector{lang_q}"


_FIELDS = ("flags", "seq", "len", "ack", "win", "options", "t_ms", "call", "ret", "errno")


def compare_rows(step: dict[str, Any]) -> list[dict[str, Any]]:
    """Field by field: the script's value, the model's, whether they differ, and (when the
    script also ran on this machine's kernel) the kernel's value and whether it differs."""
    exp = step["expected"] or {}
    got = step["got"] or {}
    k = step.get("kernel") or {}
    kgot = k.get("got") or {}
    kdiffs = _diff_keys(k.get("diffs") or [])
    rows: list[dict[str, Any]] = []
    diff_keys = _diff_keys(step["diffs"])
    for key in _FIELDS:
        if key not in exp and key not in got and key not in kgot:
            continue
        e, g, kg = (_cell(d.get(key)) for d in (exp, got, kgot))
        rows.append(
            {
                "field": key,
                "expected": e,
                "got": g,
                "bad": key in diff_keys,
                "kernel": kg,
                "kernel_bad": key in kdiffs,
            }
        )
    return rows


def _diff_keys(diffs: list[str]) -> set[str]:
    return set(diffs) | ({"t_ms"} if "time" in diffs else set())


def _cell(v: object) -> object:
    return ",".join(v) if isinstance(v, list) else v
