"""The scenario editor: an htmx form generated from an explainer's :class:`EditorSpec`.

An explainer declares its form: groups of fields (``link.rate_mbps``), "one of" fields whose
value goes under whichever key the user picks (a buffer in packets, bytes or BDPs), and lists
of rows that can be added, removed and reordered (``ops.3.len``, ``flows.0.cc``), where a
row's kind field may decide which other fields it shows (and, for ``nested_kind`` rows, names
the object the other fields go in: ``{"drop": {"from": "client", "nth": 4}}``). Fields are
numbers (with their range), whole numbers, text, choices (a select), booleans (a checkbox) and
lists of token ids (``1000-1099, 7``). The same params as JSON are an advanced option under the
form; params the form cannot carry open as JSON only. Validation is always the simulation's
own ``parse``, so the editor, the API and saved scenarios agree; each issue is shown beside
the field its ``loc`` names, after that field's label, in the page's language.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from app.sim.core import Message, ParamError, msg
from app.sim.core.validate import scrub_json
from app.web import i18n

_INT = re.compile(r"^-?[0-9]{1,30}$")  # longer digit strings stay text for the validator to name
_NUM = re.compile(r"^-?([0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})([eE][-+]?[0-9]{1,4})?$")
_INDEX = re.compile(r"-?[0-9]{1,6}")
_ID_ITEM = re.compile(r"^([0-9]{1,10})(?:\s*-\s*([0-9]{1,10}))?$")
MAX_LIST = 1_000_000  # ids a list field may expand to (ranges included)
TOO_BIG = msg(
    "That JSON is too large to read: numbers may have at most 4300 digits and nesting must stay "
    "under a few hundred levels."
)
JSON_FIELD = "json"  # the textarea's name
DIGEST_FIELD = "_form"  # present when the form was shown: the digest of the JSON drawn with it

Kind = Literal["int", "number", "text", "choice", "bool", "ids"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSpec:
    """One input: the params key it fills, its label and how its text becomes a value.

    ``min``/``max`` bound a number input (the simulation still validates); ``default`` is a
    checkbox's value when the key is absent (a checkbox left at it sends nothing). A choice's
    option shows its value (an identifier such as a call or an algorithm name) unless ``labels`` gives it
    words the reader's language can translate (``client`` → 客户端); the value sent stays."""

    key: str
    label: Message
    kind: Kind = "number"
    choices: tuple[str, ...] = ()
    labels: Mapping[str, Message] = field(default_factory=dict)
    unit: Message | None = None
    min: float | None = None
    max: float | None = None
    default: bool = False


def number(
    key: str,
    label: Message,
    lo: float | None = None,
    hi: float | None = None,
    *,
    unit: Message | None = None,
    kind: Literal["number", "int"] = "number",
) -> FieldSpec:
    """A number input, ``lo`` to ``hi`` (each optional)."""
    return FieldSpec(key=key, label=label, kind=kind, unit=unit, min=lo, max=hi)


whole = partial(number, kind="int")
"""A whole-number input, ``lo`` to ``hi`` (each optional)."""


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
    """A list of objects under ``key``; ``kind_field`` (a choice) may pick the fields shown.
    With ``nested_kind`` each item is ``{<kind>: {<the other fields>}}``."""

    key: str
    legend: Message
    item: Message  # what one row is called ("op", "flow"), for buttons and labels
    fields: tuple[FieldSpec, ...]
    new_row: Mapping[str, Any]
    max_rows: int
    kind_field: str | None = None
    fields_by_kind: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reorder: bool = True
    nested_kind: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EditorSpec:
    groups: tuple[Group, ...] = ()
    rows: tuple[Rows, ...] = ()

    def fits(self, raw: Any) -> bool:
        """True when the form can carry ``raw`` whole (else the JSON editor is shown)."""
        if not isinstance(raw, Mapping):
            return False
        top: dict[str, FieldSpec | OneOf] = {}
        for group in self.groups:
            if group.key is None:
                top.update(_by_key(group.fields))
                continue
            obj = raw.get(group.key, {})
            if not isinstance(obj, Mapping) or not _fits_object(obj, _by_key(group.fields)):
                return False
        rows = {r.key: r for r in self.rows}
        groups = {g.key for g in self.groups if g.key}
        rest = {k: v for k, v in raw.items() if k not in rows and k not in groups}
        if not _fits_object(rest, top):
            return False
        return all(_fits_rows(r, raw.get(r.key, [])) for r in self.rows)


