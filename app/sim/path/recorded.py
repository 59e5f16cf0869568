"""A machine's recorded packet path beside the path explainer's walk (issue 23).

:func:`recorded_trace` takes a parsed ``path`` recording (``events``: ``{t_ms, event, fields,
stack}`` of ``net:net_dev_queue``, ``net:net_dev_start_xmit``, ``net:netif_receive_skb``,
``skb:consume_skb``, ``skb:kfree_skb`` and ``sock:sk_data_ready``, each stack innermost function
first), groups the events into packets, decides for each packet which path it took (TX or RX
on a NIC, veth, loopback), runs the path explainer's walk that models that path, and makes
one step per recorded event: the recorded stack beside the walk's stack at the matching step,
with the functions both have, the ones the model skips and the ones the recording lacks.

**Packets.** An event belongs to the packet of its ``skbaddr`` until that skb is freed
(``consume_skb`` / ``kfree_skb``): the slab hands the address out again later, to a new packet.
``sock:sk_data_ready`` names a socket, not an skb: it joins the packet last received.

**Paths.** A packet with ``net_dev_queue`` or ``net_dev_start_xmit`` is sent; one with only
``netif_receive_skb`` is received. Its device (the events' ``name`` field, else the stacks)
tells loopback (``lo``, ``loopback_xmit``) and veth (``veth*``, ``veth_xmit``) from a NIC. Over
loopback and veth the walk is one: the sender's transmit runs the receiver's receive.

**Matching.** Each event goes to the walk step that best fits it: first a step in a function
where the tracepoint sits (:data:`SITES`, the first named first), then one whose function is in
the recorded stack, then the one sharing the most functions with it; among equals the earliest
after the packet's last matched step (walks go forward). Function names are compared without the compiler's
suffixes (``.isra.0``, ``.constprop.0``, ``.part.0``, ``.cold``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from app.sim.core import Field, Frame, Message, ParamError, Trace, msg
from app.sim.core.i18n import join
from app.sim.core.validate import describe
from app.sim.path.engine import PathState
from app.sim.path.explainer import EXPLAINER as PATH
from app.sim.path.explainer import SIM_VERSION, PathTrace
from app.sim.path.params import MAX_PAYLOAD
from app.sim.path.sources import SOURCES

RECORDED_VERSION = f"{SIM_VERSION}+recorded-1"
MAX_FRAMES = 400  # steps (one per event), whole packets only
MAX_LISTED = 12  # functions named in a step's narration per list
EVENTS = (
    "net:net_dev_queue",
    "net:net_dev_start_xmit",
    "net:netif_receive_skb",
    "skb:consume_skb",
    "skb:kfree_skb",
    "sock:sk_data_ready",
)
TX_EVENTS = frozenset({"net:net_dev_queue", "net:net_dev_start_xmit"})
FREE_EVENTS = frozenset({"skb:consume_skb", "skb:kfree_skb"})
# Where each tracepoint fires, as the walks name the functions (include/trace/events/net.h,
# skb.h and sock.h are called from these): __dev_queue_xmit calls trace_net_dev_queue, xmit_one
# trace_net_dev_start_xmit just before netdev_start_xmit, __netif_receive_skb_core
# trace_netif_receive_skb, kfree_skb_reason trace_kfree_skb, and the socket's sk_data_ready
# callback (sock_def_readable for TCP, called by tcp_data_ready) trace_sk_data_ready.
SITES: Mapping[str, tuple[str, ...]] = {
    "net:net_dev_queue": ("__dev_queue_xmit",),
    "net:net_dev_start_xmit": ("xmit_one", "netdev_start_xmit"),
    "net:netif_receive_skb": ("__netif_receive_skb_core",),
    "skb:consume_skb": ("consume_skb", "napi_consume_skb"),
    "skb:kfree_skb": ("kfree_skb_reason",),
    "sock:sk_data_ready": ("sock_def_readable", "tcp_data_ready"),
}
PATH_NAMES: Mapping[str, Message] = {
    "tx": msg("TX on a NIC"),
    "rx": msg("RX on a NIC"),
    "veth": msg("veth between two namespaces"),
    "loopback": msg("loopback"),
}
# A recorded drop reason (skb:kfree_skb's ``reason``) the walks model, as their ``drop`` param
DROPS: Mapping[str, str] = {
    "NETFILTER_DROP": "netfilter",
    "NO_SOCKET": "no_socket",
    "IP_CSUM": "checksum",
    "CPU_BACKLOG": "backlog_full",
}
# The netfilter hook a drop happened in, from the function that ran it (innermost first)
HOOK_OF: Mapping[str, str] = {
    "ip_local_deliver": "LOCAL_IN",
    "ip_rcv": "PRE_ROUTING",
    "ip_sublist_rcv": "PRE_ROUTING",
    "ip_forward": "FORWARD",
    "__ip_local_out": "LOCAL_OUT",
    "ip_output": "POST_ROUTING",
}


@dataclass(frozen=True, slots=True)
class Event:
    t_ms: float
    event: str
    fields: Mapping[str, str]
    stack: tuple[str, ...]  # innermost first, as recorded
    index: int  # in the recording


@dataclass(frozen=True, slots=True)
class Packet:
    events: tuple[Event, ...]
    path: str  # tx, rx, veth, loopback
    dev: str
    drop: str | None  # the recorded drop reason, if kfree_skb freed it

    @property
    def walk(self) -> tuple[str, str, str, str | None]:
        """(path, device, drop, hook) of the explainer's params for this packet's walk."""
        device = {"veth": "veth", "loopback": "loopback"}.get(self.path, "nic")
        path = "rx" if self.path == "rx" else "tx"
        drop = DROPS.get(self.drop or "", "none")
        hook = None
        if drop == "netfilter":
            free = next(e for e in self.events if e.event == "skb:kfree_skb")
            hook = next((HOOK_OF[bare(f)] for f in free.stack if bare(f) in HOOK_OF), None)
            drop = drop if hook is not None else "none"
        return path, device, drop, hook


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedPathParams:
    """What the overlay shows: how many packets and events the recording had and showed."""

    packets: int
    events: int
    shown_packets: int
    kernel: str


class RecordedPathState(TypedDict):
    """One recorded event beside the walk's step."""

    t_ms: float
    event: str
    packet: int
    path: str
    dev: str
    reason: str | None
    recorded: list[str]  # outermost first (the recording's order reversed)
    model: list[str]  # the walk's stack at the matched step, outermost first
    model_function: str
    model_step: int
    model_walk: str  # "tx/nic", "rx/nic", "tx/veth", ... (the explainer's path/device)
    both: list[str]
    skipped: list[str]  # in the recording, not in the model
    missing: list[str]  # in the model, not in the recording


