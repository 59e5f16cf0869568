"""What the API documentation (/docs) and the recordings page show of the format: examples of a
recording, of the answers, and the three lines that make a recording on one's own machine."""

from __future__ import annotations

from typing import Any

POST_BODY_DESCRIPTION = (
    "The file itself: a `stepscope record` JSON file (docs/recording-format.md, schema 1) as "
    "`application/json`, or a pcap/pcapng capture of one TCP connection as "
    "`application/vnd.tcpdump.pcap` (the first connection in it is read). At most 5 MB."
)
GET_DESCRIPTION = (
    "The parsed recording. A capture or `tcp` recording has `segments` (`t_ms`, `from`, "
    "`flags`, `seq`, `ack`, `win`, `len`, `options` in packetdrill's spelling; `win_scaled` "
    "once both SYNs carried wscale) and `states` per endpoint (RFC 9293 names, in order, "
    "inferred by Linux 6.4's rules, each move in `transitions` with the function that makes "
    "it); a `cwnd` recording `flows` (`cc`, `src`, `dst`, `series` of `t_ms`, `cwnd`, "
    "`ssthresh` (null: infinite), `srtt_us`) and `link`; a `path` recording its `events` with "
    "their stacks."
)
HOW_TO_RECORD = (
    "stepscope record demo cwnd --cc cubic --rate-mbit 20 --rtt-ms 40 --out cwnd.json",
    "sudo tcpdump -i any -w conn.pcap 'tcp port 80'",
    "curl -H 'Content-Type: application/vnd.tcpdump.pcap' --data-binary @conn.pcap "
    "http://localhost:8000/api/v1/recordings",
)
EXAMPLE_CREATED = {"id": "q3Zr8kVb2mXo1TsA", "url": "/r/q3Zr8kVb2mXo1TsA", "kind": "capture"}
EXAMPLE_RECORDING: dict[str, Any] = {
    "format": "stepscope-recording",
    "schema": 1,
    "kind": "cwnd",
    "recorded_at": "2026-12-04T23:40:00Z",
    "tool": "stepscope 0.1",
    "kernel": {"release": "6.4.0", "machine": "x86_64"},
    "sysctls": {"net.ipv4.tcp_congestion_control": "cubic"},
    "link": {"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100000, "mtu": 1500},
    "filter": {"port": 5201, "dst": "10.0.0.2"},
    "command": None,
    "duration_ms": 12.5,
    "flows": [{"src": "10.0.0.1:40312", "dst": "10.0.0.2:5201", "cc": "cubic", "mss": 1448}],
    "events": [
        {
            "t_ms": 0.0,
            "event": "tcp:tcp_probe",
            "fields": {
                "src": "10.0.0.1:40312",
                "dest": "10.0.0.2:5201",
                "snd_cwnd": "10",
                "ssthresh": "2147483647",
                "srtt": "40210",
            },
        }
    ],
}
EXAMPLE_PARSED: dict[str, Any] = {
    "id": "q3Zr8kVb2mXo1TsA",
    "url": "/r/q3Zr8kVb2mXo1TsA",
    "kind": "capture",
    "segments": [
        {
            "t_ms": 0.0,
            "from": "10.0.0.1:40312",
            "to": "10.0.0.2:80",
            "flags": "S",
            "seq": 1000,
            "ack": 0,
            "win": 64240,
            "len": 0,
            "options": "<mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7>",
        }
    ],
    "states": {"10.0.0.1:40312": ["SYN_SENT", "ESTABLISHED"], "10.0.0.2:80": ["LISTEN"]},
}
