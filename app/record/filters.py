"""The flow filter (``--port``, ``--dst``, ``--dev``) as tracefs filter expressions.

An event's fields come from its ``format`` file. Where an event has the fields, the filter
runs in the kernel (``events/<sys>/<name>/filter``); where it has not (``tcp:tcp_probe``'s
addresses are ``struct sockaddr`` bytes), :func:`matches` checks the printed fields.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from dataclasses import dataclass

_FIELD = re.compile(r"^\s*field:(?P<type>.+?)\s+(?P<name>\w+)(?:\[(?P<n>\d+)\])?;.*size:(?P<size>\d+);")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    size: int
    array: int | None


@dataclass(frozen=True)
class FlowFilter:
    port: int | None = None
    dst: str | None = None  # an IPv4 or IPv6 address
    dev: str | None = None  # network device names, comma-separated (net:* events)

    def as_json(self) -> dict[str, int | str] | None:
        d: dict[str, int | str] = {}
        if self.port is not None:
            d["port"] = self.port
        if self.dst is not None:
            d["dst"] = self.dst
        if self.dev is not None:
            d["dev"] = self.dev
        return d or None


def parse_format(text: str) -> dict[str, Field]:
    """The non-common fields of an event's ``format`` file, by name."""
    out: dict[str, Field] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if m is None or m["name"].startswith("common_"):
            continue
        n = int(m["n"]) if m["n"] else None
        out[m["name"]] = Field(m["name"], m["type"], int(m["size"]), n)
    return out


def _addr_value(addr: str) -> int | None:
    """An IPv4 address as the number tracefs compares a ``__u8 daddr[4]`` with: the four
    bytes read as a host-order u32 (10.0.0.2 is 0x0200000a on x86)."""
    ip = ipaddress.ip_address(addr)
    if ip.version != 4:
        return None
    return int.from_bytes(ip.packed, sys.byteorder)


def kernel_filter(flt: FlowFilter, fields: dict[str, Field]) -> tuple[str | None, bool]:
    """(the filter expression for this event or None, whether :func:`matches` must still
    check in userspace what the expression could not say)."""
    parts: list[str] = []
    rest = False
    if flt.port is not None:
        if "sport" in fields and "dport" in fields:
            parts.append(f"(sport == {flt.port} || dport == {flt.port})")
        else:
            rest = True
    if flt.dst is not None:
        value = _addr_value(flt.dst)
        four = [n for n in ("saddr", "daddr") if n in fields and fields[n].size == 4]
        if value is not None and len(four) == 2:
            parts.append(f"(saddr == {value:#x} || daddr == {value:#x})")
        else:
            rest = True
    if flt.dev is not None and "name" in fields and "char" in fields["name"].type:
        devs = [d for d in flt.dev.split(",") if d]
        parts.append("(" + " || ".join(f'name == "{d}"' for d in devs) + ")")
    return (" && ".join(parts) or None), rest


_ADDR_KEYS = ("src", "dest", "saddr", "daddr", "saddrv6", "daddrv6")


def _split_host_port(value: str) -> tuple[str, str]:
    """``10.0.0.1:5201`` or ``[::1]:5201`` (tracefs's %pISpc) -> (host, port)."""
    if value.startswith("["):
        host, _, port = value[1:].partition("]:")
        return host, port
    host, sep, port = value.rpartition(":")
    if not sep or ":" in host:
        return value, ""
    return host, port


def matches(flt: FlowFilter, fields: dict[str, str]) -> bool:
    """The userspace half of the filter, on the fields as printed. An event that prints no
    address or port at all is kept (nothing says it is another flow's)."""
    hosts: set[str] = set()
    ports: set[str] = set()
    for key in _ADDR_KEYS:
        if key in fields:
            host, port = _split_host_port(fields[key])
            hosts.add(host)
            if port:
                ports.add(port)
    for key in ("sport", "dport"):
        if key in fields:
            ports.add(fields[key])
    if flt.port is not None and ports and str(flt.port) not in ports:
        return False
    if flt.dst is not None and hosts:
        want = ipaddress.ip_address(flt.dst)
        try:
            got = {ipaddress.ip_address(h) for h in hosts if h}
        except ValueError:
            return True
        if want not in got:
            return False
    return True
