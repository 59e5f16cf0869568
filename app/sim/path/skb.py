"""The packet's sk_buff along a path, kept by the sk_buff explainer's own machine.

Geometry (head, data, tail, end, len, data_len, truesize, users, dataref, frags) comes from
:class:`app.sim.skbuff.machine.SkbMachine`, driven only through ``apply(Op)`` and ``values``/
``snapshot_skb``. This module adds, locally:

* header offsets (``mac_header``, ``network_header``, ``transport_header``, from head, as the
  kernel stores them) and ``gso_size``/``gso_segs``, set where a walk's stage sets them (the
  machine has these fields too, through its own header and TSO ops, which narrate; a walk
  sets them silently, as one line of a larger stage);
* ``napi_build_skb`` on a 2048-byte half page (igb's default): geometrically it is
  ``alloc_skb(1728)`` (SKB_WITH_OVERHEAD(2048) = 1728, truesize SKB_TRUESIZE(1728) = 2304), so
  that op is used and the allocation is relabelled;
* ``skb_gro_receive`` merging into ``NAPI_GRO_CB(p)->last`` once ``frags[]`` is full: the
  machine refuses to touch an skb already chained on a frag_list, so the bytes that land in
  the last chained skb are added to the head skb's len/data_len/truesize here.
"""

from __future__ import annotations

from typing import Any

from app.sim.skbuff.machine import SkbMachine
from app.sim.skbuff.ops import Op
from app.sim.skbuff.state import API_INT_FIELDS, RegionView, SkbGeometry

MAX_SKB_FRAGS = 17
SKB_STRUCT = 256  # SKB_DATA_ALIGN(sizeof(struct sk_buff))
HALF_PAGE = 2048  # igb_rx_pg_size / 2 with 4 KiB pages
BUILD_SKB_END = 1728  # SKB_WITH_OVERHEAD(2048)
IGB_SKB_PAD = 192  # igb_skb_pad(): SKB_WITH_OVERHEAD(2048) - IGB_RXBUFFER_1536
IGB_RX_HDR_LEN = 256
ETH_HLEN = 14
IP_HLEN = 20
TCP_HLEN = 32  # 20 + 12 bytes of timestamp option
GRO_MAX_SIZE = 65536  # dev->gro_ipv4_max_size default (GRO_LEGACY_MAX_SIZE)


class SkbView(SkbGeometry):
    """One sk_buff as a path frame shows it: the sk_buff explainer's geometry plus the inner
    header offsets, the frag_list's length and the owner."""

    inner_mac_header: int | None  # set by skb_reset_inner_headers (tunnels)
    inner_network_header: int | None
    inner_transport_header: int | None
    frag_list: int
    sk: str | None  # skb->sk: which socket owns the skb ("sender", "receiver") or None
    destructor: str | None  # skb->destructor: what runs when the owner lets go


API_FIELDS = (
    *API_INT_FIELDS,
    "mac_header",
    "network_header",
    "transport_header",
    "inner_mac_header",
    "inner_network_header",
    "inner_transport_header",
    "sk",
    "destructor",
)
DIFF_FIELDS = (*API_FIELDS, "gso_size", "gso_segs", "frag_list")


class ModelError(RuntimeError):
    """The sk_buff machine refused an op a path walk asked for (a bug in the walk)."""