def _by_key(fields: Iterable[FieldSpec | OneOf]) -> dict[str, FieldSpec | OneOf]:
    out: dict[str, FieldSpec | OneOf] = {}
    for f in fields:
        if isinstance(f, OneOf):
            out.update((k, f) for k in f.keys)
        else:
            out[f.key] = f
    return out


def _fits_object(obj: Mapping[Any, Any], fields: Mapping[str, FieldSpec | OneOf]) -> bool:
    return all(k in fields and _fits_value(fields[k], v) for k, v in obj.items())


def _fits_value(f: FieldSpec | OneOf, v: Any) -> bool:
    if f.kind == "bool":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if f.kind == "ids":
        return isinstance(v, list) and all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in v
        )
    if f.kind in ("int", "number"):
        return v is None or isinstance(v, int | float)
    return v is None or isinstance(v, str | int | float)


def _fits_rows(rows: Rows, items: Any) -> bool:
    if not isinstance(items, list) or len(items) > rows.max_rows:
        return False
    fields = _by_key(rows.fields)
    for item in items:
        flat = _flat(rows, item)
        if flat is None or not _fits_object(flat, fields):
            return False
    return True


def _flat(rows: Rows, item: Any) -> dict[str, Any] | None:
    """A row's fields as one object (a nested-kind item's kind becomes its kind field)."""
    if not isinstance(item, Mapping):
        return None
    if not rows.nested_kind or rows.kind_field is None:
        return dict(item)
    if len(item) != 1:
        return None
    kind, body = next(iter(item.items()))
    if not isinstance(body, Mapping) or rows.kind_field in body:
        return None
    return {rows.kind_field: kind, **body}


# --- form → raw params ---------------------------------------------------------------------


def _texts(form: Mapping[str, Any], name: str) -> list[str]:
    """Every value posted under ``name`` (a checkbox posts its hidden "false" and its "true")."""
    getlist = getattr(form, "getlist", None)
    if callable(getlist):
        return [str(v) for v in getlist(name)]
    return [str(form[name])] if name in form else []


def _text(form: Mapping[str, Any], name: str) -> str:
    found = _texts(form, name)
    return found[-1].strip() if found else ""


def _value(kind: Kind, text: str) -> Any:
    """A typed value where the text is one; otherwise the text, for the validator to name."""
    text = text.strip()
    if kind in ("text", "choice"):
        return text
    if kind == "ids":
        return _ids(text)
    if kind in ("int", "number") and _INT.match(text):
        return int(text)
    if kind == "number" and _NUM.match(text):
        return float(text)
    return text


def _ids(text: str) -> list[int] | str:
    """``"1000-1003, 7"`` → ``[1000, 1001, 1002, 1003, 7]``; anything else stays text."""
    out: list[int] = []
    for part in re.split(r"[,\s]+", re.sub(r"\s*[-–]\s*", "-", text.strip())):
        if not part:
            continue
        m = _ID_ITEM.match(part)
        if m is None:
            return text
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo or len(out) + hi - lo + 1 > MAX_LIST:
            return text
        out.extend(range(lo, hi + 1))
    return out


def ids_text(ids: Iterable[int]) -> str:
    """Token ids as runs: ``[1000, 1001, 1002, 7]`` → ``"1000-1002, 7"``."""
    runs: list[list[int]] = []
    for t in ids:
        if runs and t == runs[-1][1] + 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _name(*parts: str | int | None) -> str:
    return ".".join(str(p) for p in parts if p is not None)


