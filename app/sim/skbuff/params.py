"""Parse and validate raw JSON ops against the schema in :mod:`app.sim.skbuff.ops`.

:func:`parse` checks everything a user can get wrong *before* anything runs and reports every
problem at once as a :class:`~app.sim.core.ParamError` whose ``loc`` points at the op and field
to change; :func:`dump` gives the raw form back. Runtime outcomes (NULL returns, BUG()s,
use-after-free) are not input errors: the run shows them.
"""

from __future__ import annotations

from typing import Any

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import Message, msg
from app.sim.core.validate import Checker
from app.sim.skbuff.ops import (
    CHAIN,
    CREATE,
    CREATORS,
    DERIVE,
    DERIVE_PREFIX,
    DROP_REASONS,
    INT_FIELDS,
    MAX_FIELD,
    MAX_FRAG_SPAN,
    MAX_LABEL,
    MAX_OPS,
    MAX_SKBS,
    MIN_BUILD_FRAG,
    NAME_RE,
    OP_NAMES,
    SIGNED_OFFSET_OPS,
    SPECS,
    STR_FIELDS,
    TCP_FLAGS,
    VIA_RE,
    Op,
    OpSpec,
    SkbParams,
)


def _allowed(spec: OpSpec) -> tuple[str, ...]:
    base = ("op", "skb", "via")
    return base + spec.required + spec.optional


def parse(raw: Any) -> SkbParams:
    """Validate raw JSON-shaped params and return frozen :class:`SkbParams`."""
    if not isinstance(raw, dict):
        raise ParamError.single(
            (), msg("params must be an object like {example}.", example='{"ops": [...]}')
        )
    issues: list[ParamIssue] = []
    for key in raw:
        if key != "ops":
            issues.append(
                ParamIssue(
                    loc=(str(key),),
                    msg=msg("unknown field '{key}'; only \"ops\" is allowed.", key=str(key)),
                )
            )
    if "ops" not in raw:
        issues.append(
            ParamIssue(
                loc=("ops",),
                msg=msg(
                    '"ops" is missing; give a list of ops, e.g. {example}.',
                    example='[{"op": "alloc_skb", "size": 1500}]',
                ),
            )
        )
        raise ParamError(issues)
    raw_ops = raw["ops"]
    if not isinstance(raw_ops, list):
        issues.append(
            ParamIssue(
                loc=("ops",),
                msg=msg('"ops" must be a list of op objects, not {what}.', what=_kind(raw_ops)),
            )
        )
        raise ParamError(issues)
    if not raw_ops:
        issues.append(
            ParamIssue(
                loc=("ops",),
                msg=msg(
                    "ops is empty; start with an allocation such as {example}.",
                    example='{"op": "alloc_skb", "size": 1500}',
                ),
            )
        )
        raise ParamError(issues)
    if len(raw_ops) > MAX_OPS:
        issues.append(
            ParamIssue(
                loc=("ops",),
                msg=msg(
                    "at most {max} ops are allowed; you gave {n}. Remove {extra}.",
                    max=MAX_OPS,
                    n=len(raw_ops),
                    extra=len(raw_ops) - MAX_OPS,
                ),
            )
        )
        raise ParamError(issues)

    names: list[str] = []  # skbs created so far, in order
    ops: list[Op] = []
    checker = Checker()
    for i, item in enumerate(raw_ops):
        op = _OpParser(i, item, names, checker).parse()
        if op is not None:
            ops.append(op)
    if checker.issues:
        raise ParamError(checker.issues)
    return SkbParams(ops=tuple(ops))


def _kind(v: Any) -> Message:
    if v is None:
        return msg("null")
    if isinstance(v, bool):
        return msg("a boolean")
    if isinstance(v, int):
        return msg("a number")
    if isinstance(v, float):
        return msg("a decimal number")
    if isinstance(v, str):
        return msg("a string")
    if isinstance(v, list):
        return msg("a list")
    if isinstance(v, dict):
        return msg("an object")
    return msg("{value}", value=type(v).__name__)