RecordedPathTrace = Trace[RecordedPathState, None]


def walk_name(key: tuple[str, str, str, str | None]) -> str:
    """The walk as the explainer's params name it: ``path/device``, and the drop if any."""
    path, device, drop, hook = key
    name = f"{path}/{device}"
    if drop != "none":
        name += f" drop={drop}" + (f" hook={hook}" if hook else "")
    return name


def bare(function: str) -> str:
    """A recorded function name as the walks write it: no offset, no compiler suffix."""
    return function.split("+", 1)[0].split(".", 1)[0].strip()


# --- the recording -----------------------------------------------------------------------------


def parse_events(recording: Mapping[str, Any]) -> list[Event]:
    """The recording's path events in time order (others skipped); ParamError naming the
    first malformed one."""
    if not isinstance(recording, Mapping):
        raise ParamError.single((), msg("the recording must be a JSON object"))
    raw = recording.get("events")
    if not isinstance(raw, list):
        raise ParamError.single(
            ("events",), msg("events must be a list; you gave {what}", what=describe(raw))
        )
    out: list[Event] = []
    for i, e in enumerate(raw):
        if not isinstance(e, Mapping):
            raise ParamError.single(
                ("events", i),
                msg("each event must be an object; you gave {what}", what=describe(e)),
            )
        name, t, fields, stack = e.get("event"), e.get("t_ms"), e.get("fields", {}), e.get("stack")
        if name not in EVENTS:
            continue
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise ParamError.single(
                ("events", i, "t_ms"),
                msg("t_ms must be a number; you gave {what}", what=describe(t)),
            )
        if not isinstance(fields, Mapping):
            raise ParamError.single(
                ("events", i, "fields"),
                msg("fields must be an object; you gave {what}", what=describe(fields)),
            )
        if stack is None:
            stack = []  # recorded without its stack trace: matched by the tracepoint alone
        if not isinstance(stack, list) or not all(isinstance(f, str) for f in stack):
            raise ParamError.single(
                ("events", i, "stack"),
                msg("a path event's stack is a list of function names, innermost first"),
            )
        out.append(
            Event(
                t_ms=float(t),
                event=str(name),
                fields={str(k): str(v) for k, v in fields.items()},
                stack=tuple(stack),
                index=i,
            )
        )
    if not out:
        raise ParamError.single(
            ("events",), msg("the recording has no path events (net, skb or sock) to show")
        )
    out.sort(key=lambda e: (e.t_ms, e.index))
    return out


