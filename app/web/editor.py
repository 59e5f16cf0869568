"""The scenario editor: an htmx form generated from an explainer's :class:`EditorSpec`.

An explainer declares its form: groups of fields (``link.rate_mbps``), "one of" fields whose
value goes under whichever key the user picks (a buffer in packets, bytes or BDPs), and lists
of rows that can be added, removed and reordered (``ops.3.len``, ``flows.0.cc``), where a
row's kind field may decide which other fields it shows. Without a spec, or when the params do
not fit it, the editor is a JSON text box. Validation is always the simulation's own ``parse``,
so the editor, the API and saved scenarios agree; each issue is shown beside the field its
``loc`` names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.sim.core import Message, ParamError, msg
from app.sim.core.validate import scrub_json
from app.web import i18n

_INT = re.compile(r"^-?[0-9]{1,30}$")  # longer digit strings stay text for the validator to name
_NUM = re.compile(r"^-?([0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})([eE][-+]?[0-9]{1,4})?$")
_INDEX = re.compile(r"-?[0-9]{1,6}")
TOO_BIG = msg(
    "That JSON is too large to read: numbers may have at most 4300 digits and nesting must stay "
    "under a few hundred levels."
)

Kind = Literal["int", "number", "text", "choice"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSpec:
    """One input: the params key it fills, its label and how its text becomes a value."""

    key: str
    label: Message
    kind: Kind = "number"
    choices: tuple[str, ...] = ()
    unit: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OneOf:
    """One value stored under whichever of ``keys`` the user picks (exactly one is sent)."""

    name: str  # form name part: "<group>.<name>.kind" / ".value"
    label: Message
    keys: tuple[str, ...]
    kind: Kind = "number"


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """Fields of one object: ``key`` names it in the params (None: the top level)."""

    key: str | None
    legend: Message
    fields: tuple[FieldSpec | OneOf, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rows:
    """A list of objects under ``key``; ``kind_field`` (a choice) may pick the fields shown."""

    key: str
    legend: Message
    item: Message  # what one row is called ("op", "flow"), for buttons and labels
    fields: tuple[FieldSpec, ...]
    new_row: Mapping[str, Any]
    max_rows: int
    kind_field: str | None = None
    fields_by_kind: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reorder: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class EditorSpec:
    groups: tuple[Group, ...] = ()
    rows: tuple[Rows, ...] = ()

    def fits(self, raw: Any) -> bool:
        """True when ``raw`` has the shape this form edits (else the JSON editor is shown)."""
        if not isinstance(raw, Mapping):
            return False
        known = {g.key for g in self.groups if g.key} | {r.key for r in self.rows}
        known |= {
            f.key
            for g in self.groups
            if g.key is None
            for f in g.fields
            if isinstance(f, FieldSpec)
        }
        known |= {
            k
            for g in self.groups
            if g.key is None
            for f in g.fields
            if isinstance(f, OneOf)
            for k in f.keys
        }
        if not set(raw) <= known:
            return False
        if any(not isinstance(raw.get(r.key, []), list) for r in self.rows):
            return False
        return all(isinstance(raw.get(g.key, {}), Mapping) for g in self.groups if g.key)


def _value(kind: Kind, text: str) -> Any:
    """A typed value where the text is one; otherwise the text, for the validator to name."""
    text = text.strip()
    if kind in ("int", "number") and _INT.match(text):
        return int(text)
    if kind == "number" and _NUM.match(text):
        return float(text)
    return text


def _name(*parts: str | int | None) -> str:
    return ".".join(str(p) for p in parts if p is not None)


# --- form → raw params ---------------------------------------------------------------------


def form_to_raw(
    spec: EditorSpec | None, form: Mapping[str, Any], action: str
) -> tuple[Any, list[str]]:
    """Rebuild raw params from the posted form and apply an add/remove/up/down action.
    Returns the params and form-level problems (e.g. JSON that does not parse)."""
    if spec is None or "json" in form:
        return _json_form(form)
    raw: dict[str, Any] = {}
    for group in spec.groups:
        target = raw if group.key is None else raw.setdefault(group.key, {})
        for f in group.fields:
            if isinstance(f, OneOf):
                chosen = str(form.get(_name(group.key, f.name, "kind"), f.keys[0]))
                chosen = chosen if chosen in f.keys else f.keys[0]
                text = str(form.get(_name(group.key, f.name, "value"), "")).strip()
                if text != "":
                    target[chosen] = _value(f.kind, text)
                continue
            text = str(form.get(_name(group.key, f.key), "")).strip()
            if text != "":
                target[f.key] = text if f.kind in ("text", "choice") else _value(f.kind, text)
    for rows in spec.rows:
        raw[rows.key] = _rows_from_form(rows, form, action)
    return raw, []


def _json_form(form: Mapping[str, Any]) -> tuple[Any, list[str]]:
    text = str(form.get("json", ""))
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        bad = msg(
            "That is not valid JSON: {error} at line {line}, column {column}.",
            error=exc.msg,
            line=exc.lineno,
            column=exc.colno,
        )
        return text, [i18n.render(bad)]
    except (ValueError, RecursionError):
        return text, [i18n.render(TOO_BIG)]


def _rows_from_form(rows: Rows, form: Mapping[str, Any], action: str) -> list[dict[str, Any]]:
    try:
        count = min(int(str(form.get(_name(rows.key, "count"), "0"))), rows.max_rows + 1)
    except ValueError:
        count = 0
    items: list[dict[str, Any]] = []
    for i in range(count):
        item: dict[str, Any] = {}
        for f in rows.fields:
            text = str(form.get(_name(rows.key, i, f.key), "")).strip()
            if text != "" or f.key == rows.kind_field:
                item[f.key] = text if f.kind in ("text", "choice") else _value(f.kind, text)
        items.append(item)
    verb, _, rest = action.partition(":")
    key, _, arg = rest.rpartition(":")
    if key != rows.key or not _INDEX.fullmatch(arg):
        return items
    index = int(arg)
    if verb == "add" and len(items) < rows.max_rows:
        items.insert(index + 1 if 0 <= index < len(items) else len(items), dict(rows.new_row))
    elif verb == "remove" and 0 <= index < len(items):
        items.pop(index)
    elif verb == "up" and 0 < index < len(items):
        items[index - 1], items[index] = items[index], items[index - 1]
    elif verb == "down" and 0 <= index < len(items) - 1:
        items[index + 1], items[index] = items[index], items[index + 1]
    return items


# --- raw params + issues → what the template draws -----------------------------------------


def issues_by_name(exc: ParamError) -> dict[str, list[str]]:
    """Issues keyed by the dotted form name their ``loc`` points at ("ops.3.len")."""
    found: dict[str, list[str]] = {}
    gettext = i18n.gettext_for()
    for issue in exc.issues:
        found.setdefault(_name(*issue.loc), []).append(issue.text(gettext))
    return found


def editor_context(
    spec: EditorSpec | None,
    raw: Any,
    *,
    issues: Mapping[str, list[str]],
    form_issues: list[str] = (),  # type: ignore[assignment]
    checked: bool = False,
    valid: bool = False,
) -> dict[str, Any]:
    placed: set[str] = set()
    raw = scrub_json(raw)  # a lone surrogate (refused by parse) cannot be written out

    def errs(name: str) -> list[str]:
        placed.add(name)
        return list(issues.get(name, []))

    groups: list[dict[str, Any]] = []
    row_lists: list[dict[str, Any]] = []
    use_form = spec is not None and spec.fits(raw)
    if spec is not None and use_form:
        for group in spec.groups:
            obj = raw if group.key is None else raw.get(group.key, {})
            fields = []
            for f in group.fields:
                if isinstance(f, OneOf):
                    chosen = next((k for k in f.keys if k in obj), f.keys[0])
                    found = [m for k in f.keys for m in errs(_name(group.key, k))]
                    fields.append(
                        {
                            "oneof": True,
                            "name": _name(group.key, f.name),
                            "label": f.label,
                            "keys": f.keys,
                            "chosen": chosen,
                            "value": obj.get(chosen, ""),
                            "errors": found,
                        }
                    )
                    continue
                name = _name(group.key, f.key)
                fields.append(_field(f, name, obj.get(f.key, ""), errs(name)))
            group_errs = errs(group.key) if group.key else []
            groups.append({"legend": group.legend, "fields": fields, "errors": group_errs})
        for rows in spec.rows:
            items = []
            for i, item in enumerate(raw.get(rows.key, [])):
                item = item if isinstance(item, Mapping) else {}
                kind = str(item.get(rows.kind_field, "")) if rows.kind_field else ""
                shown = rows.fields_by_kind.get(kind) if rows.kind_field else None
                fields = [
                    _field(
                        f,
                        _name(rows.key, i, f.key),
                        item.get(f.key, ""),
                        errs(_name(rows.key, i, f.key)),
                    )
                    for f in rows.fields
                    if shown is None or f.key == rows.kind_field or f.key in shown or f.key in item
                ]
                row_errs = errs(_name(rows.key, i))
                items.append({"index": i, "fields": fields, "errors": row_errs})
            row_lists.append(
                {
                    "key": rows.key,
                    "legend": rows.legend,
                    "item": rows.item,
                    "items": items,
                    "reorder": rows.reorder,
                    "full": len(items) >= rows.max_rows,
                    "errors": errs(rows.key),
                }
            )
    leftover = [
        f"{name}: {m}" if name else m
        for name, msgs in issues.items()
        if name not in placed
        for m in msgs
    ]
    return {
        "use_form": use_form,
        "groups": groups,
        "row_lists": row_lists,
        "json_text": raw if isinstance(raw, str) else json.dumps(raw, indent=2),
        "form_issues": [*form_issues, *leftover],
        "has_issues": bool(issues) or bool(form_issues),
        "checked": checked,
        "valid": valid,
    }


def _field(f: FieldSpec, name: str, value: Any, found: list[str]) -> dict[str, Any]:
    return {
        "oneof": False,
        "name": name,
        "label": f.label,
        "kind": f.kind,
        "choices": f.choices,
        "unit": f.unit,
        "value": value,
        "errors": found,
    }
