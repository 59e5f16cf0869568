"""Operation schema for the sk_buff explainer: parse and validate raw JSON ops (stdlib only).

A scenario is ``{"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_put", "len": 100}]}``.
Op names are the Linux 6.4 function names they model. :func:`parse` checks everything a user
can get wrong *before* anything runs and reports every problem at once as a
:class:`~app.sim.core.ParamError` whose ``loc`` points at the op and field to change. Runtime
outcomes (NULL returns, BUG()s, use-after-free) are not input errors: the run shows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import Message, msg
from app.sim.core.validate import Checker

MAX_OPS = 500
# Every frame draws every skb; past a handful the picture stops teaching and pages balloon.
MAX_SKBS = 16
MiB = 1024 * 1024
# KMALLOC_MAX_SIZE on x86-64 6.4 (page allocator, order 10): no head can be larger.
MAX_ALLOC_BYTES = 4 * MiB
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
# The largest data area whose SKB_HEAD_ALIGN still fits in MAX_ALLOC_BYTES.
MAX_HEAD_DATA = MAX_ALLOC_BYTES - SHINFO
MAX_FIELD = MAX_ALLOC_BYTES
# A frag must live in one page-frag chunk; sk_page_frag() hands out up to 32 KiB compound pages.
MAX_FRAG_SPAN = 32 * 1024
# build_skb()'s frag_size: the head must hold skb_shared_info (320) and at least a cache line.
MIN_BUILD_FRAG = SHINFO + 64
MAX_LABEL = 16
MAX_VIA = 48

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,15}")
VIA_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")

CREATE, DERIVE, ACT, CHAIN = "create", "derive", "act", "chain"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSpec:
    """What an op takes: its kind and its integer/str fields (besides skb and via)."""

    kind: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    # The largest value each integer field accepts, with the reason shown to the user.
    limits: tuple[tuple[str, int, Message], ...] = ()


def _alloc_limit(field: str, extra: int, why: Message) -> tuple[tuple[str, int, Message], ...]:
    return ((field, MAX_HEAD_DATA - extra, why),)


# TCP header flag bits in tcp[13] order (include/net/tcp.h TCPHDR_*).
TCP_FLAGS = ("FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR")
U32_MAX = 0xFFFFFFFF
# enum skb_drop_reason in Linux 6.4 (include/net/dropreason-core.h), without the
# SKB_DROP_REASON_ prefix; CONSUMED is SKB_CONSUMED (value 1), the rest follow from 2 in order.
DROP_REASONS: tuple[str, ...] = (
    "CONSUMED",
    *"""NOT_SPECIFIED NO_SOCKET PKT_TOO_SMALL TCP_CSUM SOCKET_FILTER UDP_CSUM NETFILTER_DROP
    OTHERHOST IP_CSUM IP_INHDR IP_RPFILTER UNICAST_IN_L2_MULTICAST XFRM_POLICY IP_NOPROTO
    SOCKET_RCVBUFF PROTO_MEM TCP_MD5NOTFOUND TCP_MD5UNEXPECTED TCP_MD5FAILURE SOCKET_BACKLOG
    TCP_FLAGS TCP_ZEROWINDOW TCP_OLD_DATA TCP_OVERWINDOW TCP_OFOMERGE TCP_RFC7323_PAWS
    TCP_INVALID_SEQUENCE TCP_RESET TCP_INVALID_SYN TCP_CLOSE TCP_FASTOPEN TCP_OLD_ACK
    TCP_TOO_OLD_ACK TCP_ACK_UNSENT_DATA TCP_OFO_QUEUE_PRUNE TCP_OFO_DROP IP_OUTNOROUTES
    BPF_CGROUP_EGRESS IPV6DISABLED NEIGH_CREATEFAIL NEIGH_FAILED NEIGH_QUEUEFULL NEIGH_DEAD
    TC_EGRESS QDISC_DROP CPU_BACKLOG XDP TC_INGRESS UNHANDLED_PROTO SKB_CSUM SKB_GSO_SEG
    SKB_UCOPY_FAULT DEV_HDR DEV_READY FULL_RING NOMEM HDR_TRUNC TAP_FILTER TAP_TXFILTER
    ICMP_CSUM INVALID_PROTO IP_INADDRERRORS IP_INNOROUTES PKT_TOO_BIG DUP_FRAG
    FRAG_REASM_TIMEOUT FRAG_TOO_FAR TCP_MINTTL IPV6_BAD_EXTHDR IPV6_NDISC_FRAG
    IPV6_NDISC_HOP_LIMIT IPV6_NDISC_BAD_CODE IPV6_NDISC_BAD_OPTIONS
    IPV6_NDISC_NS_OTHERHOST""".split(),
)

SPECS: dict[str, OpSpec] = {
    "alloc_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit(
            "size", 0, msg("the head plus 320 bytes of skb_shared_info must fit 4 MiB")
        ),
    ),
    "alloc_skb_fclone": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit(
            "size", 0, msg("the head plus 320 bytes of skb_shared_info must fit 4 MiB")
        ),
    ),
    "netdev_alloc_skb": OpSpec(
        kind=CREATE,
        required=("len",),
        limits=_alloc_limit("len", 64, msg("len + NET_SKB_PAD + 320 must fit 4 MiB")),
    ),
    "napi_alloc_skb": OpSpec(
        kind=CREATE,
        required=("len",),
        limits=_alloc_limit("len", 64, msg("len + NET_SKB_PAD + 320 must fit 4 MiB")),
    ),
    "build_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=(
            ("size", MAX_FRAG_SPAN, msg("a receive buffer is at most one 32 KiB page-frag chunk")),
        ),
    ),
    "napi_build_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=(
            ("size", MAX_FRAG_SPAN, msg("a receive buffer is at most one 32 KiB page-frag chunk")),
        ),
    ),
    "tcp_stream_alloc_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit("size", 320, msg("size + MAX_TCP_HEADER + 320 must fit 4 MiB")),
    ),
    "skb_reserve": OpSpec(kind=ACT, required=("len",)),
    "skb_put": OpSpec(kind=ACT, required=("len",), optional=("label",)),
    "skb_push": OpSpec(kind=ACT, required=("len",), optional=("label",)),
    "skb_pull": OpSpec(kind=ACT, required=("len",)),
    "skb_trim": OpSpec(kind=ACT, required=("len",)),
    "pskb_trim": OpSpec(kind=ACT, required=("len",)),
    "skb_headroom": OpSpec(kind=ACT),
    "skb_tailroom": OpSpec(kind=ACT),
    "skb_headlen": OpSpec(kind=ACT),
    "skb_add_rx_frag": OpSpec(kind=ACT, required=("size",), optional=("offset", "truesize")),
    "skb_fill_page_desc": OpSpec(kind=ACT, required=("size",), optional=("offset",)),
    "skb_gro_receive": OpSpec(kind=CHAIN, required=("from",), optional=("offset",)),
    "skb_gro_receive_list": OpSpec(kind=CHAIN, required=("from",), optional=("offset",)),
    "skb_reset_mac_header": OpSpec(kind=ACT),
    "skb_set_mac_header": OpSpec(kind=ACT, required=("offset",)),
    "skb_reset_network_header": OpSpec(kind=ACT),
    "skb_set_network_header": OpSpec(kind=ACT, required=("offset",)),
    "skb_reset_transport_header": OpSpec(kind=ACT),
    "skb_set_transport_header": OpSpec(kind=ACT, required=("offset",)),
    "pskb_may_pull": OpSpec(kind=ACT, required=("len",)),
    "ip_rcv_core": OpSpec(kind=ACT, optional=("len",)),
    "tcp_v4_fill_cb": OpSpec(
        kind=ACT,
        required=("seq",),
        optional=("len", "flags"),
        limits=(("seq", U32_MAX, msg("a TCP sequence number is 32 bits")),),
    ),
    "tcp_skb_entail": OpSpec(
        kind=ACT,
        required=("seq",),
        limits=(("seq", U32_MAX, msg("a TCP sequence number is 32 bits")),),
    ),
    "tcp_set_skb_tso_segs": OpSpec(
        kind=ACT, required=("mss",), limits=(("mss", 65535, msg("an MSS fits 16 bits")),)
    ),
    "tcp4_gro_complete": OpSpec(kind=ACT),
    "skb_segment": OpSpec(kind=ACT),
    "skb_partial_csum_set": OpSpec(
        kind=ACT,
        required=("start", "offset"),
        limits=(
            ("start", 65535, msg("start is a u16")),
            ("offset", 65535, msg("off is a u16")),
        ),
    ),
    "tcp_v4_send_check": OpSpec(kind=ACT),
    "igb_rx_checksum": OpSpec(kind=ACT),
    "skb_get": OpSpec(kind=ACT),
    "skb_set_owner_w": OpSpec(kind=ACT),
    "skb_clone": OpSpec(kind=DERIVE, optional=("from",)),
    "skb_copy": OpSpec(kind=DERIVE, optional=("from",)),
    "pskb_copy": OpSpec(kind=DERIVE, optional=("from",)),
    "pskb_expand_head": OpSpec(kind=ACT, optional=("nhead", "ntail")),
    "skb_linearize": OpSpec(kind=ACT),
    "kfree_skb": OpSpec(kind=ACT, optional=("reason",)),
    "consume_skb": OpSpec(kind=ACT),
    "__skb_header_release": OpSpec(kind=ACT),
}

OP_NAMES: tuple[str, ...] = tuple(SPECS)

# skb_set_*_header take a signed int offset relative to data.
SIGNED_OFFSET_OPS = frozenset(
    {"skb_set_mac_header", "skb_set_network_header", "skb_set_transport_header"}
)
CREATORS: tuple[str, ...] = tuple(n for n, s in SPECS.items() if s.kind == CREATE)
INT_FIELDS = ("size", "len", "offset", "truesize", "nhead", "ntail", "seq", "mss", "start")
STR_FIELDS = ("label", "flags", "reason")
DERIVE_PREFIX = {"skb_clone": "clone", "skb_copy": "copy", "pskb_copy": "copy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """One validated op. ``src`` is the JSON field "from"; unused fields stay None."""

    op: str
    skb: str = "skb"
    src: str | None = None
    size: int | None = None
    len: int | None = None
    offset: int | None = None
    truesize: int | None = None
    nhead: int | None = None
    ntail: int | None = None
    label: str | None = None
    seq: int | None = None  # a TCP sequence number (u32)
    mss: int | None = None
    start: int | None = None  # skb_partial_csum_set's start, relative to data
    flags: str | None = None  # TCP header flags, e.g. "ACK|PSH"
    reason: str | None = None  # a drop reason, e.g. "NO_SOCKET" (enum skb_drop_reason)
    via: str | None = None  # optional caller name shown in the narration, e.g. "eth_type_trans"


@dataclass(frozen=True, slots=True, kw_only=True)
class SkbParams:
    """A whole scenario: the ops in order."""

    ops: tuple[Op, ...]


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

    def skb_names(self, name: str, spec: OpSpec) -> tuple[str | None, str | None]:
        """Which skb the op acts on (and derives from): created, existing, not duplicated."""
        item, names = self.item, self.names
        target = self.name_field("skb", None)
        src: str | None = None
        if spec.kind == CREATE:
            target = target or "skb"
            if target in names:
                self.bad(
                    "skb",
                    msg(
                        "an skb named '{name}' already exists; give the new one another name "
                        'with "skb".',
                        name=target,
                    ),
                )
            elif len(names) >= MAX_SKBS:
                self.bad("op", _too_many_skbs(name))
            names.append(target)
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
                if target in names:
                    self.bad(
                        "skb",
                        msg(
                            "an skb named '{name}' already exists; give the new one another name "
                            'with "skb".',
                            name=target,
                        ),
                    )
                elif len(names) >= MAX_SKBS:
                    self.bad("op", _too_many_skbs(name))
                names.append(target)
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
