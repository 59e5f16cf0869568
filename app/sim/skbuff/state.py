"""What a frame shows of the skbs: plain values copied out of the machine after each op, typed
so the picture, the JSON API and the tests read the same names (``Trace[SkbState, None]``)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, get_args

from app.sim.core.trace import Trace


class RegionView(TypedDict):
    """Bytes [start, end) of a head buffer, written as a header or as payload."""

    start: int
    end: int
    label: str
    kind: str  # "header" | "payload"


class FragView(TypedDict):
    """One ``skb_frag_t``: a slice of a page, and how many frags reference that page."""

    page: str
    offset: int
    size: int
    refs: int


class CbView(TypedDict):
    """cb[48]: which layer's struct is laid over it now, and the fields it keeps there."""

    layer: str | None
    fields: dict[str, int]


class UargView(TypedDict):
    """The ubuf_info of a MSG_ZEROCOPY send that skb_shared_info points to."""

    name: str
    id: int
    len: int
    refcnt: int


class SkbGeometry(TypedDict):
    """What every view of one sk_buff shows (this explainer's frames and the path walks'
    :class:`app.sim.path.skb.SkbView`): the pointers and counters, offsets from ``head``."""

    name: str
    head: int
    data: int
    tail: int
    end: int
    len: int
    data_len: int
    truesize: int
    headroom: int
    tailroom: int
    users: int
    dataref: int
    nr_frags: int
    mac_header: int | None
    network_header: int | None
    transport_header: int | None
    gso_size: int
    gso_segs: int
    alloc: str
    regions: list[RegionView]


# The integer fields the JSON API gives of every skb, in this order (the path explainer's API
# adds its own after them).
ApiField = Literal[
    "head",
    "data",
    "tail",
    "end",
    "len",
    "data_len",
    "truesize",
    "headroom",
    "tailroom",
    "users",
    "dataref",
    "nr_frags",
]
API_INT_FIELDS: tuple[ApiField, ...] = get_args(ApiField)


class SkbSnapshot(SkbGeometry):
    """One sk_buff as a frame shows it (``SkbMachine.snapshot_skb``)."""

    dataref_nohdr: int
    headlen: int
    buffer: str
    alloc_bytes: int
    frags: list[FragView]
    frag_list: list[str]
    fclone: str | None
    cloned: bool
    nohdr: bool
    sk: bool
    cb: CbView
    ip_summed: str
    csum_start: int
    csum_offset: int
    gso_type: list[str]
    drop_reason: str | None
    shinfo_flags: list[str]
    uarg: UargView | None
    dst: str | None
    pp_recycle: bool
    status: str


class BufferView(TypedDict):
    """A head buffer: its allocation, its dataref count (both halves) and whether it is gone."""

    size: int
    end: int
    dataref: int
    dataref_nohdr: int
    freed: bool
    alloc: str
    head_frag: bool
    stolen_by: str | None


class PageView(TypedDict):
    refs: int


class Snapshot(TypedDict):
    """Every skb, head buffer and page of the scenario after one op."""

    skbs: list[SkbSnapshot]
    buffers: dict[str, BufferView]
    pages: dict[str, PageView]
    uargs: list[UargView]
    errqueue: list[str]


class SkbBug(TypedDict):
    name: str
    message: str


class SkbState(TypedDict):
    """A frame's state: every skb and data buffer after the op, and what it changed."""

    primary: str
    skbs: list[SkbSnapshot]
    buffers: dict[str, BufferView]
    pages: dict[str, PageView]
    uargs: list[UargView]
    errqueue: list[str]
    changed: list[str]
    bug: NotRequired[SkbBug]


SkbTrace = Trace[SkbState, None]

# The field table under the picture, and the fields whose change a frame lists.
TABLE_FIELDS = (
    "len",
    "data_len",
    "headlen",
    "truesize",
    "users",
    "dataref",
    "nr_frags",
    "headroom",
    "tailroom",
    "data",
    "tail",
    "end",
)
BYTE_FIELDS = frozenset(
    {"len", "data_len", "headlen", "truesize", "headroom", "tailroom", "data", "tail", "end"}
)
HEADER_FIELDS = ("mac_header", "network_header", "transport_header")
DIFF_FIELDS = (
    *TABLE_FIELDS,
    "buffer",
    "status",
    "cloned",
    "fclone",
    "frag_list",
    *HEADER_FIELDS,
    "cb",
    "ip_summed",
    "csum_start",
    "csum_offset",
    "gso",
    "zerocopy",
    "dst",
    "pp_recycle",
)
