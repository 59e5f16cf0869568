"""The scenario editor: an htmx form over an explainer's raw params.

Explainers whose params are an op list (``{"ops": [...]}``) get a row per op that can be added,
removed, reordered and edited, with errors shown beside the field they concern. Others get a
JSON editor with the same per-field messages. Validation is the simulation's own ``parse``, so
the editor, the API and saved scenarios agree on what is valid.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from typing import Any

from app.sim.core import ParamError
from app.sim.registry import Explainer

NUMERIC = ("size", "len", "nhead", "ntail", "offset", "truesize")
TEXT = ("skb", "from", "label", "via")
MAX_ROWS = 500
_INT = re.compile(r"^-?[0-9]{1,30}$")  # longer digit strings stay text for the validator to name
_INDEX = re.compile(r"[0-9]{1,6}")
_INDEX = re.compile(r"[0-9]{1,6}")

# issues keyed by (row, field) for op rows, (row, None) for a whole row, (None, None) for the form
Place = tuple[int | None, str | None]


def op_fields(explainer: Explainer) -> dict[str, tuple[str, ...]]:
    """Which fields each op takes, from the explainer's ``ops.SPECS`` when it declares them."""
    try:
        module = importlib.import_module(f"app.sim.{_package(explainer)}.ops")
    except (ImportError, ValueError):
        return {}
    specs = getattr(module, "SPECS", None)
    if not isinstance(specs, Mapping):
        return {}
    return {
        str(name): ("skb", *getattr(spec, "required", ()), *getattr(spec, "optional", ()))
        for name, spec in specs.items()
    }


def _package(explainer: Explainer) -> str:
    parts = explainer.run.__module__.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["app", "sim"] else "-"


def is_op_list(raw: Any) -> bool:
    return isinstance(raw, Mapping) and isinstance(raw.get("ops"), list) and set(raw) <= {"ops"}


def form_to_raw(
    explainer: Explainer, form: Mapping[str, Any], action: str
) -> tuple[Any, dict[Place, list[str]]]:
    """Rebuild raw params from the posted form and apply an add/remove/up/down action."""
    if "link.rate_mbps" in form:
        return _cwnd_form_to_raw(form, action), {}
    if "json" in form:
        text = str(form.get("json", ""))
        try:
            return json.loads(text), {}
        except json.JSONDecodeError as exc:
            return text, {
                (None, None): [
                    f"That is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
                ]
            }
        except (ValueError, RecursionError):
            too_big = "That JSON is too large to read: numbers may have at most 4300 digits and nesting must stay under a few hundred levels."
            return text, {(None, None): [too_big]}
    try:
        count = min(int(str(form.get("count", "0"))), MAX_ROWS + 1)
    except ValueError:
        count = 0
    ops: list[dict[str, Any]] = []
    for i in range(count):
        op: dict[str, Any] = {"op": str(form.get(f"op-{i}", "")).strip()}
        for key in (*NUMERIC, *TEXT):
            value = str(form.get(f"{key}-{i}", "")).strip()
            if value == "":
                continue
            op[key] = int(value) if key in NUMERIC and _INT.match(value) else value
        ops.append(op)
    verb, _, arg = action.partition(":")
    index = int(arg) if _INDEX.fullmatch(arg) else -1
    if verb == "add":
        new = {"op": "skb_put", "len": 100}
        ops.insert(index + 1 if 0 <= index < len(ops) else len(ops), new)
    elif verb == "remove" and 0 <= index < len(ops):
        ops.pop(index)
    elif verb == "up" and 0 < index < len(ops):
        ops[index - 1], ops[index] = ops[index], ops[index - 1]
    elif verb == "down" and 0 <= index < len(ops) - 1:
        ops[index + 1], ops[index] = ops[index], ops[index + 1]
    return {"ops": ops}, {}


LINK_FIELDS = ("rate_mbps", "rtt_ms", "loss_rate")
BUFFER_KINDS = ("buffer_packets", "buffer_bytes", "buffer_bdp")
TOP_FIELDS = ("duration_s", "mss", "seed", "sample_ms")
FLOW_FIELDS = ("cc", "start_s", "rtt_ms")
CC_CHOICES = ("reno", "cubic", "bbr")
MAX_FLOW_ROWS = 16
_NUM = re.compile(r"^-?([0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})([eE][-+]?[0-9]{1,4})?$")


def _number(text: str) -> Any:
    """A typed number where the text is one; otherwise the text, for the validator to name."""
    text = text.strip()
    if _INT.match(text):
        return int(text)
    if _NUM.match(text):
        return float(text)
    return text


def is_link_flows(raw: Any) -> bool:
    return (
        isinstance(raw, Mapping)
        and isinstance(raw.get("link"), Mapping)
        and isinstance(raw.get("flows"), list)
    )


