"""Captures the tests write with dpkt: segments, options, windows and states per 6.4's rules;
broken files refused at the byte offset where they break."""

from __future__ import annotations

import struct

import pytest

from app.recordings.capture import MAX_SNAPLEN
from app.recordings.parse import parse
from app.recordings.tcpflow import options_text
from app.sim.core import ParamError
from app.sim.tcp.options import TcpOption
from app.sim.tcp.options import options_text as model_options_text
from tests.recordings.pcaps import MSS_WS, A, B, F, K, P, R, S, handshake_data_close, pcap, segment

CLIENT = ["SYN_SENT", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT"]
SERVER = ["LISTEN", "SYN_RECEIVED", "ESTABLISHED", "CLOSE_WAIT", "LAST_ACK", "CLOSED"]


def error_of(body: bytes) -> str:
    with pytest.raises(ParamError) as caught:
        parse(body, "capture")
    (issue,) = caught.value.issues
    return issue.msg


@pytest.mark.parametrize("link", ["ether", "raw", "sll", "sll2"])
@pytest.mark.parametrize("ng", [False, True], ids=["pcap", "pcapng"])
def test_every_link_type_and_file_format_gives_the_same_connection(link: str, ng: bool) -> None:
    out = parse(pcap(handshake_data_close(), link, ng), "capture")
    assert out["kind"] == "capture"
    assert out["states"] == {"10.0.0.1:40312": CLIENT, "10.0.0.2:80": SERVER}
    assert [s["t_ms"] for s in out["segments"]] == [0, 10, 20, 21, 31, 40, 50, 60, 70]
    assert out["segments"][3]["len"] == 100


def test_ipv6_endpoints_are_bracketed() -> None:
    out = parse(pcap(handshake_data_close(("fd00::1", 5555), ("fd00::2", 80))), "capture")
    assert out["states"] == {"[fd00::1]:5555": CLIENT, "[fd00::2]:80": SERVER}
    assert out["transitions"][0]["rule"] == "tcp_v6_connect"


def test_options_are_spelled_as_the_model_spells_them() -> None:
    raw = (
        struct.pack("!BBH", 2, 4, 1460)
        + b"\x04\x02"
        + struct.pack("!BBII", 8, 10, 123, 0)
        + b"\x01"
        + struct.pack("!BBB", 3, 3, 7)
        + struct.pack("!BBII", 5, 10, 3000, 4000)
    )
    text, wscale = options_text(raw)
    model = model_options_text(
        (
            TcpOption("mss", (1460,)),
            TcpOption("sackOK"),
            TcpOption("TS", (123, 0)),
            TcpOption("nop"),
            TcpOption("wscale", (7,)),
            TcpOption("sack", (3000, 4000)),
        )
    )
    assert text == model and wscale == 7


def test_windows_are_scaled_once_both_syns_carried_wscale() -> None:
    segs = parse(pcap(handshake_data_close()), "capture")["segments"]
    assert "win_scaled" not in segs[0] and "win_scaled" not in segs[1]  # SYNs are never scaled
    assert segs[2]["win"] == 502 and segs[2]["win_scaled"] == 502 << 7
    no_ws = [
        segment(0, A, B, S, 1),
        segment(0.01, B, A, S | K, 9, 2, opts=MSS_WS),
        segment(0.02, A, B, K, 2, 10, win=500),
    ]
    assert "win_scaled" not in parse(pcap(no_ws), "capture")["segments"][2]


def test_only_the_first_connection_is_read() -> None:
    other = ("10.0.0.9", 1234)
    segs = handshake_data_close()
    mixed = [segs[0], segment(0.001, other, B, S, 77), *segs[1:]]
    out = parse(pcap(mixed), "capture")
    assert len(out["segments"]) == len(segs)
    assert all(other[0] not in s["from"] for s in out["segments"])


def test_crossing_fins_go_through_closing() -> None:
    """Both close at once: each FIN arrives in FIN_WAIT_1 (tcp_fin → CLOSING), then the ACK of
    each FIN moves CLOSING to TIME_WAIT (tcp_rcv_state_process → tcp_time_wait)."""
    segs = handshake_data_close()[:3] + [
        segment(0.030, A, B, F | K, 1001, 5001),
        segment(0.030, B, A, F | K, 5001, 1001),
        segment(0.040, A, B, K, 1002, 5002),
        segment(0.040, B, A, K, 5002, 1002),
    ]
    out = parse(pcap(segs), "capture")
    want = ["FIN_WAIT_1", "CLOSING", "TIME_WAIT"]
    assert out["states"]["10.0.0.1:40312"][-3:] == want
    assert out["states"]["10.0.0.2:80"][-3:] == want
    rules = {(m["to"], m["rule"]) for m in out["transitions"]}
    assert ("CLOSING", "tcp_fin") in rules and ("TIME_WAIT", "tcp_time_wait") in rules


def test_a_reset_closes_both_ends() -> None:
    segs = handshake_data_close()[:4] + [segment(0.03, B, A, R | K, 5001, 1101)]
    out = parse(pcap(segs), "capture")
    assert out["states"]["10.0.0.1:40312"][-1] == "CLOSED"
    assert out["states"]["10.0.0.2:80"][-1] == "CLOSED"
    assert {m["rule"] for m in out["transitions"][-2:]} == {"tcp_send_active_reset", "tcp_reset"}


def test_a_capture_that_starts_midstream_assumes_established() -> None:
    segs = [segment(0, A, B, P | K, 1001, 5001, data=b"hi"), segment(0.01, B, A, K, 5001, 1003)]
    out = parse(pcap(segs), "capture")
    assert out["states"] == {"10.0.0.1:40312": ["ESTABLISHED"], "10.0.0.2:80": ["ESTABLISHED"]}


def test_broken_files_name_the_byte_offset() -> None:
    good = pcap(handshake_data_close())
    assert "byte 10" in error_of(good[:10])  # the file header cut short
    assert "byte 0" in error_of(b"\x00" * 40)  # no known magic number
    first_len = struct.unpack("<I", good[24 + 8 : 24 + 12])[0]
    second = 24 + 16 + first_len
    assert f"byte {second}" in error_of(good[: second + 5])  # a record header cut short
    huge = bytearray(good)
    huge[24 + 8 : 24 + 12] = (0xFFFFFFF0).to_bytes(4, "little")  # the first record: ~4 GB
    assert "byte 24" in error_of(bytes(huge)) and "snaplen" in error_of(bytes(huge))
    last = 24
    while last + 16 + struct.unpack("<I", good[last + 8 : last + 12])[0] < len(good):
        last += 16 + struct.unpack("<I", good[last + 8 : last + 12])[0]
    over = bytearray(good)
    over[last + 8 : last + 12] = (len(good) - last - 16 + 100).to_bytes(4, "little")
    assert error_of(bytes(over)).startswith(f"byte {last}:")  # the last record runs past the end
    assert "only" in error_of(bytes(over))
    link = bytearray(good)
    link[20:24] = (147).to_bytes(4, "little")
    assert "unknown link type 147" in error_of(bytes(link))
    assert "without one TCP segment" in error_of(good[:24])


def test_pcapng_blocks_are_checked_before_they_are_decoded() -> None:
    ng = pcap(handshake_data_close(), ng=True)
    shb_len = struct.unpack("<I", ng[4:8])[0]
    idb_len = struct.unpack("<I", ng[shb_len + 4 : shb_len + 8])[0]
    epb = shb_len + idb_len
    claims = bytearray(ng)
    claims[epb + 4 : epb + 8] = (0xFFFFFFF0).to_bytes(4, "little")  # a block of ~4 GB
    assert f"byte {epb}" in error_of(bytes(claims))
    caplen = bytearray(ng)
    caplen[epb + 20 : epb + 24] = (MAX_SNAPLEN * 16).to_bytes(4, "little")
    assert "snaplen" in error_of(bytes(caplen))
    assert f"byte {epb}" in error_of(ng[: epb + 6])
