"""The machine that applies ops: each op name to the function that models it, in one table.

:data:`HANDLERS` is the explicit list (one entry per op in :data:`~app.sim.skbuff.ops.SPECS`),
typed so mypy checks every handler's signature; :class:`SkbMachine` refuses an op on an skb
that is already gone (a use-after-free, as KASAN would report it), dispatches the rest, and
copies its objects into plain values for each frame (:mod:`app.sim.skbuff.state`).
"""

from __future__ import annotations

from typing import Any

from app.sim.core import msg
from app.sim.skbuff import alloc, defrag, frags, free, linear, proto, share, zerocopy
from app.sim.skbuff.ops import DERIVE, SPECS, Op
from app.sim.skbuff.skb import (
    CHECKSUM_NAMES,
    DATAREF_MASK,
    DATAREF_SHIFT,
    Handler,
    Skb,
    Step,
    World,
    make_step,
)
from app.sim.skbuff.sources import SOURCES
from app.sim.skbuff.state import SkbSnapshot, Snapshot, UargView

HANDLERS: dict[str, Handler] = {
    # allocation (net/core/skbuff.c, net/ipv4/tcp.c)
    "alloc_skb": alloc.alloc_skb,
    "alloc_skb_fclone": alloc.alloc_skb_fclone,
    "netdev_alloc_skb": alloc.netdev_alloc_skb,
    "napi_alloc_skb": alloc.napi_alloc_skb,
    "build_skb": alloc.build_skb,
    "napi_build_skb": alloc.napi_build_skb,
    "tcp_stream_alloc_skb": alloc.tcp_stream_alloc_skb,
    # the linear area
    "skb_reserve": linear.skb_reserve,
    "skb_put": linear.skb_put,
    "skb_push": linear.skb_push,
    "skb_pull": linear.skb_pull,
    "skb_trim": linear.skb_trim,
    "pskb_trim": linear.pskb_trim,
    "skb_headroom": linear.skb_headroom,
    "skb_tailroom": linear.skb_tailroom,
    "skb_headlen": linear.skb_headlen,
    "skb_reset_mac_header": linear.skb_reset_mac_header,
    "skb_set_mac_header": linear.skb_set_mac_header,
    "skb_reset_network_header": linear.skb_reset_network_header,
    "skb_set_network_header": linear.skb_set_network_header,
    "skb_reset_transport_header": linear.skb_reset_transport_header,
    "skb_set_transport_header": linear.skb_set_transport_header,
    "pskb_may_pull": linear.pskb_may_pull,
    "skb_mark_for_recycle": linear.skb_mark_for_recycle,
    # paged data and GRO
    "skb_add_rx_frag": frags.skb_add_rx_frag,
    "skb_fill_page_desc": frags.skb_fill_page_desc,
    "skb_gro_receive": frags.skb_gro_receive,
    "skb_gro_receive_list": frags.skb_gro_receive_list,
    # protocol fields: cb[], GSO, checksum
    "ip_rcv_core": proto.ip_rcv_core,
    "tcp_v4_fill_cb": proto.tcp_v4_fill_cb,
    "tcp_skb_entail": proto.tcp_skb_entail,
    "tcp_set_skb_tso_segs": proto.tcp_set_skb_tso_segs,
    "__tcp_transmit_skb": proto.tcp_transmit_gso,
    "tcp4_gro_complete": proto.tcp4_gro_complete,
    "skb_segment": proto.skb_segment,
    "skb_partial_csum_set": proto.skb_partial_csum_set,
    "tcp_v4_send_check": proto.tcp_v4_send_check,
    "igb_rx_checksum": proto.igb_rx_checksum,
    # references, clones and copies
    "skb_get": share.skb_get,
    "skb_set_owner_w": share.skb_set_owner_w,
    "skb_clone": share.skb_clone,
    "skb_copy": share.skb_copy,
    "pskb_copy": share.pskb_copy,
    "pskb_expand_head": share.pskb_expand_head,
    "skb_linearize": share.skb_linearize,
    "__skb_header_release": share.skb_header_release,
    # MSG_ZEROCOPY (net/core/skbuff.c)
    "msg_zerocopy_realloc": zerocopy.msg_zerocopy_realloc,
    "skb_zerocopy_iter_stream": zerocopy.skb_zerocopy_iter_stream,
    "net_zcopy_put": zerocopy.net_zcopy_put,
    # the route (_skb_refdst) and IPv4 reassembly
    "skb_dst_set_noref": defrag.skb_dst_set_noref,
    "skb_dst_force": defrag.skb_dst_force,
    "skb_dst_drop": defrag.skb_dst_drop,
    "ip_frag_queue": defrag.ip_frag_queue,
    "ip_frag_reasm": defrag.ip_frag_reasm,
    # freeing
    "__kfree_skb": free.kfree_skb_nocheck,
    "kfree_skb": free.kfree_skb,
    "consume_skb": free.consume_skb,
}

# Ops whose ``skb`` is the name of the skb they create (it may not exist yet).
CREATING = frozenset(name for name, spec in SPECS.items() if spec.kind == DERIVE)