def _field_value(f: FieldSpec, form: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """(sent?, value) of one field of the posted form."""
    if f.kind == "bool":
        texts = _texts(form, name)
        if not texts:
            return False, None
        on = any(t in ("true", "on") for t in texts)
        return on != f.default, on
    text = _text(form, name)
    return text != "", _value(f.kind, text)


def digest(text: str) -> str:
    """Identifies the JSON drawn with the form (browsers post textareas with CRLF)."""
    return hashlib.sha256(text.replace("\r\n", "\n").strip().encode()).hexdigest()[:20]


def json_chosen(form: Mapping[str, Any], action: str) -> bool:
    """Whether the JSON textarea, not the form's fields, holds what the user means: the JSON
    editor alone was shown, or its text was changed since the form drew it."""
    if JSON_FIELD not in form:
        return False
    if action == "json" or DIGEST_FIELD not in form:
        return True
    return digest(_text(form, JSON_FIELD)) != _text(form, DIGEST_FIELD)


def form_to_raw(
    spec: EditorSpec | None, form: Mapping[str, Any], action: str
) -> tuple[Any, list[str]]:
    """Rebuild raw params from the posted form and apply an add/remove/up/down action.
    Returns the params and form-level problems (e.g. JSON that does not parse)."""
    if spec is None or json_chosen(form, action):
        return _json_form(form)
    raw: dict[str, Any] = {}
    for group in spec.groups:
        target = raw if group.key is None else raw.setdefault(group.key, {})
        for f in group.fields:
            if isinstance(f, OneOf):
                chosen = _text(form, _name(group.key, f.name, "kind")) or f.keys[0]
                chosen = chosen if chosen in f.keys else f.keys[0]
                text = _text(form, _name(group.key, f.name, "value"))
                if text != "":
                    target[chosen] = _value(f.kind, text)
                continue
            sent, value = _field_value(f, form, _name(group.key, f.key))
            if sent:
                target[f.key] = value
    for rows in spec.rows:
        raw[rows.key] = _rows_from_form(rows, form, action)
    return raw, []


# Python's json module's reasons, said in the page's language (matched by their start).
_JSON_REASONS: tuple[tuple[str, Message], ...] = (
    (
        "Expecting value",
        msg("a value was expected (a number, text in double quotes, true, false, null, [ or {)"),
    ),
    ("Expecting property name", msg("a field name in double quotes was expected")),
    ("Expecting ':'", msg("a colon was expected after the field name")),
    ("Expecting ','", msg("a comma or a closing bracket was expected")),
    ("Unterminated string", msg("a text is not closed by a double quote")),
    ("Invalid control character", msg("a text holds a line break or tab (write \\n or \\t)")),
    ("Invalid \\u", msg("a \\u escape needs four hexadecimal digits")),
    ("Invalid \\escape", msg("a backslash starts an escape JSON does not have")),
    ("Extra data", msg("more text follows the end of the JSON value")),
    ("Illegal trailing comma", msg("a comma comes right before a closing bracket")),
)
_JSON_OTHER = msg("this cannot be read as JSON")


def json_reason(python_msg: str) -> Message:
    return next((m for start, m in _JSON_REASONS if python_msg.startswith(start)), _JSON_OTHER)


def _json_form(form: Mapping[str, Any]) -> tuple[Any, list[str]]:
    texts = _texts(form, JSON_FIELD)
    text = texts[-1] if texts else ""
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        bad = msg(
            "That is not valid JSON: {error} at line {line}, column {column}.",
            error=json_reason(exc.msg),
            line=exc.lineno,
            column=exc.colno,
        )
        return text, [i18n.render(bad)]
    except (ValueError, RecursionError):
        return text, [i18n.render(TOO_BIG)]


def _rows_from_form(rows: Rows, form: Mapping[str, Any], action: str) -> list[dict[str, Any]]:
    try:
        count = min(int(_text(form, _name(rows.key, "count")) or "0"), rows.max_rows + 1)
    except ValueError:
        count = 0
    items: list[dict[str, Any]] = []
    for i in range(count):
        item: dict[str, Any] = {}
        for f in rows.fields:
            sent, value = _field_value(f, form, _name(rows.key, i, f.key))
            if sent or f.key == rows.kind_field:
                item[f.key] = value
        items.append(_shaped(rows, item))
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


def _shaped(rows: Rows, item: dict[str, Any]) -> dict[str, Any]:
    """A posted row as the params hold it: fields another kind uses are left out (they were on
    screen before the kind changed); a nested-kind row becomes ``{kind: {fields}}``."""
    if rows.kind_field is None:
        return item
    kind = item.get(rows.kind_field)
    keep = rows.fields_by_kind.get(kind) if isinstance(kind, str) else None
    if keep is not None:
        item = {k: v for k, v in item.items() if k == rows.kind_field or k in keep}
    if not rows.nested_kind:
        return item
    body = {k: v for k, v in item.items() if k != rows.kind_field}
    return {str(kind): body}


# --- raw params + issues → what the template draws -----------------------------------------


def issues_by_name(exc: ParamError) -> dict[str, list[str]]:
    """Issues keyed by the dotted form name their ``loc`` points at ("ops.3.len")."""
    found: dict[str, list[str]] = {}
    gettext = i18n.gettext_for()
    for issue in exc.issues:
        found.setdefault(_name(*issue.loc), []).append(issue.text(gettext))
    return found


class _Placer:
    """Hands each drawn field its issues, each named by the field's label."""

    def __init__(self, issues: Mapping[str, list[str]]) -> None:
        self.issues = issues
        self.placed: set[str] = set()

    def take(self, label: Message | str | None, *names: str) -> list[str]:
        found: list[str] = []
        for name in names:
            self.placed.add(name)
            for text in self.issues.get(name, []):
                found.append(labelled(label, text) if label else text)
        return found

    def leftover(self, spec: EditorSpec | None) -> list[str]:
        """Issues of fields not drawn (the JSON editor alone is shown), each named by its
        field's label where the spec has one, else by its params path."""
        found: list[str] = []
        for name, msgs in self.issues.items():
            if name in self.placed:
                continue
            label = _label_of(spec, name) if name else None
            for m in msgs:
                found.append(labelled(label or name, m) if name else m)
        return found


def _label_of(spec: EditorSpec | None, name: str) -> Message | None:
    """The visible label of the field a dotted params path names ("packets", "link.rtt_ms",
    "script.3.bytes" → "call 3: bytes"), or None when the form has no such field."""
    if spec is None:
        return None
    parts = name.split(".")
    for group in spec.groups:
        inner = parts if group.key is None else parts[1:] if parts[0] == group.key else None
        if inner is not None and len(inner) == 1:
            f = _by_key(group.fields).get(inner[0])
            if f is not None:
                return f.label
        if group.key is not None and parts == [group.key]:
            return group.legend
    for rows in spec.rows:
        if parts[0] != rows.key:
            continue
        if len(parts) == 1:
            return rows.legend
        if not _INDEX.fullmatch(parts[1]):
            return None
        row = msg("{item} {n}", item=rows.item, n=int(parts[1]))
        f = _by_key(rows.fields).get(parts[-1]) if len(parts) > 2 else None
        return msg("{label}: {problem}", label=row, problem=f.label) if f else row
    return None


def labelled(label: Message | str, text: str) -> str:
    """An issue as the page shows it: the field's visible label, then the reason."""
    return i18n.render(msg("{label}: {problem}", label=label, problem=text))


def editor_context(
    spec: EditorSpec | None,
    raw: Any,
    *,
    issues: Mapping[str, list[str]],
    form_issues: list[str] = (),  # type: ignore[assignment]
    checked: bool = False,
    valid: bool = False,
    json_open: bool = False,
) -> dict[str, Any]:
    raw = scrub_json(raw)  # a lone surrogate (refused by parse) cannot be written out
    placer = _Placer(issues)
    groups: list[dict[str, Any]] = []
    row_lists: list[dict[str, Any]] = []
    use_form = spec is not None and spec.fits(raw)
    if spec is not None and use_form:
        groups = [_group_context(g, raw, placer) for g in spec.groups]
        row_lists = [_rows_context(r, raw.get(r.key, []), placer) for r in spec.rows]
    json_text = raw if isinstance(raw, str) else json.dumps(raw, indent=2, ensure_ascii=False)
    json_error = list(form_issues)
    return {
        "use_form": use_form,
        "groups": groups,
        "row_lists": row_lists,
        "json_text": json_text,
        "json_digest": digest(json_text),
        "json_error": json_error,
        "json_open": json_open or bool(json_error),
        "form_issues": placer.leftover(spec),
        "has_issues": bool(issues) or bool(form_issues),
        "checked": checked,
        "valid": valid,
    }


def _group_context(group: Group, raw: Mapping[str, Any], placer: _Placer) -> dict[str, Any]:
    obj = raw if group.key is None else raw.get(group.key, {})
    fields = []
    for f in group.fields:
        if isinstance(f, OneOf):
            chosen = next((k for k in f.keys if k in obj), f.keys[0])
            names = [_name(group.key, k) for k in f.keys]
            fields.append(
                {
                    "oneof": True,
                    "name": _name(group.key, f.name),
                    "label": f.label,
                    "keys": f.keys,
                    "chosen": chosen,
                    "value": _shown(f.kind, obj.get(chosen)),
                    "errors": placer.take(f.label, *names),
                }
            )
            continue
        name = _name(group.key, f.key)
        fields.append(_field(f, name, obj.get(f.key), placer.take(f.label, name)))
    group_errs = placer.take(group.legend, group.key) if group.key else []
    return {"legend": group.legend, "fields": fields, "errors": group_errs}


def _rows_context(rows: Rows, items_raw: list[Any], placer: _Placer) -> dict[str, Any]:
    items = []
    for i, raw_item in enumerate(items_raw):
        item = _flat(rows, raw_item) or {}
        kind = str(item.get(rows.kind_field, "")) if rows.kind_field else ""
        shown = rows.fields_by_kind.get(kind) if rows.kind_field else None
        nest = (kind,) if rows.nested_kind else ()
        fields = []
        for f in rows.fields:
            if not (shown is None or f.key == rows.kind_field or f.key in shown or f.key in item):
                continue
            names = [_name(rows.key, i, f.key)]
            if nest and f.key != rows.kind_field:
                names.append(_name(rows.key, i, *nest, f.key))
            errs = placer.take(f.label, *names)
            fields.append(_field(f, names[0], item.get(f.key), errs))
        row_label = msg("{item} {n}", item=rows.item, n=i)
        row_names = [_name(rows.key, i)] + ([_name(rows.key, i, kind)] if nest else [])
        row_errs = placer.take(row_label, *row_names)
        items.append({"index": i, "fields": fields, "errors": row_errs})
    return {
        "key": rows.key,
        "legend": rows.legend,
        "item": rows.item,
        "items": items,
        "reorder": rows.reorder,
        "full": len(items) >= rows.max_rows,
        "errors": placer.take(rows.legend, rows.key),
    }


def _shown(kind: Kind, value: Any) -> Any:
    """A value as its input shows it."""
    if value is None:
        return ""
    if kind == "ids" and isinstance(value, list):
        return ids_text(value)
    return value


def _field(f: FieldSpec, name: str, value: Any, found: list[str]) -> dict[str, Any]:
    return {
        "oneof": False,
        "name": name,
        "label": f.label,
        "kind": f.kind,
        "choices": [(c, f.labels.get(c, c)) for c in f.choices],
        "unit": f.unit,
        "min": f.min,
        "max": f.max,
        "checked": (f.default if value is None else value is True) if f.kind == "bool" else False,
        "value": _shown(f.kind, value),
        "errors": found,
    }