class PathSkbs:
    """Every sk_buff of one walk."""

    def __init__(self) -> None:
        self.m = SkbMachine()
        self.hdr: dict[str, dict[str, int | None]] = {}
        self.gso: dict[str, list[int]] = {}
        self.extra: dict[str, list[int]] = {}  # len, data_len, truesize added by us
        self.alloc: dict[str, str] = {}
        self.chained: dict[str, int] = {}  # head skb -> skbs on its frag_list
        self.last: dict[str, str] = {}  # head skb -> NAPI_GRO_CB(p)->last
        self.last_frags: dict[str, int] = {}  # frags held by that last skb (when not p)
        self.freed: set[str] = set()
        self.owner: dict[str, tuple[str, str]] = {}  # skb -> (skb->sk, skb->destructor)

    # -- plumbing ------------------------------------------------------------------------------
    def apply(self, op: str, skb: str, **kw: Any) -> None:
        step = self.m.apply(Op(op=op, skb=skb, **kw))
        if step.result != "ok":
            raise ModelError(f"{op} on {skb}: {step.result}")

    def _new(self, name: str, alloc: str) -> None:
        self.hdr[name] = {
            "mac": None,
            "network": None,
            "transport": None,
            "inner_mac": None,
            "inner_network": None,
            "inner_transport": None,
        }
        self.gso[name] = [0, 0]
        self.extra[name] = [0, 0, 0]
        self.alloc[name] = alloc

    def exists(self, name: str) -> bool:
        return name in self.hdr and name not in self.freed

    def data(self, name: str) -> int:
        return int(self.m.values(name)["data"])

    def length(self, name: str) -> int:
        return int(self.m.values(name)["len"]) + self.extra[name][0]

    def frags(self, name: str) -> int:
        return int(self.m.values(name)["nr_frags"])

    def view(self, name: str) -> SkbView:
        v = self.m.values(name)
        snap = self.m.snapshot_skb(name)
        ex = self.extra[name]
        h = self.hdr[name]
        regions: list[RegionView] = [
            {"start": r["start"], "end": r["end"], "label": r["label"], "kind": r["kind"]}
            for r in snap["regions"]
        ]
        return {
            "name": name,
            "head": 0,
            "data": v["data"],
            "tail": v["tail"],
            "end": v["end"],
            "len": v["len"] + ex[0],
            "data_len": v["data_len"] + ex[1],
            "truesize": v["truesize"] + ex[2],
            "headroom": v["headroom"],
            "tailroom": v["tailroom"],
            "users": v["users"],
            "dataref": v["dataref"],
            "nr_frags": v["nr_frags"],
            "mac_header": h["mac"],
            "network_header": h["network"],
            "transport_header": h["transport"],
            "inner_mac_header": h["inner_mac"],
            "inner_network_header": h["inner_network"],
            "inner_transport_header": h["inner_transport"],
            "gso_size": self.gso[name][0],
            "gso_segs": self.gso[name][1],
            "frag_list": self.chained.get(name, 0),
            "sk": self.owner[name][0] if name in self.owner else None,
            "destructor": self.owner[name][1] if name in self.owner else None,
            "alloc": self.alloc[name],
            "regions": regions,
        }

    # -- header offsets ------------------------------------------------------------------------
    def set_header(self, name: str, which: str, at: int | None = None) -> None:
        """skb_reset_<which>_header (at = data) or skb_set_<which>_header (at given)."""
        self.hdr[name][which] = self.data(name) if at is None else at

    # -- ownership ---------------------------------------------------------------------------
    def set_owner(self, name: str, sk: str, destructor: str) -> None:
        """skb->sk = sk, skb->destructor = destructor (skb_set_owner_w / _r, or open-coded)."""
        self.owner[name] = (sk, destructor)

    def orphan(self, name: str) -> tuple[str, str] | None:
        """skb_orphan: runs the destructor and clears skb->sk; returns what it was."""
        return self.owner.pop(name, None)

    def reset_inner_headers(self, name: str) -> None:
        """skb_reset_inner_headers: inner_<x>_header = <x>_header for mac, network, transport."""
        h = self.hdr[name]
        for which in ("mac", "network", "transport"):
            h[f"inner_{which}"] = h[which]

    def set_gso(self, name: str, size: int, segs: int) -> None:
        self.gso[name] = [size, segs]

    # -- allocation ----------------------------------------------------------------------------
    def tcp_stream_alloc(self, name: str) -> None:
        self.apply("tcp_stream_alloc_skb", name, size=0)
        self._new(name, str(self.m.snapshot_skb(name)["alloc"]))

    def copy_user_data(self, name: str, payload: int) -> None:
        """tcp_sendmsg_locked copies into page frags of up to 32 KiB (sk_page_frag)."""
        left = payload
        while left > 0:
            chunk = min(left, 32768)
            self.apply("skb_add_rx_frag", name, size=chunk, truesize=chunk)
            left -= chunk

    def napi_build_skb(self, name: str) -> None:
        """napi_build_skb(hard_start, 2048): a head of SKB_WITH_OVERHEAD(2048) = 1728 bytes."""
        self.apply("alloc_skb", name, size=BUILD_SKB_END)
        self._new(name, "igb rx page (half, 2048 bytes)")

    def napi_alloc_skb(self, name: str, length: int) -> None:
        self.apply("napi_alloc_skb", name, len=length)
        self._new(name, str(self.m.snapshot_skb(name)["alloc"]))

    def alloc_skb(self, name: str, size: int) -> None:
        """__alloc_skb(size) (kmalloc_reserve sizing, as alloc_skb)."""
        self.apply("alloc_skb", name, size=size)
        self._new(name, str(self.m.snapshot_skb(name)["alloc"]))

    def clone(self, src: str, name: str) -> None:
        self.m.apply(Op(op="skb_clone", skb=name, src=src))
        self._new(name, str(self.m.snapshot_skb(name)["alloc"]))
        self.hdr[name] = dict(self.hdr[src])
        self.gso[name] = list(self.gso[src])

    # -- pointer ops ---------------------------------------------------------------------------
    def reserve(self, name: str, n: int) -> None:
        self.apply("skb_reserve", name, len=n)

    def put(self, name: str, n: int, label: str) -> None:
        self.apply("skb_put", name, len=n, label=label)

    def push(self, name: str, n: int, label: str) -> None:
        self.apply("skb_push", name, len=n, label=label)

    def pull(self, name: str, n: int) -> None:
        self.apply("skb_pull", name, len=n)

    def add_frag(self, name: str, size: int, truesize: int, offset: int = 0) -> None:
        self.apply("skb_add_rx_frag", name, size=size, truesize=truesize, offset=offset)

    def header_release(self, name: str) -> None:
        self.apply("__skb_header_release", name)

    def free(self, name: str, consume: bool = True) -> None:
        if name in self.freed:
            return
        self.apply("consume_skb" if consume else "kfree_skb", name)
        self.freed.add(name)

    # -- GRO -----------------------------------------------------------------------------------
    def gro_merge(self, p: str, skb: str, hdrs: int, payload: int) -> str:
        """skb_gro_receive(p, skb) for TCP: returns "frags" or "frag_list" (where it went).

        ``hdrs`` is the GRO offset (IP + TCP headers, from skb->data), ``payload`` the bytes
        merged. Caller has checked the 64 KiB limit."""
        last = self.last.get(p, p)
        delta = self.m.values(skb)["truesize"] - SKB_STRUCT  # head_frag: head stolen
        if self.m.values(skb)["nr_frags"]:
            delta = HALF_PAGE  # frags moved: truesize minus SKB_TRUESIZE(end)
        room = MAX_SKB_FRAGS - (self.frags(p) if last == p else self.last_frags[p])
        if room >= 1:
            if last == p:
                self.add_frag(p, payload, delta, offset=hdrs)
            else:
                self.last_frags[p] += 1
                ex = self.extra[p]
                ex[0] += payload
                ex[1] += payload
                ex[2] += delta
            self.freed.add(skb)  # napi_skb_free_stolen_head / __kfree_skb of the shell
            return "frags"
        # frags[] full: chain the whole skb (headers pulled) on p's frag_list
        self.m.apply(Op(op="skb_gro_receive_list", skb=p, src=skb, offset=hdrs))
        self.chained[p] = self.chained.get(p, 0) + 1
        self.last[p] = skb
        self.last_frags[p] = self.frags(skb)
        return "frag_list"