class SkbMachine(World):
    """All skbs, head buffers and pages of one scenario, and the ops that change them."""

    def apply(self, op: Op) -> Step:
        """Run one op and say what happened."""
        for n in (op.skb, op.src):
            if n is None or n not in self.skbs:
                continue
            if op.op in CREATING and n == op.skb:
                continue  # the name being created
            s = self.skbs[n]
            if s.status != "live":
                return self._use_after_free(op, s)
        return HANDLERS[op.op](self, op)

    def _use_after_free(self, op: Op, s: Skb) -> Step:
        if s.status == "in_frag_list":
            why = msg(
                "'{name}' was handed to '{owner}''s frag_list by GRO: its caller gave up ownership, and the skb is freed together with '{owner}'. Touching it afterwards through the old pointer is a use-after-free bug (KASAN reports it once the memory is actually released).",
                name=s.name,
                owner=s.owner or "",
            )
        else:
            why = msg(
                "'{name}' was already released ({status}); its sk_buff went back to the slab and may hold another packet by now. {op} on it is a use-after-free: with KASAN the kernel prints 'BUG: KASAN: use-after-free in {op}'; without it the write silently corrupts whatever reuses the memory.",
                name=s.name,
                status=s.status,
                op=op.op,
            )
        return make_step(
            op,
            s.name,
            "use_after_free",
            why,
            mark="panic",
            bug=f"BUG: KASAN: use-after-free in {SOURCES[op.op].function}",
        )

    def values(self, name: str) -> dict[str, Any]:
        """The comparable field values of one skb (for the table and the change list)."""
        s = self.skbs[name]
        b = self.buf(s)
        return {
            "len": s.len,
            "data_len": s.data_len,
            "headlen": s.len - s.data_len,
            "truesize": s.truesize,
            "users": s.users,
            "dataref": b.dataref & DATAREF_MASK,
            "nr_frags": len(b.frags),
            "headroom": s.data,
            "tailroom": self.tailroom(s),
            "data": s.data,
            "tail": s.tail,
            "end": s.end,
            "buffer": s.buffer,
            "status": s.status,
            "cloned": s.cloned,
            "fclone": s.fclone,
            "frag_list": tuple(b.frag_list),
            "mac_header": s.mac_header,
            "network_header": s.network_header,
            "transport_header": s.transport_header,
            "cb": (s.cb_layer, tuple(sorted(s.cb.items()))),
            "ip_summed": s.ip_summed,
            "csum_start": s.csum_start,
            "csum_offset": s.csum_offset,
            "gso": (b.gso_size, b.gso_segs, b.gso_type),
            "zerocopy": (b.uarg, tuple(b.flags)),
            "dst": s.dst,
            "pp_recycle": s.pp_recycle,
        }

    def snapshot_skb(self, name: str) -> SkbSnapshot:
        """One skb as its frame shows it (offsets from head)."""
        s = self.skbs[name]
        b = self.buf(s)
        return {
            "name": s.name,
            "head": 0,
            "data": s.data,
            "tail": s.tail,
            "end": s.end,
            "len": s.len,
            "data_len": s.data_len,
            "truesize": s.truesize,
            "headroom": s.data,
            "tailroom": self.tailroom(s),
            "users": s.users,
            "dataref": b.dataref & DATAREF_MASK,
            "dataref_nohdr": (b.dataref >> DATAREF_SHIFT) & DATAREF_MASK,
            "nr_frags": len(b.frags),
            "headlen": s.len - s.data_len,
            "buffer": b.id,
            "alloc": b.where,
            "alloc_bytes": b.nbytes,
            "frags": [
                {"page": f.page, "offset": f.offset, "size": f.size, "refs": self.pages[f.page]}
                for f in b.frags
            ],
            "frag_list": list(b.frag_list),
            "fclone": s.fclone,
            "cloned": s.cloned,
            "nohdr": s.nohdr,
            "sk": s.has_sk,
            "cb": {"layer": s.cb_layer, "fields": dict(s.cb)},
            "ip_summed": CHECKSUM_NAMES[s.ip_summed],
            "csum_start": s.csum_start,
            "csum_offset": s.csum_offset,
            "gso_size": b.gso_size,
            "gso_segs": b.gso_segs,
            "gso_type": list(b.gso_type),
            "drop_reason": s.drop_reason,
            "shinfo_flags": list(b.flags),
            "uarg": self._uarg(b.uarg),
            "dst": s.dst,
            "pp_recycle": s.pp_recycle,
            "mac_header": s.mac_header,
            "network_header": s.network_header,
            "transport_header": s.transport_header,
            "status": s.status,
            "regions": [
                {"start": r.start, "end": r.end, "label": r.label, "kind": r.kind}
                for r in b.regions
            ],
        }

    def _uarg(self, name: str | None) -> UargView | None:
        u = self.uargs.get(name) if name else None
        if u is None:
            return None
        return {"name": u.name, "id": u.id, "len": u.len, "refcnt": u.refcnt}

    def snapshot(self) -> Snapshot:
        """Every skb, head buffer and page, as plain values."""
        return {
            "skbs": [self.snapshot_skb(n) for n in self.skbs],
            "buffers": {
                b.id: {
                    "size": b.nbytes,
                    "end": b.end,
                    "dataref": b.dataref & DATAREF_MASK,
                    "dataref_nohdr": (b.dataref >> DATAREF_SHIFT) & DATAREF_MASK,
                    "freed": b.freed,
                    "alloc": b.where,
                    "head_frag": b.head_frag,
                    "stolen_by": b.stolen_by,
                }
                for b in self.buffers.values()
            },
            "pages": {p: {"refs": r} for p, r in self.pages.items()},
            "uargs": [
                {"name": u.name, "id": u.id, "len": u.len, "refcnt": u.refcnt}
                for u in self.uargs.values()
            ],
            "errqueue": list(self.errqueue),
        }
