"""The recording document: built, validated (naming the field), written whole; the machine
facts the recorder reads (``ss -tin`` text, sysctl lines)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from app.record import output


def doc(events: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    evs = events if events is not None else [
        {"t_ms": 0.0, "event": "tcp:tcp_probe", "fields": {"snd_cwnd": "10"}},
        {"t_ms": 1.5, "event": "tcp:tcp_probe", "fields": {"snd_cwnd": "11"}},
    ]
    return output.build(
        kw.pop("kind", "cwnd"),
        evs,
        duration_ms=12.5,
        sysctls={"net.ipv4.tcp_sack": "1"},
        now=dt.datetime(2026, 12, 4, 23, 40, tzinfo=dt.UTC),
        **kw,
    )


def test_built_document_follows_the_format_page() -> None:
    d = doc(link={"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100000, "mtu": 1500},
            flt={"port": 5201}, command=["iperf3", "-c", "x"], notes=["n"])
    assert output.validate(d) == []
    assert (d["format"], d["schema"], d["kind"]) == ("stepscope-recording", 1, "cwnd")
    assert d["recorded_at"] == "2026-12-04T23:40:00Z"
    assert set(d["kernel"]) == {"release", "machine"}
    # every key the page documents, and only those plus notes/demo
    page = (Path(__file__).resolve().parents[2] / "docs" / "recording-format.md").read_text()
    for key in d:
        assert f'"{key}"' in page, key


@pytest.mark.parametrize(
    "change,field",
    [
        (lambda d: d.pop("kernel"), "kernel"),
        (lambda d: d.update(kind="cpu"), "kind"),
        (lambda d: d.update(schema=2), "format/schema"),
        (lambda d: d.update(link=[1]), "link"),
        (lambda d: d.update(command="ls -l"), "command"),
        (lambda d: d["events"][1].update(t_ms=-1), "events[1].t_ms"),
        (lambda d: d["events"][0].update(event="tcp_probe"), "events[0].event"),
        (lambda d: d["events"][0].update(fields={"a": 1}), "events[0].fields"),
        (lambda d: d["events"][0].update(stack=["f"] * 65), "events[0].stack"),
        (lambda d: d["events"][0].update(fields={str(i): "" for i in range(65)}),
         "events[0].fields"),
    ],
)
def test_validation_names_the_field(change: Any, field: str) -> None:
    d = doc()
    change(d)
    errs = output.validate(d)
    assert errs and errs[0].startswith(field), errs


def test_write_file_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = doc()
    size = output.write(d, str(tmp_path / "r.json"))
    text = (tmp_path / "r.json").read_text()
    assert json.loads(text) == d and size == len(text.encode())
    assert list(tmp_path.iterdir()) == [tmp_path / "r.json"]  # no temporary left
    output.write(d, "-")
    assert json.loads(capsys.readouterr().out) == d
    bad = doc()
    bad["events"][0]["t_ms"] = 9.0
    with pytest.raises(ValueError, match=r"events\[1\]\.t_ms"):
        output.write(bad, str(tmp_path / "bad.json"))
    assert not (tmp_path / "bad.json").exists()


def ss_text(cc: str, mss: int, rate: str) -> str:
    return (
        "State Recv-Q Send-Q Local Address:Port  Peer Address:Port Process\n"
        "ESTAB 0      3780   10.0.0.1:40312     10.0.0.2:5201\n"
        f"\t ts sack {cc} wscale:7,7 rto:244 rtt:43.1/2.2 ato:40 mss:{mss} pmtu:1500 "
        f"rcvmss:536 advmss:1448 cwnd:57 ssthresh:44 bytes_sent:1 pacing_rate {rate} "
        "delivery_rate 19.9Mbps busy:4012ms\n"
        "LISTEN 0 128 0.0.0.0:22 0.0.0.0:*\n"
        "\t cubic rto:1000 mss:536\n"
    )


@pytest.mark.parametrize("rate,bps", [("25.3Mbps", 25_300_000), ("880Kbps", 880_000),
                                      ("1.2Gbps", 1_200_000_000), ("912bps", 912)])
def test_parse_ss(rate: str, bps: int) -> None:
    flows = output.parse_ss(ss_text("bbr", 1448, rate), {"reno", "cubic", "bbr"})
    assert flows[0] == {"src": "10.0.0.1:40312", "dst": "10.0.0.2:5201", "cc": "bbr",
                        "mss": 1448, "pacing_rate_bps": bps}
    assert flows[1]["cc"] == "cubic" and flows[1]["pacing_rate_bps"] is None


def test_sysctl_lines() -> None:
    text = "net/ipv4/tcp_rmem=4096 131072  6291456\nnet/ipv4/tcp_sack=1\njunk\n"
    assert output.parse_sysctl_lines(text) == {
        "net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_sack": "1"}
    for key in ("tcp_congestion_control", "tcp_timestamps", "tcp_sack", "tcp_window_scaling",
                "tcp_rmem", "tcp_wmem", "tcp_ecn", "tcp_early_retrans", "tcp_frto",
                "tcp_syncookies", "tcp_fin_timeout"):
        assert "net.ipv4." + key in output.SYSCTLS


def test_long_commands_are_clipped_to_the_app_limits() -> None:
    d = doc(command=["python3", "-c", "x" * 5000, *["a"] * 100])
    assert output.validate(d) == []
    assert len(d["command"]) == output.MAX_COMMAND and len(d["command"][2]) == output.MAX_TEXT
