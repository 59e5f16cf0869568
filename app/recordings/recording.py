"""A ``stepscope record`` file (docs/recording-format.md, schema 1), checked field by field.

The body is looked at before any JSON object is built from it: its nesting is measured on
the bytes (strings skipped), so a deep ``[[[[…`` costs a scan, not a recursion. Then it is
parsed (``json.loads``: never unpickled, evaluated or executed) and every field the format
names is checked against its type and limits; the first problems found are answered with
their JSON paths (``body.events.12.t_ms``). Unknown top-level keys are left out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from app.sim.core import Message, ParamError, ParamIssue, msg
from app.sim.core.validate import unsafe_json_issues

FORMAT = "stepscope-recording"
SCHEMA = 1
KINDS = ("cwnd", "tcp", "path")
MAX_EVENTS = 200_000
MAX_STACK = 64
MAX_FIELDS = 64
MAX_DEPTH = 8
MAX_TEXT = 1_000  # characters of one field value or stack frame
MAX_NAME = 100  # characters of a field name, tool, state…
MAX_FLOWS = 64
MAX_SYSCTLS = 200
MAX_COMMAND = 64
MAX_ISSUES = 20

EVENTS_BY_KIND: dict[str, frozenset[str]] = {
    "cwnd": frozenset(("tcp:tcp_probe",)),
    "tcp": frozenset(
        (
            "sock:inet_sock_set_state",
            "tcp:tcp_retransmit_skb",
            "tcp:tcp_send_reset",
            "tcp:tcp_receive_reset",
        )
    ),
    "path": frozenset(
        (
            "net:net_dev_queue",
            "net:net_dev_start_xmit",
            "net:netif_receive_skb",
            "skb:consume_skb",
            "skb:kfree_skb",
            "sock:sk_data_ready",
        )
    ),
}

_STRUCTURAL = bytes(range(256)).translate(None, b"[]{}")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def nesting(body: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text, measured on its bytes (the
    brackets inside strings do not count), without building anything from it."""
    brackets = _STRING.sub(b"", body).translate(None, _STRUCTURAL)
    depth = deepest = 0
    for byte in brackets:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


class _Checker:
    """Collects issues (at most MAX_ISSUES) with their JSON paths under ``body``."""

    def __init__(self) -> None:
        self.issues: list[ParamIssue] = []

    def add(self, loc: tuple[str | int, ...], message: Message) -> None:
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(ParamIssue(loc=loc, msg=message))

    @property
    def full(self) -> bool:
        return len(self.issues) >= MAX_ISSUES

    def text(
        self, value: Any, loc: tuple[str | int, ...], limit: int = MAX_NAME, *, empty: bool = True
    ) -> str | None:
        if not isinstance(value, str):
            self.add(loc, msg("must be a text"))
            return None
        if len(value) > limit:
            self.add(loc, msg("is longer than {limit} characters", limit=limit))
            return None
        if not empty and not value:
            self.add(loc, msg("must not be empty"))
            return None
        return value

    def number(self, value: Any, loc: tuple[str | int, ...], *, low: float = 0.0) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(loc, msg("must be a number"))
            return None
        out = float(value)
        if not math.isfinite(out) or out < low:
            self.add(loc, msg("must be a number of at least {low}", low=low))
            return None
        return out

    def mapping(self, value: Any, loc: tuple[str | int, ...]) -> Mapping[str, Any] | None:
        if not isinstance(value, dict):
            self.add(loc, msg("must be an object"))
            return None
        return value

    def texts(self, value: Any, loc: tuple[str | int, ...], limit: int) -> dict[str, str]:
        """An object of texts (sysctls, an event's fields), at most ``limit`` of them."""
        found = self.mapping(value, loc)
        if found is None:
            return {}
        if len(found) > limit:
            self.add(loc, msg("has more than {limit} entries", limit=limit))
            return {}
        out: dict[str, str] = {}
        for key, item in found.items():
            if len(key) > MAX_NAME:
                self.add((*loc, key[:40]), msg("is longer than {limit} characters", limit=MAX_NAME))
                continue
            text = self.text(item, (*loc, key), MAX_TEXT)
            if text is not None:
                out[key] = text
        return out