def group_packets(events: Sequence[Event]) -> list[Packet]:
    """Events grouped into packets by skb address and time (see the module docstring)."""
    groups: list[list[Event]] = []
    live: dict[str, int] = {}  # skbaddr -> group while the skb lives
    last_rx: int | None = None
    for e in events:
        addr = e.fields.get("skbaddr")
        if e.event == "sock:sk_data_ready" or not addr:
            if last_rx is not None:
                groups[last_rx].append(e)
            else:
                groups.append([e])
            continue
        g = live.get(addr)
        if g is None:
            g = len(groups)
            groups.append([])
            live[addr] = g
        groups[g].append(e)
        if e.event == "net:netif_receive_skb":
            last_rx = g
        if e.event in FREE_EVENTS:
            del live[addr]
    return [_packet(tuple(g)) for g in groups]


def _packet(events: tuple[Event, ...]) -> Packet:
    names = {e.fields.get("name", "") for e in events} - {""}
    functions = {bare(f) for e in events for f in e.stack}
    if "lo" in names or "loopback_xmit" in functions:
        where = "loopback"
    elif any(n.startswith("veth") for n in names) or "veth_xmit" in functions:
        where = "veth"
    elif any(e.event in TX_EVENTS for e in events):
        where = "tx"
    elif any(e.event == "net:netif_receive_skb" for e in events):
        where = "rx"
    else:  # only freed or woken: the stacks say which side
        rx = any("recvmsg" in f or "_rcv" in f for f in functions)
        where = "rx" if rx else "tx"
    dev = next(
        (e.fields["name"] for e in events if e.fields.get("name")),
        {"loopback": "lo"}.get(where, ""),
    )
    free = next((e for e in events if e.event == "skb:kfree_skb"), None)
    drop = None
    if free is not None:
        drop = free.fields.get("reason", "NOT_SPECIFIED").upper().removeprefix("SKB_DROP_REASON_")
    return Packet(events=events, path=where, dev=dev, drop=drop)


# --- the walks -----------------------------------------------------------------------------------


def model_walk(
    packet: Packet, cache: dict[tuple[str, str, str, str | None], PathTrace]
) -> PathTrace:
    """The explainer's walk of the packet's path (one run per kind of walk)."""
    key = packet.walk
    found = cache.get(key)
    if found is None:
        path, device, drop, hook = key
        raw: dict[str, Any] = {"path": path, "device": device, "packets": 1}
        size = next((e.fields.get("len", "") for e in packet.events if e.fields.get("len")), "")
        payload = int(size) - 66 if size.isdigit() else 1000
        raw["payload_bytes"] = min(MAX_PAYLOAD, max(1, payload))
        if drop != "none":
            raw.update(drop=drop, hook=hook)
        try:
            params = PATH.parse(raw)
        except ParamError:  # a drop this path does not model: the walk without it
            params = PATH.parse({k: v for k, v in raw.items() if k not in ("drop", "hook")})
        found = cache[key] = PATH.run(params)
    return found


def match(event: Event, walk: PathTrace, after: int) -> int:
    """The walk step that fits ``event`` best (see the module docstring)."""
    recorded = {bare(f) for f in event.stack}
    sites = SITES.get(event.event, ())
    best, best_key = 0, (-1, -1, -1, -1)
    for frame in walk.frames:
        st: PathState = frame.state
        stack = set(st["stack"]) | {st["function"]}
        key = (
            len(sites) - sites.index(st["function"]) if st["function"] in sites else 0,
            int(st["function"] in recorded),
            len(stack & recorded),
            int(frame.index >= after),
        )
        if key > best_key:
            best, best_key = frame.index, key
    return best


# --- the trace -----------------------------------------------------------------------------------