def _too_many_skbs(op: str) -> Message:
    return msg(
        "a scenario may create at most {max} skbs and this {op} would make one more; "
        "free or reuse one (kfree_skb/consume_skb do not lower the count) or split the scenario.",
        max=MAX_SKBS,
        op=op,
    )


def _names_hint(names: list[str]) -> Message:
    if not names:
        return msg("no skb exists yet")
    shown = ", ".join(f"'{n}'" for n in names[:8]) + (" …" if len(names) > 8 else "")
    return msg("existing skbs: {names}", names=shown)


class _OpParser:
    """Checks one raw op (index ``i``) against its spec, collecting every issue in the shared
    :class:`~app.sim.core.validate.Checker`; ``names`` are the skbs created by earlier ops."""

    def __init__(self, i: int, item: Any, names: list[str], checker: Checker) -> None:
        self.i, self.item, self.names, self.checker = i, item, names, checker

    def bad(self, field: str | None, text: Message) -> None:
        loc: tuple[str | int, ...] = ("ops", self.i) if field is None else ("ops", self.i, field)
        self.checker.add(loc, text)

    def parse(self) -> Op | None:
        start = len(self.checker.issues)
        head = self.head()
        if head is None:
            return None
        name, spec = head
        allowed = self.fields(name, spec)
        values = self.integers(name, spec, allowed)
        values.update(self.texts(allowed))
        self.sizes(name, values)
        target, src = self.skb_names(name, spec)
        if len(self.checker.issues) > start or target is None:
            return None
        return Op(op=name, skb=target, src=src, **values)

    def head(self) -> tuple[str, OpSpec] | None:
        """The op's name and spec, or None when the op cannot be read at all."""
        item, i = self.item, self.i
        if not isinstance(item, dict):
            self.bad(
                None,
                msg(
                    "each op must be an object like {example}, not {what}.",
                    example='{"op": "skb_put", "len": 100}',
                    what=_kind(item),
                ),
            )
            return None
        name = item.get("op")
        if "op" not in item:
            self.bad(
                "op", msg('this op has no "op" field; name the kernel function, e.g. "skb_put".')
            )
            return None
        if not isinstance(name, str) or name not in SPECS:
            shown = ", ".join(OP_NAMES)
            self.bad("op", msg("unknown op {name}; use one of: {ops}.", name=repr(name), ops=shown))
            return None
        spec = SPECS[name]
        if i == 0 and spec.kind != CREATE:
            self.bad(
                "op",
                msg(
                    "the first op must create an skb ({creators}); you started with {name}.",
                    creators=", ".join(CREATORS),
                    name=name,
                ),
            )
        return name, spec

    def fields(self, name: str, spec: OpSpec) -> tuple[str, ...]:
        """Unknown and missing fields; returns the fields this op accepts."""
        item = self.item
        allowed = _allowed(spec)
        for key in item:
            if key not in allowed:
                extra = ", ".join(a for a in allowed if a != "op")
                self.bad(
                    str(key),
                    msg(
                        "{name} has no field '{key}'; its fields are: {fields}.",
                        name=name,
                        key=str(key),
                        fields=extra,
                    ),
                )
        for req in spec.required:
            if req not in item:
                self.bad(
                    req,
                    msg(
                        '{name} needs "{field}"; add it, e.g. "{field}": {example}.',
                        name=name,
                        field=req,
                        example=_example(req),
                    ),
                )
        return allowed

    def integers(self, name: str, spec: OpSpec, allowed: tuple[str, ...]) -> dict[str, Any]:
        """Byte counts and offsets: whole numbers within the op's limits."""
        item = self.item
        values: dict[str, Any] = {}
        limits = {f: (mx, why) for f, mx, why in spec.limits}
        for f in INT_FIELDS:
            if f in item and f in allowed:
                v = item[f]
                if isinstance(v, bool) or not isinstance(v, int):
                    self.bad(
                        f,
                        msg(
                            "{field} must be a whole number of bytes, not {what}.",
                            field=f,
                            what=_kind(v),
                        ),
                    )
                elif f == "offset" and name in SIGNED_OFFSET_OPS and -MAX_FIELD <= v < 0:
                    values[f] = v  # e.g. skb_set_mac_header(skb, -ETH_HLEN)
                elif v < 0:
                    self.bad(f, msg("{field} must be ≥ 0; you gave {v}.", field=f, v=v))
                elif f in limits and v > limits[f][0]:
                    mx, why = limits[f]
                    self.bad(
                        f,
                        msg(
                            "{field} must be at most {max} ({why}); you gave {v}.",
                            field=f,
                            max=mx,
                            why=why,
                            v=v,
                        ),
                    )
                elif f not in limits and v > MAX_FIELD:
                    self.bad(
                        f,
                        msg(
                            "{field} must be at most {max} (4 MiB); you gave {v}.",
                            field=f,
                            max=MAX_FIELD,
                            v=v,
                        ),
                    )
                else:
                    values[f] = v
        return values

    def texts(self, allowed: tuple[str, ...]) -> dict[str, Any]:
        """Label, TCP flags, drop reason and the calling function's name."""
        item = self.item
        values: dict[str, Any] = {}
        if "label" in item and "label" in allowed:
            v = item["label"]
            if not isinstance(v, str) or not v.strip():
                self.bad(
                    "label",
                    msg(
                        'label must be a short non-empty string such as "TCP", not {what}.',
                        what=_kind(v),
                    ),
                )
            elif len(v) > MAX_LABEL:
                self.bad(
                    "label",
                    msg(
                        "label must be at most {max} characters; {value} has {n}.",
                        max=MAX_LABEL,
                        value=repr(v),
                        n=len(v),
                    ),
                )
            else:
                values["label"] = v
        if "flags" in item and "flags" in allowed:
            v = item["flags"]
            parts = v.upper().split("|") if isinstance(v, str) else []
            if not parts or any(p not in TCP_FLAGS for p in parts):
                self.bad(
                    "flags",
                    msg(
                        'flags must be TCP flag names joined by "|", e.g. "ACK|PSH" (from: {flags}).',
                        flags=", ".join(TCP_FLAGS),
                    ),
                )
            else:
                values["flags"] = "|".join(f for f in TCP_FLAGS if f in parts)
        if "reason" in item and "reason" in allowed:
            v = item["reason"]
            key = v.upper().removeprefix("SKB_DROP_REASON_") if isinstance(v, str) else ""
            key = "CONSUMED" if key == "SKB_CONSUMED" else key
            if key not in DROP_REASONS:
                self.bad(
                    "reason",
                    msg(
                        "reason must name a Linux 6.4 drop reason such as NO_SOCKET, TCP_CSUM or "
                        "PKT_TOO_SMALL (enum skb_drop_reason, include/net/dropreason-core.h)."
                    ),
                )
            else:
                values["reason"] = key
        if "via" in item:
            v = item["via"]
            if not isinstance(v, str) or not VIA_RE.fullmatch(v):
                self.bad(
                    "via",
                    msg(
                        'via names the calling kernel function, e.g. "eth_type_trans" '
                        "(letters, digits, _; up to 48)."
                    ),
                )
            else:
                values["via"] = v
        return values

    def sizes(self, name: str, values: dict[str, Any]) -> None:
        """Limits that depend on the op: a build_skb buffer's minimum, a frag's span."""
        if (
            name in ("build_skb", "napi_build_skb")
            and values.get("size", MIN_BUILD_FRAG) < MIN_BUILD_FRAG
        ):
            self.bad(
                "size",
                msg(
                    "size is the driver's buffer size and must be at least {min} (320 bytes "
                    "of skb_shared_info plus a 64-byte cache line); you gave {v}.",
                    min=MIN_BUILD_FRAG,
                    v=values["size"],
                ),
            )
        if name in ("skb_add_rx_frag", "skb_fill_page_desc") and "size" in values:
            span = values["size"] + values.get("offset", 0)
            if span > MAX_FRAG_SPAN:
                self.bad(
                    "size",
                    msg(
                        "offset + size must fit one 32 KiB page-frag chunk (≤ {max}); you gave {v}.",
                        max=MAX_FRAG_SPAN,
                        v=span,
                    ),
                )

    def name_field(self, field: str, default: str | None) -> str | None:
        item = self.item
        if field not in item:
            return default
        v = item[field]
        if not isinstance(v, str) or not NAME_RE.fullmatch(v):
            self.bad(
                field,
                msg(
                    "{field} must name an skb: a lowercase letter then up to 15 lowercase "
                    "letters, digits or _; {value} is not one.",
                    field=field,
                    value=repr(v),
                ),
            )
            return None
        return v

    def new_name(self, op: str, target: str) -> None:
        """``op`` creates an skb called ``target``: a name not taken, within MAX_SKBS."""
        if target in self.names:
            self.bad(
                "skb",
                msg(
                    "an skb named '{name}' already exists; give the new one another name "
                    'with "skb".',
                    name=target,
                ),
            )
        elif len(self.names) >= MAX_SKBS:
            self.bad("op", _too_many_skbs(op))
        self.names.append(target)

    def skb_names(self, name: str, spec: OpSpec) -> tuple[str | None, str | None]:
        """Which skb the op acts on (and derives from): created, existing, not duplicated."""
        item, names = self.item, self.names
        target = self.name_field("skb", None)
        src: str | None = None
        if spec.kind == CREATE:
            target = target or "skb"
            self.new_name(name, target)
        elif spec.kind == DERIVE:
            src = self.name_field("from", "skb")
            if src is not None and src not in names:
                self.bad("from", _no_skb(src, names))
            if target is None and "skb" not in item:
                prefix = DERIVE_PREFIX[name]
                n = 1
                while f"{prefix}{n}" in names:
                    n += 1
                target = f"{prefix}{n}"
            if target is not None:
                self.new_name(name, target)
        elif spec.kind == CHAIN:
            target = target or "skb"
            src = self.name_field("from", None)
            for field, who in (("skb", target), ("from", src)):
                if who is not None and who not in names:
                    self.bad(field, _no_skb(who, names))
            if src is not None and src == target:
                self.bad(
                    "from",
                    msg(
                        "an skb cannot be chained onto its own frag_list; pick another skb than "
                        "'{name}'.",
                        name=target,
                    ),
                )
        else:
            target = target or "skb"
            if target not in names:
                self.bad("skb", _no_skb(target, names))
        return target, src


def _no_skb(name: str, names: list[str]) -> Message:
    return msg(
        "there is no skb named '{name}' before this op; {hint}.", name=name, hint=_names_hint(names)
    )


def _example(field: str) -> str:
    return {"from": '"skb"'}.get(field, "100")


def dump(params: SkbParams) -> dict[str, Any]:
    """The raw JSON-shaped form of ``params``; ``parse(dump(p)) == p``."""
    out: list[dict[str, Any]] = []
    for op in params.ops:
        spec = SPECS[op.op]
        d: dict[str, Any] = {"op": op.op}
        if spec.kind in (DERIVE, CHAIN):
            d["from"] = op.src
            d["skb"] = op.skb
        elif op.skb != "skb":
            d["skb"] = op.skb
        for f in (*INT_FIELDS, *STR_FIELDS, "via"):
            v = getattr(op, f)
            if v is not None:
                d[f] = v
        out.append(d)
    return {"ops": out}