def loads(body: bytes) -> Any:
    """The JSON value of ``body`` once its size of nesting is known to be safe."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParamError.single(
            (f"byte {exc.start}",),
            msg("byte {offset}: not UTF-8 text", offset=exc.start),
        ) from None
    deepest = nesting(body)
    if deepest > MAX_DEPTH:
        raise ParamError.single(
            (),
            msg(
                "is nested {depth} levels deep; a recording is at most {limit}",
                depth=deepest,
                limit=MAX_DEPTH,
            ),
        )
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ParamError.single(
            (f"line {exc.lineno}",),
            msg(
                "line {line}, column {col}: not JSON ({why})",
                line=exc.lineno,
                col=exc.colno,
                why=exc.msg,
            ),
        ) from None
    except ValueError as exc:  # a number too long to convert (Python's digit limit), NaN
        raise ParamError.single(
            (), msg("not a JSON recording ({why})", why=str(exc)[:80])
        ) from None
    issues = unsafe_json_issues(value)
    if issues:
        raise ParamError([ParamIssue(loc=i.loc, msg=i.msg) for i in issues])
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def validate(value: Any) -> dict[str, Any]:
    """The recording, checked against docs/recording-format.md; ParamError naming each field
    that is wrong."""
    check = _Checker()
    top = check.mapping(value, ())
    if top is None:
        raise ParamError(check.issues)
    if top.get("format") != FORMAT:
        check.add(("format",), msg('must be "{format}"', format=FORMAT))
    if top.get("schema") != SCHEMA or isinstance(top.get("schema"), bool):
        check.add(
            ("schema",), msg("must be {schema} (this app reads schema {schema})", schema=SCHEMA)
        )
    kind = top.get("kind")
    if kind not in KINDS:
        check.add(("kind",), msg("must be one of {kinds}", kinds=", ".join(KINDS)))
        raise ParamError(check.issues)
    out: dict[str, Any] = {"format": FORMAT, "schema": SCHEMA, "kind": kind}
    for key in ("recorded_at", "tool"):
        if key in top:
            out[key] = check.text(top[key], (key,))
    out["kernel"] = _kernel(check, top.get("kernel"))
    out["sysctls"] = check.texts(top.get("sysctls", {}), ("sysctls",), MAX_SYSCTLS)
    out["link"] = _link(check, top.get("link"))
    out["filter"] = _filter(check, top.get("filter"))
    out["command"] = _command(check, top.get("command"))
    out["notes"] = _notes(check, top.get("notes"))
    out["duration_ms"] = (
        check.number(top["duration_ms"], ("duration_ms",)) if "duration_ms" in top else None
    )
    out["flows"] = _flows(check, top.get("flows", []))
    out["events"] = _events(check, top.get("events"), EVENTS_BY_KIND[kind])
    if check.issues:
        raise ParamError(check.issues)
    return out


def _kernel(check: _Checker, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    found = check.mapping(value, ("kernel",))
    if found is None:
        return {}
    out: dict[str, str] = {}
    for key in ("release", "machine"):
        if key in found:
            text = check.text(found[key], ("kernel", key))
            if text is not None:
                out[key] = text
    return out


def _link(check: _Checker, value: Any) -> dict[str, float] | None:
    if value is None:
        return None
    found = check.mapping(value, ("link",))
    if found is None:
        return None
    out: dict[str, float] = {}
    for key in ("rate_mbit", "rtt_ms", "buffer_bytes", "mtu"):
        if key in found and found[key] is not None:
            number = check.number(found[key], ("link", key))
            if number is not None:
                out[key] = number
    return out


def _filter(check: _Checker, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    found = check.mapping(value, ("filter",))
    if found is None:
        return None
    out: dict[str, Any] = {}
    if found.get("port") is not None:
        port = check.number(found["port"], ("filter", "port"))
        if port is not None and (port > 65535 or port != int(port)):
            check.add(("filter", "port"), msg("must be a port number, 0 to 65535"))
        elif port is not None:
            out["port"] = int(port)
    if found.get("dst") is not None:
        out["dst"] = check.text(found["dst"], ("filter", "dst"))
    return out


def _command(check: _Checker, value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_COMMAND:
        check.add(("command",), msg("must be a list of at most {limit} texts", limit=MAX_COMMAND))
        return None
    return [check.text(v, ("command", i), MAX_TEXT) or "" for i, v in enumerate(value)]


def _notes(check: _Checker, value: Any) -> list[str]:
    """What the recorder noted (lost events, a cc it could not set…): at most 64 texts."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_COMMAND:
        check.add(("notes",), msg("must be a list of at most {limit} texts", limit=MAX_COMMAND))
        return []
    return [check.text(v, ("notes", i), MAX_TEXT) or "" for i, v in enumerate(value)]


def _flows(check: _Checker, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or len(value) > MAX_FLOWS:
        check.add(("flows",), msg("must be a list of at most {limit} flows", limit=MAX_FLOWS))
        return []
    out = []
    for i, item in enumerate(value):
        found = check.mapping(item, ("flows", i))
        if found is None:
            continue
        flow: dict[str, Any] = {}
        for key in ("src", "dst", "cc"):
            if key in found:
                flow[key] = check.text(found[key], ("flows", i, key))
        for key in ("mss", "pacing_rate_bps"):
            if found.get(key) is not None:
                flow[key] = check.number(found[key], ("flows", i, key))
        out.append(flow)
    return out


def _events(check: _Checker, value: Any, allowed: frozenset[str]) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        check.add(("events",), msg("must be a list of events"))
        return []
    if len(value) > MAX_EVENTS:
        check.add(
            ("events",),
            msg(
                "has {count} events; a recording holds at most {limit}",
                count=len(value),
                limit=MAX_EVENTS,
            ),
        )
        return []
    out = []
    last = 0.0
    for i, item in enumerate(value):
        if check.full:
            break
        found = check.mapping(item, ("events", i))
        if found is None:
            continue
        t_ms = check.number(found.get("t_ms"), ("events", i, "t_ms"))
        if t_ms is not None and t_ms < last:
            check.add(("events", i, "t_ms"), msg("goes back in time (before {last} ms)", last=last))
        last = t_ms if t_ms is not None else last
        name = found.get("event")
        if name not in allowed:
            check.add(
                ("events", i, "event"),
                msg("must be one of this kind's events: {names}", names=", ".join(sorted(allowed))),
            )
        event: dict[str, Any] = {
            "t_ms": t_ms,
            "event": name,
            "fields": check.texts(found.get("fields", {}), ("events", i, "fields"), MAX_FIELDS),
        }
        if "stack" in found:
            event["stack"] = _stack(check, found["stack"], ("events", i, "stack"))
        out.append(event)
    return out


def _stack(check: _Checker, value: Any, loc: tuple[str | int, ...]) -> list[str]:
    if not isinstance(value, list):
        check.add(loc, msg("must be a list of function names"))
        return []
    if len(value) > MAX_STACK:
        check.add(
            loc,
            msg(
                "has {count} frames; a stack holds at most {limit}",
                count=len(value),
                limit=MAX_STACK,
            ),
        )
        return []
    return [check.text(v, (*loc, i), MAX_TEXT) or "" for i, v in enumerate(value)]