def recorded_trace(
    recording: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> RecordedPathTrace:
    """The overlay of a parsed ``path`` recording and the walks (see the module docstring).
    ``overrides`` takes nothing yet: any key is refused, naming it."""
    if overrides:
        if not isinstance(overrides, Mapping):
            raise ParamError.single((), msg("overrides must be an object"))
        key = next(iter(overrides))
        raise ParamError.single(
            (str(key),), msg("a path recording takes no overrides; remove {key}", key=str(key))
        )
    events = parse_events(recording)
    packets = group_packets(events)
    shown: list[Packet] = []
    count = 0
    for p in packets:
        if shown and count + len(p.events) > MAX_FRAMES:
            break
        shown.append(p)
        count += len(p.events)
    cache: dict[tuple[str, str, str, str | None], PathTrace] = {}
    frames: list[Frame[RecordedPathState]] = []
    for n, p in enumerate(shown):
        walk = model_walk(p, cache)
        after = 0
        for e in p.events[: MAX_FRAMES - len(frames)]:
            step = match(e, walk, after)
            after = step
            frames.append(_frame(len(frames), n, p, e, walk, step, first=e is p.events[0]))
    kernel = recording.get("kernel")
    params = RecordedPathParams(
        packets=len(packets),
        events=len(events),
        shown_packets=len(shown),
        kernel=str(kernel.get("release", "")) if isinstance(kernel, Mapping) else "",
    )
    paths: dict[str, int] = {}
    for p in shown:
        paths[p.path] = paths.get(p.path, 0) + 1
    return Trace(
        explainer="path",
        sim_version=RECORDED_VERSION,
        params=params,
        frames=tuple(frames),
        series=None,
        summary={
            "kind": "path",
            "packets": len(packets),
            "shown_packets": len(shown),
            "events": len(events),
            "paths": paths,
            "kernel": params.kernel,
            "walks": sorted(walk_name(k) for k in cache),
        },
    )


def _frame(
    index: int, n: int, p: Packet, e: Event, walk: PathTrace, step: int, *, first: bool
) -> Frame[RecordedPathState]:
    st = walk.frames[step].state
    model = list(st["stack"]) or [st["function"]]
    recorded = [bare(f) for f in reversed(e.stack)]
    rec_set, model_set = set(recorded), set(model)
    state: RecordedPathState = {
        "t_ms": e.t_ms,
        "event": e.event,
        "packet": n,
        "path": p.path,
        "dev": e.fields.get("name", p.dev),
        "reason": e.fields.get("reason") if e.event == "skb:kfree_skb" else None,
        "recorded": recorded,
        "model": model,
        "model_function": st["function"],
        "model_step": step,
        "model_walk": walk_name(p.walk),
        "both": [f for f in model if f in rec_set],
        "skipped": [f for f in recorded if f not in model_set],
        "missing": [f for f in model if f not in rec_set],
    }
    fields = (
        Field(name="packet", value=n),
        Field(name="dev", value=state["dev"] or "–"),
        Field(name="len", value=int(e.fields["len"]), unit="bytes")
        if e.fields.get("len", "").isdigit()
        else Field(name="len", value="–"),
        Field(name="model_step", value=step),
        Field(name="both", value=len(state["both"])),
        Field(name="model_skips", value=len(state["skipped"])),
        Field(name="recording_lacks", value=len(state["missing"])),
    )
    return Frame(
        index=index,
        op=e.event,
        result="drop" if e.event == "skb:kfree_skb" else "ok",
        narration=narrate(state, first=first),
        source=SOURCES.get(st["function"]),
        state=state,
        fields=fields,
        mark="drop" if e.event == "skb:kfree_skb" else ("packet" if first else None),
        time=e.t_ms / 1000,
    )


def _names(functions: Sequence[str]) -> str:
    shown = list(functions[:MAX_LISTED])
    more = len(functions) - len(shown)
    return ", ".join(shown) + (f" (+{more})" if more > 0 else "")


def narrate(state: RecordedPathState, *, first: bool) -> Message:
    """The step's words: the event and packet, the walk, and what each side has alone."""
    parts: list[Message | str] = [
        msg(
            "{event} on {dev} at {t} ms, packet {n} ({path}): the recorded stack has {r} "
            "functions; the model's step {step} is in {function}, {m} deep. {both} functions "
            "are in both.",
            event=state["event"],
            dev=state["dev"] or "–",
            t=f"{state['t_ms']:.3f}",
            n=state["packet"] + 1,
            path=PATH_NAMES[state["path"]],
            r=len(state["recorded"]),
            step=state["model_step"],
            function=state["model_function"],
            m=len(state["model"]),
            both=len(state["both"]),
        )
    ]
    if first:
        parts.append(
            msg(
                "The model walks this packet as the explainer's {walk} walk.",
                walk=state["model_walk"],
            )
        )
    if state["reason"]:
        parts.append(msg("The skb is dropped: reason {reason}.", reason=state["reason"]))
    if state["skipped"]:
        parts.append(msg("The model skips {names}.", names=_names(state["skipped"])))
    if state["missing"]:
        parts.append(
            msg(
                "The recording lacks {names}: inlined by the compiler, a macro, or a call "
                "the tracepoint fires before.",
                names=_names(state["missing"]),
            )
        )
    return join(" ", parts)