def _cwnd_form_to_raw(form: Mapping[str, Any], action: str) -> dict[str, Any]:
    link: dict[str, Any] = {}
    for key in LINK_FIELDS:
        value = str(form.get(f"link.{key}", "")).strip()
        if value != "":
            link[key] = _number(value)
    kind = str(form.get("link.buffer_kind", "buffer_packets"))
    kind = kind if kind in BUFFER_KINDS else "buffer_packets"
    value = str(form.get("link.buffer_value", "")).strip()
    if value != "":
        link[kind] = _number(value)
    raw: dict[str, Any] = {"link": link}
    for key in TOP_FIELDS:
        value = str(form.get(key, "")).strip()
        if value != "":
            raw[key] = _number(value)
    try:
        count = min(int(str(form.get("flow_count", "0"))), MAX_FLOW_ROWS + 1)
    except ValueError:
        count = 0
    flows: list[dict[str, Any]] = []
    for i in range(count):
        flow: dict[str, Any] = {}
        for key in FLOW_FIELDS:
            value = str(form.get(f"flows.{i}.{key}", "")).strip()
            if value != "":
                flow[key] = value if key == "cc" else _number(value)
        flows.append(flow)
    verb, _, arg = action.partition(":")
    if verb == "add_flow":
        flows.append({"cc": "cubic", "start_s": 0})
    elif verb == "remove_flow" and _INDEX.fullmatch(arg) and int(arg) < len(flows):
        flows.pop(int(arg))
    raw["flows"] = flows
    return raw


def dotted_issues(exc: ParamError) -> dict[str, list[str]]:
    """Issues keyed by dotted path ("link.rate_mbps", "flows.0.cc"), for nested-form editors."""
    found: dict[str, list[str]] = {}
    for issue in exc.issues:
        found.setdefault(".".join(str(p) for p in issue.loc), []).append(issue.msg)
    return found


def issues_by_place(exc: ParamError) -> dict[Place, list[str]]:
    found: dict[Place, list[str]] = {}
    for issue in exc.issues:
        loc = issue.loc
        if len(loc) >= 3 and loc[0] == "ops" and isinstance(loc[1], int):
            place: Place = (loc[1], str(loc[2]))
        elif len(loc) == 2 and loc[0] == "ops" and isinstance(loc[1], int):
            place = (loc[1], None)
        else:
            prefix = ".".join(str(p) for p in loc)
            found.setdefault((None, None), []).append(
                f"{prefix}: {issue.msg}" if prefix else issue.msg
            )
            continue
        found.setdefault(place, []).append(issue.msg)
    return found


def editor_context(
    explainer: Explainer,
    raw: Any,
    *,
    issues: Mapping[Place, list[str]],
    checked: bool = False,
    valid: bool = False,
    dotted: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    fields = op_fields(explainer)
    rows = []
    if is_op_list(raw):
        for i, op in enumerate(raw["ops"]):
            op = op if isinstance(op, Mapping) else {}
            name = str(op.get("op", ""))
            allowed = fields.get(name) or tuple(k for k in (*NUMERIC, *TEXT) if k in op)
            shown = [k for k in (*NUMERIC, *TEXT) if k in allowed or k in op]
            rows.append(
                {
                    "index": i,
                    "op": name,
                    "values": {k: op.get(k, "") for k in shown},
                    "fields": shown,
                    "row_issues": issues.get((i, None), []) + issues.get((i, "op"), []),
                    "field_issues": {k: issues.get((i, k), []) for k in shown},
                }
            )
    link_flows = None
    if is_link_flows(raw):
        link = raw["link"]
        kind = next((k for k in BUFFER_KINDS if k in link), "buffer_packets")
        link_flows = {
            "link": {k: link.get(k, "") for k in LINK_FIELDS},
            "buffer_kind": kind,
            "buffer_value": link.get(kind, ""),
            "top": {k: raw.get(k, "") for k in TOP_FIELDS},
            "flows": [
                {k: (f.get(k, "") if isinstance(f, Mapping) else "") for k in FLOW_FIELDS}
                for f in raw["flows"]
            ],
            "issues": dotted or {},
            "buffer_kinds": BUFFER_KINDS,
            "cc_choices": CC_CHOICES,
        }
    return {
        "explainer": explainer,
        "link_flows": link_flows,
        "op_list": is_op_list(raw),
        "op_names": sorted(fields) if fields else [],
        "op_fields_json": json.dumps(fields),
        "rows": rows,
        "json_text": raw if isinstance(raw, str) else json.dumps(raw, indent=2),
        "form_issues": issues.get((None, None), []),
        "has_issues": bool(issues),
        "checked": checked,
        "valid": valid,
        "numeric": NUMERIC,
    }
