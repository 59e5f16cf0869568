"""struct sk_buff, its head buffer and skb_shared_info, as include/linux/skbuff.h lays them out.

Models ``struct sk_buff`` (include/linux/skbuff.h:844) and its head buffer: the
``head``/``data``/``tail``/``end`` offsets, ``len``/``data_len``, ``truesize``, ``users``, the
shared ``skb_shared_info`` (``dataref``, ``frags[]``, ``frag_list``, the GSO fields) and fclone
pairing. Numbers follow the Stepscope kernel facts sheet §1 (x86-64: sizeof sk_buff rounds to
256, skb_shared_info is 320, MAX_SKB_FRAGS 17).

:class:`World` holds every sk_buff, head buffer and page of one scenario, with the inline
helpers skbuff.h gives (``skb_tailroom``, ``skb_cloned``, ``skb_header_cloned``). It is mutable
only inside one run; every frame gets a plain-value snapshot (:mod:`app.sim.skbuff.state`).
Each op is a function ``(World, Op) -> Step`` in the module that follows its kernel file;
:mod:`app.sim.skbuff.machine` lists them. Fatal kernel outcomes (BUG(), use-after-free) are
returned as step results, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.sim.core import Message, SourceRef, msg
from app.sim.core.i18n import Param
from app.sim.skbuff.sources import KNOWN_CALLERS, SOURCES, UNCHECKED_CALLERS

if TYPE_CHECKING:  # ops.py takes SHINFO from here for its size limits
    from app.sim.skbuff.ops import Op

# Words of a step: a message (translated by the web layer) or, for a bare identifier, a str.
Text = Message | str

# ---- constants (x86-64, Linux 6.4) -----------------------------------------------------------
SMP_CACHE_BYTES = 64
PAGE_SIZE = 4096
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
SKB_STRUCT = 256  # SKB_DATA_ALIGN(sizeof(struct sk_buff)), 224 or 232 rounded
TRUESIZE_OVERHEAD = SKB_STRUCT + SHINFO  # SKB_TRUESIZE(0) = 576
MAX_SKB_FRAGS = 17
DATAREF_SHIFT = 16
DATAREF_MASK = (1 << DATAREF_SHIFT) - 1
CHECKSUM_NAMES = ("CHECKSUM_NONE", "CHECKSUM_UNNECESSARY", "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL")
CHECKSUM_PARTIAL = 3
CHECKSUM_UNNECESSARY = 1

BUG_RESULTS = (
    "skb_over_panic",
    "skb_under_panic",
    "skb_put_nonlinear",
    "__skb_pull",
    "pskb_expand_head_shared",
    "skb_frag_overflow",
    "use_after_free",
)


# ---- the objects (mutable within one run only) -----------------------------------------------
@dataclass(slots=True)
class Region:
    start: int
    end: int
    label: str
    kind: str  # "header" | "payload"


@dataclass(slots=True)
class Frag:
    page: str
    offset: int
    size: int


@dataclass(slots=True)
class Buffer:
    id: str
    nbytes: int
    end: int
    where: str
    dataref: int = 1
    freed: bool = False
    head_frag: bool = False  # carved from a page (fragment), not a slab object
    stolen_by: str | None = None  # GRO turned this head into a frag of that skb
    # skb_shared_info's GSO fields (shared by clones, copied by pskb_expand_head/skb_copy).
    gso_size: int = 0
    gso_segs: int = 0
    gso_type: tuple[str, ...] = ()
    frags: list[Frag] = field(default_factory=list)
    frag_list: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    # skb_shared_info's flags (SKBFL_*) and destructor_arg: the ubuf_info of a zerocopy send.
    flags: list[str] = field(default_factory=list)
    uarg: str | None = None


@dataclass(slots=True)
class Skb:
    name: str
    buffer: str
    end: int
    truesize: int
    data: int = 0
    tail: int = 0
    len: int = 0
    data_len: int = 0
    users: int = 1
    fclone: str = "none"  # none | orig | clone | unavailable
    pair: str | None = None  # fclone pair id (sk_buff_fclones) for orig/clone
    cloned: bool = False
    nohdr: bool = False
    has_sk: bool = False
    origin: str = ""
    status: str = "live"  # live | dropped | consumed | in_frag_list
    owner: str | None = None  # head skb whose frag_list holds this one
    # Header offsets from head (u16 in the kernel); None is "unset" ((typeof)~0U).
    # __finalize_skb_around leaves network_header 0 (memset) and marks the other two unset.
    mac_header: int | None = None
    network_header: int = 0
    transport_header: int | None = None
    # cb[48]: which layer's private struct is laid over it, and the fields modelled.
    cb_layer: str | None = None  # "IPCB" (struct inet_skb_parm) | "TCP_SKB_CB" (tcp_skb_cb)
    cb: dict[str, int] = field(default_factory=dict)
    # Checksum state: ip_summed is CHECKSUM_NONE (0) .. CHECKSUM_PARTIAL (3); csum_start is
    # counted from head, csum_offset from csum_start (only meaningful for CHECKSUM_PARTIAL).
    ip_summed: int = 0
    csum_start: int = 0
    csum_offset: int = 0
    gro_count: int = 0  # NAPI_GRO_CB(skb)->count while GRO holds this skb (0: not held)
    drop_reason: str | None = None  # enum skb_drop_reason name, set by kfree_skb_reason
    dst: str | None = None  # _skb_refdst: None, "noref" (SKB_DST_NOREF set) or "ref" (refcounted)
    pp_recycle: bool = False  # skb_mark_for_recycle: the head page goes back to its page_pool


@dataclass(slots=True)
class Uarg:
    """struct ubuf_info_msgzc of one MSG_ZEROCOPY send (net/core/skbuff.c msg_zerocopy_alloc):
    its id range [id, id + len - 1] in sk_zckey order, and its reference count."""

    name: str
    id: int
    len: int
    bytelen: int
    refcnt: int = 1
    done: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """What one op did: the outcome plus the words and marks for its frame."""

    primary: str
    result: str
    narration: Text
    source: SourceRef
    notes: tuple[Text, ...] = ()
    mark: str | None = None
    bug: str | None = None  # the message the kernel would print, for BUG outcomes


class World:
    """All skbs, head buffers and pages of one scenario."""

    def __init__(self) -> None:
        self.skbs: dict[str, Skb] = {}
        self.buffers: dict[str, Buffer] = {}
        self.pages: dict[str, int] = {}
        self.fclone_refs: dict[str, int] = {}
        self.uargs: dict[str, Uarg] = {}
        self.zckey = 0  # sk->sk_zckey: the id the next MSG_ZEROCOPY send gets
        self.held_uarg: str | None = None  # the reference tcp_sendmsg_locked holds while it runs
        self.errqueue: list[str] = []  # sk->sk_error_queue: zerocopy completions queued
        self._counters = {"buf": 0, "page": 0, "fc": 0, "upage": 0}

    def next_id(self, kind: str) -> str:
        """A fresh id for a head buffer ("buf3"), a page ("page2") or an fclone pair ("fc1")."""
        self._counters[kind] += 1
        return f"{kind}{self._counters[kind]}"

    def buf(self, skb: Skb) -> Buffer:
        return self.buffers[skb.buffer]

    @staticmethod
    def tailroom(skb: Skb) -> int:
        """skb_tailroom(): 0 once the skb is nonlinear."""
        return 0 if skb.data_len else skb.end - skb.tail

    def skb_cloned(self, skb: Skb) -> bool:
        """skb_cloned(): the cloned bit is set and someone else still holds the data."""
        return skb.cloned and (self.buf(skb).dataref & DATAREF_MASK) != 1

    def skb_header_cloned(self, skb: Skb) -> bool:
        """skb_header_cloned(): another skb may still read the header bytes."""
        if not skb.cloned:
            return False
        d = self.buf(skb).dataref
        return (d & DATAREF_MASK) - ((d >> DATAREF_SHIFT) & DATAREF_MASK) != 1


Handler = Callable[[World, "Op"], Step]
"""One op: what the kernel function does to the world, and the words for its frame."""


def make_step(
    op: Op,
    primary: str,
    result: str,
    text: Text,
    *,
    notes: tuple[Text, ...] = (),
    mark: str | None = None,
    bug: str | None = None,
) -> Step:
    """The frame of ``op``: its words, prefixed with the caller a scenario names in ``via``
    (and a note when that caller uses the unchecked __ variant), its source line, and the
    panic mark every fatal result gets."""
    if op.via:
        where = KNOWN_CALLERS.get(op.via)
        who = f"{op.via} ({where})" if where else op.via
        text = msg("Called from {who}. {text_}", who=who, text_=text)
        variant = UNCHECKED_CALLERS.get(op.via)
        if variant and result == "ok" and variant.lstrip("_") == op.op:
            notes = (
                *notes,
                msg(
                    "{via} actually calls {variant}, the variant without the length check: the caller has already validated the lengths.",
                    via=op.via,
                    variant=variant,
                ),
            )
    if result != "ok" and result != "null" and mark is None:
        mark = "panic"
    return Step(
        primary=primary,
        result=result,
        narration=text,
        source=SOURCES[op.op],
        notes=notes,
        mark=mark,
        bug=bug,
    )


def null_step(op: Op, primary: str, text: Text) -> Step:
    """The frame of a call that returns NULL (or false, or an error) and changes nothing."""
    return make_step(op, primary, "null", text, mark="null")


def write_region(b: Buffer, start: int, end: int, label: str, kind: str) -> None:
    """Record bytes [start, end) as written; newer writes cover older ones."""
    if end <= start:
        return
    kept: list[Region] = []
    for r in b.regions:
        if r.end <= start or r.start >= end:
            kept.append(r)
            continue
        if r.start < start:
            kept.append(Region(r.start, start, r.label, r.kind))
        if r.end > end:
            kept.append(Region(end, r.end, r.label, r.kind))
    kept.append(Region(start, end, label, kind))
    kept.sort(key=lambda r: (r.start, r.end))
    b.regions = kept


def copy_regions(src: list[Region], lo: int, hi: int, shift: int) -> list[Region]:
    out = []
    for r in src:
        s, e = max(r.start, lo), min(r.end, hi)
        if e > s:
            out.append(Region(s + shift, e + shift, r.label, r.kind))
    return out


def grew(s: Skb, l0: int, dl0: int, t0: int) -> dict[str, Param]:
    """The figures of "len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} →
    {truesize}": what adding paged data to ``s`` changed, from the values before."""
    return {
        "l0": l0,
        "len": s.len,
        "dl0": dl0,
        "data_len": s.data_len,
        "t0": t0,
        "truesize": s.truesize,
    }
