"""The recording document (docs/recording-format.md, schema 1): machine facts, flows from
``ss -tin``, a validator the tests and the writer share, and the writer itself."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

FORMAT = "stepscope-recording"
SCHEMA = 1
TOOL = "stepscope 0.1"
KINDS = ("cwnd", "tcp", "path")
MAX_BYTES = 5 * 1024 * 1024
MAX_EVENTS = 200_000
MAX_FRAMES = 64
MAX_FIELDS = 64
MAX_TEXT = 1000
MAX_COMMAND = 64
MAX_FLOWS = 64

SYSCTLS = (
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_early_retrans",
    "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_frto",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries",
    "net.ipv4.tcp_retries2",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_min_tso_segs",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_syn_linear_timeouts",
    "net.core.default_qdisc",
)


def sysctl_script() -> str:
    """A shell loop printing ``key=value`` for each of SYSCTLS (run in a namespace)."""
    paths = " ".join(k.replace(".", "/") for k in SYSCTLS)
    return (
        f"for k in {paths}; do f=/proc/sys/$k; "
        '[ -r "$f" ] && printf "%s=%s\\n" "$k" "$(tr -s "\\t " "  " < "$f")"; done'
    )


def read_sysctls(netns: str | None = None) -> dict[str, str]:
    """The sysctls that matter, as the kernel prints them (tabs made spaces); those this kernel
    lacks are left out. Per network namespace: ``netns`` reads another one's."""
    if netns is None:
        out: dict[str, str] = {}
        for k in SYSCTLS:
            try:
                text = Path("/proc/sys", k.replace(".", "/")).read_text()
            except OSError:
                continue
            out[k] = " ".join(text.split())
        return out
    res = subprocess.run(
        ["ip", "netns", "exec", netns, "sh", "-c", sysctl_script()],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return parse_sysctl_lines(res.stdout)


def parse_sysctl_lines(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.replace("/", ".")] = " ".join(v.split())
    return out


def kernel_facts() -> dict[str, str]:
    u = os.uname()
    return {"release": u.release, "machine": u.machine}


_RATE = re.compile(r"^([\d.]+)([KMG]?)bps$")
_SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
_NOT_CC = {"ts", "sack", "ecn", "ecnseen", "fastopen", "ece", "app_limited", "bbr_info"}


def parse_ss(text: str, known_cc: set[str] | None = None) -> list[dict[str, Any]]:
    """``ss -tin`` text -> [{"src", "dst", "cc", "mss", "pacing_rate_bps"}] per connection."""
    flows: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("State"):
            continue
        if not line[0].isspace():
            cols = line.split()
            cur = None
            if len(cols) >= 5:
                cur = {"src": cols[3], "dst": cols[4], "cc": None, "mss": None,
                       "pacing_rate_bps": None}
                flows.append(cur)
            continue
        if cur is None:
            continue
        toks = line.split()
        for i, tok in enumerate(toks):
            key, sep, val = tok.partition(":")
            if sep and key == "mss" and val.isdigit():
                cur["mss"] = int(val)
            elif tok == "pacing_rate" and i + 1 < len(toks):
                m = _RATE.match(toks[i + 1])
                if m:
                    cur["pacing_rate_bps"] = int(float(m[1]) * _SCALE[m[2]])
            elif not sep and cur["cc"] is None and tok.isidentifier() and tok not in _NOT_CC:
                if known_cc is None or tok in known_cc:
                    cur["cc"] = tok
    return flows


def ss_flows(port: int | None, dst: str | None, netns: str | None = None) -> list[dict[str, Any]]:
    """The matching connections' facts from ``ss -tin`` now (in ``netns`` if given)."""
    expr: list[str] = []
    if port is not None:
        expr += ["(", "sport", "=", f":{port}", "or", "dport", "=", f":{port}", ")"]
    if dst is not None:
        expr += ["dst", dst]
    cmd = ["ss", "-tin", *expr]
    if netns is not None:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    known = set(read_sysctls().get("net.ipv4.tcp_available_congestion_control", "").split())
    return parse_ss(res.stdout, known or None)


def build(
    kind: str,
    events: list[dict[str, Any]],
    *,
    duration_ms: float,
    sysctls: dict[str, str],
    flows: list[dict[str, Any]] | None = None,
    link: dict[str, Any] | None = None,
    flt: dict[str, Any] | None = None,
    command: list[str] | None = None,
    notes: list[str] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    when = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "format": FORMAT,
        "schema": SCHEMA,
        "kind": kind,
        "recorded_at": when,
        "tool": TOOL,
        "kernel": kernel_facts(),
        "sysctls": sysctls,
        "link": link,
        "filter": flt,
        "command": [a[:MAX_TEXT] for a in command[:MAX_COMMAND]] if command else None,
        "duration_ms": duration_ms,
        "flows": (flows or [])[:MAX_FLOWS],
        "notes": notes or [],
        "events": events,
    }


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "schema": int,
    "kind": str,
    "recorded_at": str,
    "tool": str,
    "kernel": dict,
    "sysctls": dict,
    "duration_ms": (int, float),
    "flows": list,
    "events": list,
}


