"""The TCP_INFO offsets and enum values the runner reads the real kernel with, checked in
v6.4's include/uapi/linux/tcp.h, and the model's reader for each of them."""

from __future__ import annotations

import re

from app.sim.tcp.packetdrill.runner import INFO_FIELDS
from app.sim.tcp.packetdrill.tcpinfo import CA_STATES, INFO_LEN, OFFSETS
from tests.linux_v64 import require_v6_4, v6_4_file

_SIZES = {"__u8": 1, "__u32": 4, "__u64": 8}


def _layout() -> dict[str, int]:
    """struct tcp_info's field offsets, counted from its declarations (the two __u8 lines
    of bit-fields take one byte each)."""
    text = "\n".join(v6_4_file("include/uapi/linux/tcp.h"))
    body = text[text.index("struct tcp_info {") : text.index("};", text.index("struct tcp_info {"))]
    offsets: dict[str, int] = {}
    at = 0
    for m in re.finditer(r"^\s*(__u8|__u32|__u64)\s+(\w+)", body, re.M):
        size = _SIZES[m[1]]
        at = (at + size - 1) // size * size
        offsets[m[2]] = at
        at += size
    return offsets


def test_offsets_are_struct_tcp_info_s_in_v6_4() -> None:
    require_v6_4()
    layout = _layout()
    assert layout["tcpi_snd_cwnd"] == 80
    for name, (off, fmt) in OFFSETS.items():
        assert layout[name] == off, name
        assert off + {"B": 1, "I": 4}[fmt] <= INFO_LEN


def test_ca_state_names_are_enum_tcp_ca_state_s() -> None:
    require_v6_4()
    text = "\n".join(v6_4_file("include/uapi/linux/tcp.h"))
    for name, value in CA_STATES.items():
        assert re.search(rf"\b{name}\s*=\s*{value}\b", text), name


def test_the_model_reads_every_field_the_parser_accepts() -> None:
    assert set(INFO_FIELDS) == set(OFFSETS)
