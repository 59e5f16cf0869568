"""Parameters of the packet-path explainer: validation (every problem at once), dump and cost.

``{"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000}`` is the smallest
input; the other fields have defaults. ``scenario`` picks the special walks (a GRO burst, a
container's packet through a bridge and NAT, VXLAN encapsulation) and ``drop`` makes the packet
die at a named place with its drop reason.

Over ``loopback`` and ``veth`` one walk is both sides: the sender's TX runs the receiver's RX to
completion, so ``path`` "tx" and "rx" give the same walk there.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import Message, msg

PATHS = ("tx", "rx", "forward")
DEVICES = ("nic", "loopback", "veth")
SCENARIOS = ("plain", "gro_burst", "bridge_nat", "vxlan")
DROPS = ("none", "netfilter", "no_route", "no_socket", "checksum", "backlog_full", "ttl")
PSH = ("last", "every", "none")
HOOKS = ("PRE_ROUTING", "LOCAL_IN", "FORWARD", "LOCAL_OUT", "POST_ROUTING")
RX_MODES = ("build_skb", "legacy")
NEIGH = ("cached", "arp")

MTU = 1500
MSS = 1448  # 1500 - 20 (IPv4) - 32 (TCP with timestamps)
MAX_PACKETS = 1000
MAX_PAYLOAD = 64000  # one TSO/GSO skb stays below the 64 KiB gso_max_size
MAX_FLOWS = 16
MAX_WORK = 20_000.0  # frames (a run of 20k frames is about 10-20 MB of JSON)

# Which hooks each path passes, so a netfilter drop can only be asked where the packet goes.
PATH_HOOKS: dict[str, tuple[str, ...]] = {
    "tx": ("LOCAL_OUT", "POST_ROUTING"),
    "rx": ("PRE_ROUTING", "LOCAL_IN"),
    "forward": ("PRE_ROUTING", "FORWARD", "POST_ROUTING"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PathParams:
    """One walk: which path, through which device, with how many packets and what goes wrong."""

    path: str = "rx"
    device: str = "nic"
    packets: int = 1
    payload_bytes: int = 1000
    scenario: str = "plain"
    drop: str = "none"
    hook: str | None = None  # the netfilter hook that drops, for drop == "netfilter"
    psh: str = "last"  # which segments of a burst carry PSH
    flows: int = 1  # GRO burst: how many TCP flows are interleaved
    same_bucket: bool = False  # GRO burst: every flow hashes to the same gro_hash bucket
    rx_mode: str = "build_skb"  # igb: napi_build_skb (default) or legacy-rx (napi_alloc_skb)
    neigh: str = "cached"  # TX: cached hardware header or ARP on first use
    tso: bool = True  # TX on the NIC: the NIC segments (TSO) one large skb
    qdisc_queued: int = 0  # TX on the NIC: packets already waiting in the qdisc
    fast_path: bool = True  # TCP header prediction succeeds
    last_bytes: int = 0  # GRO burst: payload of each flow's last segment (0: payload_bytes)


_INT_LIMITS: dict[str, tuple[int, int]] = {
    "packets": (1, MAX_PACKETS),
    "payload_bytes": (1, MAX_PAYLOAD),
    "flows": (1, MAX_FLOWS),
    "qdisc_queued": (0, 63),
    "last_bytes": (0, MSS),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "path": PATHS,
    "device": DEVICES,
    "scenario": SCENARIOS,
    "drop": DROPS,
    "psh": PSH,
    "rx_mode": RX_MODES,
    "neigh": NEIGH,
}
_BOOLS = ("same_bucket", "tso", "fast_path")
FIELD_NAMES = tuple(f.name for f in fields(PathParams))


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 24 else text[:21] + "..."


def parse(raw: Any) -> PathParams:
    """Validate raw JSON-shaped params; raise ParamError naming every bad field."""
    if not isinstance(raw, dict):
        raise ParamError.single(
            (), msg("params must be an object like {example}.", example='{"path": "rx"}')
        )
    issues: list[ParamIssue] = []
    values: dict[str, Any] = {}
    for key in raw:
        if key not in FIELD_NAMES:
            issues.append(ParamIssue(loc=(str(key)[:40],), msg=msg("unknown field")))
    for name, choices in _CHOICES.items():
        if name in raw:
            v = raw[name]
            if not isinstance(v, str) or v not in choices:
                issues.append(
                    ParamIssue(
                        loc=(name,),
                        msg=msg(
                            "must be one of {names}; got {value}",
                            names=", ".join(choices),
                            value=_short(v),
                        ),
                    )
                )
            else:
                values[name] = v
    for name, (lo, hi) in _INT_LIMITS.items():
        if name in raw:
            v = raw[name]
            if isinstance(v, bool) or not isinstance(v, int):
                issues.append(ParamIssue(loc=(name,), msg=msg("must be a whole number")))
            elif not lo <= v <= hi:
                issues.append(
                    ParamIssue(loc=(name,), msg=msg("must be between {lo} and {hi}", lo=lo, hi=hi))
                )
            else:
                values[name] = v
    for name in _BOOLS:
        if name in raw:
            v = raw[name]
            if not isinstance(v, bool):
                issues.append(ParamIssue(loc=(name,), msg=msg("must be true or false")))
            else:
                values[name] = v
    if "hook" in raw:
        v = raw["hook"]
        if v is not None and (not isinstance(v, str) or v not in HOOKS):
            issues.append(
                ParamIssue(
                    loc=("hook",), msg=msg("must be one of {names} or null", names=", ".join(HOOKS))
                )
            )
        else:
            values["hook"] = v
    if issues:
        raise ParamError(issues)
    p = PathParams(**values)
    issues.extend(_combination_issues(p, raw))
    if issues:
        raise ParamError(issues)
    work = cost(p)
    if work > MAX_WORK:
        raise ParamError.single(
            ("packets",),
            msg(
                "this run would make about {n} frames; the limit is {limit}",
                n=int(work),
                limit=int(MAX_WORK),
            ),
        )
    return p


def _combination_issues(p: PathParams, raw: dict[str, Any]) -> list[ParamIssue]:
    """What the fields allow together, in this order: where the walk goes, how big it is, how
    it drops, and the GRO burst's own fields."""
    return [
        ParamIssue(loc=(field,), msg=text)
        for rules in (_where_issues, _size_issues, _drop_issues, _burst_issues)
        for field, text in rules(p, raw)
    ]