def validate(doc: Any) -> list[str]:
    """What is wrong with ``doc`` as a schema-1 recording ([] when nothing), naming fields."""
    if not isinstance(doc, dict):
        return ["the recording is not a JSON object"]
    errs = [f"{k}: missing or not {_tname(t)}" for k, t in _REQUIRED.items()
            if not isinstance(doc.get(k), t) or isinstance(doc.get(k), bool)]
    if errs:
        return errs
    if doc["format"] != FORMAT or doc["schema"] != SCHEMA:
        errs.append(f"format/schema: expected {FORMAT!r} schema {SCHEMA}")
    if doc["kind"] not in KINDS:
        errs.append(f"kind: {doc['kind']!r} is not one of {', '.join(KINDS)}")
    for k in ("link", "filter"):
        if doc.get(k) is not None and not isinstance(doc[k], dict):
            errs.append(f"{k}: not an object or null")
    cmd = doc.get("command")
    if cmd is not None and not (
        isinstance(cmd, list) and len(cmd) <= MAX_COMMAND
        and all(isinstance(a, str) and len(a) <= MAX_TEXT for a in cmd)
    ):
        errs.append(f"command: not a list of at most {MAX_COMMAND} short strings or null")
    if len(doc["flows"]) > MAX_FLOWS:
        errs.append(f"flows: more than {MAX_FLOWS}")
    if len(doc["events"]) > MAX_EVENTS:
        errs.append(f"events: more than {MAX_EVENTS}")
    last = 0.0
    for i, ev in enumerate(doc["events"]):
        errs += _event_errors(i, ev, last)
        if isinstance(ev, dict) and isinstance(ev.get("t_ms"), int | float):
            last = float(ev["t_ms"])
        if len(errs) > 20:
            break
    return errs


def _event_errors(i: int, ev: Any, last: float) -> list[str]:
    where = f"events[{i}]"
    if not isinstance(ev, dict):
        return [f"{where}: not an object"]
    out = []
    t = ev.get("t_ms")
    if not isinstance(t, int | float) or isinstance(t, bool) or t < last:
        out.append(f"{where}.t_ms: missing, not a number or decreasing")
    if not isinstance(ev.get("event"), str) or ":" not in ev["event"]:
        out.append(f"{where}.event: not a 'system:name' string")
    f = ev.get("fields")
    if not isinstance(f, dict) or not all(
        isinstance(v, str) and len(v) <= MAX_TEXT for v in f.values()
    ):
        out.append(f"{where}.fields: not an object of strings")
    elif len(f) > MAX_FIELDS:
        out.append(f"{where}.fields: more than {MAX_FIELDS}")
    if "stack" in ev:
        s = ev["stack"]
        if not isinstance(s, list) or not all(isinstance(x, str) for x in s):
            out.append(f"{where}.stack: not a list of strings")
        elif len(s) > MAX_FRAMES:
            out.append(f"{where}.stack: more than {MAX_FRAMES} frames")
    return out


def _tname(t: type | tuple[type, ...]) -> str:
    return "a number" if isinstance(t, tuple) else {dict: "an object", list: "a list",
                                                      str: "a string", int: "an integer"}[t]


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def write(doc: dict[str, Any], out: str) -> int:
    """Write ``doc`` to ``out`` (``-``: stdout); returns the size in bytes. The file appears
    whole or not at all (written beside it, then renamed)."""
    errs = validate(doc)
    if errs:
        raise ValueError("; ".join(errs))
    text = dumps(doc) + "\n"
    if out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return len(text.encode())
    path = Path(out)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return len(text.encode())
