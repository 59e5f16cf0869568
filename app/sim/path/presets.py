"""Preset walks of the packet-path explainer; each has a lesson content/path-<slug>.md."""

from __future__ import annotations

from app.sim.core.explainer import Preset
from app.sim.core.i18n import msg

PRESETS: tuple[Preset, ...] = (
    Preset(
        slug="send-segment",
        title=msg("Sending one TCP segment out of a NIC"),
        params={"path": "tx", "device": "nic", "packets": 1, "payload_bytes": 1000},
        lesson="path-send-segment",
    ),
    Preset(
        slug="receive-segment",
        title=msg("Receiving one TCP segment: IRQ, NAPI, GRO, IP, TCP"),
        params={"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000},
        lesson="path-receive-segment",
    ),
    Preset(
        slug="gro-burst",
        title=msg("A burst of 20 segments: GRO merges them, NAPI counts budget"),
        params={
            "path": "rx",
            "device": "nic",
            "packets": 20,
            "payload_bytes": 1448,
            "scenario": "gro_burst",
            "psh": "last",
        },
        lesson="path-gro-burst",
    ),
    Preset(
        slug="loopback",
        title=msg("A segment over loopback: run to completion"),
        params={"path": "tx", "device": "loopback", "packets": 1, "payload_bytes": 1000},
        lesson="path-loopback",
    ),
    Preset(
        slug="veth",
        title=msg("A segment between two namespaces over veth"),
        params={"path": "tx", "device": "veth", "packets": 1, "payload_bytes": 1000},
        lesson="path-veth",
    ),
    Preset(
        slug="forward",
        title=msg("Forwarding a packet: FORWARD, TTL, POST_ROUTING"),
        params={"path": "forward", "device": "nic", "packets": 1, "payload_bytes": 1000},
        lesson="path-forward",
    ),
    Preset(
        slug="netfilter-drop",
        title=msg("A netfilter DROP at LOCAL_IN"),
        params={
            "path": "rx",
            "device": "nic",
            "packets": 1,
            "payload_bytes": 1000,
            "drop": "netfilter",
            "hook": "LOCAL_IN",
        },
        lesson="path-netfilter-drop",
    ),
    Preset(
        slug="container",
        title=msg("A container's packet: veth, bridge, NAT, NIC"),
        params={
            "path": "tx",
            "device": "veth",
            "packets": 1,
            "payload_bytes": 1000,
            "scenario": "bridge_nat",
        },
        lesson="path-container",
    ),
    Preset(
        slug="vxlan",
        title=msg("A VXLAN-encapsulated packet"),
        params={
            "path": "tx",
            "device": "nic",
            "packets": 1,
            "payload_bytes": 1000,
            "scenario": "vxlan",
        },
        lesson="path-vxlan",
    ),
)
DEFAULT_PRESET = "receive-segment"