Issues = list[tuple[str, Message]]  # (field, sentence)


def _where_issues(p: PathParams, raw: dict[str, Any]) -> Issues:
    """The path, device and scenario that go together."""
    out: Issues = []
    if p.path == "forward" and p.device != "nic":
        out.append(("device", msg("forwarding is modelled between two NICs; use device nic")))
    needs: dict[str, tuple[str, str, Message]] = {
        "gro_burst": ("rx", "nic", msg("gro_burst needs path rx and device nic")),
        "bridge_nat": (
            "tx",
            "veth",
            msg("bridge_nat needs path tx and device veth (the container's side)"),
        ),
        "vxlan": ("tx", "nic", msg("vxlan needs path tx and device nic")),
    }
    need = needs.get(p.scenario)
    if need is not None and (p.path, p.device) != need[:2]:
        out.append(("scenario", need[2]))
    if p.scenario in ("bridge_nat", "vxlan"):
        if p.packets != 1:
            out.append(
                (
                    "packets",
                    msg("{scenario} follows one packet; use packets 1", scenario=p.scenario),
                )
            )
        if p.drop != "none":
            out.append(
                ("drop", msg("{scenario} has no drop variant; use drop none", scenario=p.scenario))
            )
    del raw
    return out


def _size_issues(p: PathParams, raw: dict[str, Any]) -> Issues:
    """Payload, TSO and packet counts each walk models."""
    out: Issues = []
    nic = p.device == "nic"
    if nic and p.path in ("rx", "forward") and p.payload_bytes > MSS:
        out.append(
            (
                "payload_bytes",
                msg("a received frame carries at most {mss} bytes of TCP payload", mss=MSS),
            )
        )
    if p.scenario == "vxlan" and p.payload_bytes > MSS - 50:
        out.append(("payload_bytes", msg("inside VXLAN the inner MSS is {mss}", mss=MSS - 50)))
    if not p.tso and (p.path, p.device, p.scenario) != ("tx", "nic", "plain"):
        out.append(("tso", msg("tso false is modelled for path tx on device nic only")))
    if p.path == "rx" and nic and p.scenario == "plain" and p.packets > 64:
        out.append(("packets", msg("use scenario gro_burst for more than {n} packets", n=64)))
    if not nic and p.packets > 64:
        out.append(("packets", msg("loopback and veth walks follow at most {n} packets", n=64)))
    if p.path in ("tx", "forward") and nic and p.packets > 8:
        out.append(("packets", msg("transmit and forward walks follow at most {n} packets", n=8)))
    del raw
    return out


