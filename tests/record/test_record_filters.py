"""The flow filter: kernel filter expressions from an event's format, and the userspace half
for fields the kernel cannot compare (tcp_probe's sockaddr bytes)."""

from __future__ import annotations

import sys

import pytest

from app.record.filters import Field, FlowFilter, kernel_filter, matches, parse_format


def fmt(*fields: str) -> str:
    """A tracefs ``format`` file with these ``type name`` fields after the common ones."""
    lines = ["name: x", "ID: 1", "format:",
             "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;",
             "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;", ""]
    off = 8
    for f in fields:
        typ, name = f.rsplit(" ", 1)
        size = {"__u16": 2, "__u32": 4, "int": 4, "__u64": 8, "const void *": 8}.get(typ, 4)
        if "[" in name:
            size = int(name[name.index("[") + 1 : -1])
        if typ.startswith("__data_loc"):
            size = 4
        lines.append(f"\tfield:{typ} {name};\toffset:{off};\tsize:{size};\tsigned:0;")
        off += size
    lines.append('\nprint fmt: "..."')
    return "\n".join(lines)


STATE = fmt("const void * skaddr", "int oldstate", "int newstate", "__u16 sport",
            "__u16 dport", "__u16 family", "__u16 protocol", "__u8 saddr[4]", "__u8 daddr[4]",
            "__u8 saddr_v6[16]", "__u8 daddr_v6[16]")
PROBE = fmt("__u8 saddr[28]", "__u8 daddr[28]", "__u16 sport", "__u16 dport", "__u32 snd_cwnd")
DEVQ = fmt("const void * skbaddr", "unsigned int len", "__data_loc char[] name")


def test_parse_format_skips_common_fields() -> None:
    f = parse_format(STATE)
    assert "common_type" not in f
    assert f["daddr"] == Field("daddr", "__u8", 4, 4)
    assert f["sport"].size == 2 and f["sport"].array is None
    assert parse_format(DEVQ)["name"].type == "__data_loc char[]"


def test_port_and_dst_on_an_event_with_both() -> None:
    expr, rest = kernel_filter(FlowFilter(port=5201, dst="10.0.0.2"), parse_format(STATE))
    want = int.from_bytes(bytes([10, 0, 0, 2]), sys.byteorder)
    assert expr == (f"(sport == 5201 || dport == 5201) && "
                    f"(saddr == {want:#x} || daddr == {want:#x})")
    assert rest is False


def test_sockaddr_addresses_are_left_to_userspace() -> None:
    expr, rest = kernel_filter(FlowFilter(port=80, dst="10.0.0.2"), parse_format(PROBE))
    assert expr == "(sport == 80 || dport == 80)" and rest is True
    expr, rest = kernel_filter(FlowFilter(dst="fe80::1"), parse_format(STATE))
    assert expr is None and rest is True  # IPv6: no 4-byte field to compare


def test_dev_list_and_no_filter() -> None:
    expr, rest = kernel_filter(FlowFilter(dev="a0,b0"), parse_format(DEVQ))
    assert expr == '(name == "a0" || name == "b0")' and not rest
    assert kernel_filter(FlowFilter(), parse_format(STATE)) == (None, False)
    assert FlowFilter().as_json() is None
    assert FlowFilter(port=1, dev="x").as_json() == {"port": 1, "dev": "x"}


@pytest.mark.parametrize(
    "flt,fields,keep",
    [
        (FlowFilter(port=5201), {"src": "10.0.0.1:40312", "dest": "10.0.0.2:5201"}, True),
        (FlowFilter(port=5202), {"src": "10.0.0.1:40312", "dest": "10.0.0.2:5201"}, False),
        (FlowFilter(dst="10.0.0.2"), {"src": "10.0.0.2:5201", "dest": "10.0.0.1:1"}, True),
        (FlowFilter(dst="10.0.0.3"), {"src": "10.0.0.2:5201", "dest": "10.0.0.1:1"}, False),
        (FlowFilter(dst="::1"), {"src": "[::1]:80", "dest": "[::1]:4000"}, True),
        (FlowFilter(port=4000), {"src": "[::1]:80", "dest": "[::1]:4000"}, True),
        (FlowFilter(port=80), {"sport": "80", "dport": "1"}, True),
        (FlowFilter(port=81), {"sport": "80", "dport": "1"}, False),
        # nothing printed says which flow it is: kept
        (FlowFilter(port=81, dst="10.0.0.9"), {"skbaddr": "01", "len": "74"}, True),
    ],
)
def test_userspace_match(flt: FlowFilter, fields: dict[str, str], keep: bool) -> None:
    assert matches(flt, fields) is keep
