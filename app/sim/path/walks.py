"""The table of whole walks: which stages one run goes through, picked from its params.

Each walk is a function of a :class:`~app.sim.path.walk.Walk` registered in :data:`WALKS` under
the kind :func:`kind` names; mypy checks every entry's signature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Literal

from app.sim.path.bridge_nat import walk_bridge_nat
from app.sim.path.engine import Tracer
from app.sim.path.loopback_veth import walk_local
from app.sim.path.napi import walk_rx_nic
from app.sim.path.params import PathParams
from app.sim.path.skb import PathSkbs
from app.sim.path.socket_tx import walk_tx_nic
from app.sim.path.vxlan import walk_vxlan
from app.sim.path.walk import Walk

WalkKind = Literal["bridge_nat", "vxlan", "local", "tx_nic", "rx_nic"]

WALKS: Final[Mapping[WalkKind, Callable[[Walk], None]]] = {
    "bridge_nat": walk_bridge_nat,  # a container's packet: veth, docker0, forward, MASQUERADE
    "vxlan": walk_vxlan,  # the inner frame, then the outer VXLAN/UDP/IP headers
    "local": walk_local,  # loopback or veth: the sender's TX runs the receiver's RX
    "tx_nic": walk_tx_nic,  # write() down to the NIC and its TX completion
    "rx_nic": walk_rx_nic,  # NIC RX: IRQ, NAPI, GRO, IP (input or forward), TCP
}


def kind(p: PathParams) -> WalkKind:
    """Which walk ``p`` asks for (forwarding starts as NIC RX)."""
    if p.scenario == "bridge_nat":
        return "bridge_nat"
    if p.scenario == "vxlan":
        return "vxlan"
    if p.device != "nic":
        return "local"
    return "tx_nic" if p.path == "tx" else "rx_nic"


def run(p: PathParams, t: Tracer, skbs: PathSkbs) -> None:
    """Build the frames of one run into ``t``."""
    WALKS[kind(p)](Walk(p, t, skbs))


__all__ = ["WALKS", "Walk", "WalkKind", "kind", "run"]