def _drop_issues(p: PathParams, raw: dict[str, Any]) -> Issues:
    """A drop only where the packet goes, and the hook a netfilter drop needs."""
    out: Issues = []
    drop_ok = {
        "none": True,
        "netfilter": True,
        "no_route": p.path == "forward",
        "ttl": p.path == "forward",
        "no_socket": p.path == "rx" or p.device != "nic",
        "checksum": p.path == "rx" and p.device == "nic",
        "backlog_full": p.device in ("loopback", "veth"),
    }
    if not drop_ok[p.drop]:
        out.append(
            ("drop", msg("drop {drop} does not happen on this path and device", drop=p.drop))
        )
    if p.drop == "netfilter":
        # Over loopback and veth one walk is both the sender's TX and the receiver's RX.
        hooks = PATH_HOOKS["tx"] + PATH_HOOKS["rx"] if p.device != "nic" else PATH_HOOKS[p.path]
        if p.hook is None:
            out.append(
                ("hook", msg("name the hook that drops: one of {hooks}", hooks=", ".join(hooks)))
            )
        elif p.hook not in hooks:
            out.append(("hook", msg("this path passes only {hooks}", hooks=", ".join(hooks))))
    elif p.hook is not None and "hook" in raw:
        out.append(("hook", msg("hook is only used with drop netfilter")))
    return out


def _burst_issues(p: PathParams, raw: dict[str, Any]) -> Issues:
    """The GRO burst's own fields, and one packet per flow at least."""
    out: Issues = []
    if p.scenario != "gro_burst":
        for name in ("flows", "same_bucket", "psh", "last_bytes"):
            if name in raw and raw[name] != getattr(PathParams(), name):
                out.append((name, msg("only used with scenario gro_burst")))
    if p.flows > p.packets:
        out.append(("flows", msg("there must be at least one packet per flow")))
    return out


def dump(p: PathParams) -> dict[str, Any]:
    """The raw form of ``p``: every field whose value differs from the default, plus the four
    main ones; ``parse(dump(p)) == p``."""
    default = PathParams()
    out: dict[str, Any] = {
        "path": p.path,
        "device": p.device,
        "packets": p.packets,
        "payload_bytes": p.payload_bytes,
    }
    for name in FIELD_NAMES:
        v = getattr(p, name)
        if name not in out and v != getattr(default, name):
            out[name] = v
    return out


# Frames per stage, counted from the walks in app.sim.path.walks (kept in step by a test that
# compares cost() with the real number of frames: cost must never be below it).
_RX_DRIVER = 8  # per packet: descriptor, build, fields, eth_type_trans, GRO entry
_GRO = 6  # per packet: the GRO chain
_DELIVER = 30  # per delivered skb: list receive, IP, netfilter, TCP, wake-up
_TX = 40  # per written skb on the NIC
_LOCAL = 80  # per packet over loopback or veth: TX, backlog, RX


def cost(p: PathParams) -> float:
    """An upper bound on the number of frames a run makes (the work unit)."""
    n = p.packets
    if p.scenario in ("bridge_nat", "vxlan"):
        return 160.0
    if p.device in ("loopback", "veth"):
        return float(20 + n * _LOCAL)
    if p.path == "tx":
        segs = 0 if p.tso else -(-p.payload_bytes // MSS) * 7 + 8
        return float(20 + n * (_TX + segs + (12 if p.neigh == "arp" else 0)) + p.qdisc_queued)
    if p.path == "forward":
        return float(40 + n * (_RX_DRIVER + _GRO + _DELIVER + _TX))
    polls = n // 64 + 2
    return float(40 + polls * 12 + n * (_RX_DRIVER + _GRO + _DELIVER))
