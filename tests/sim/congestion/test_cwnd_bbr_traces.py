"""Whole traces of short BBR, CUBIC and Reno runs beyond the presets (loss, PROBE_RTT, several
flows and RTTs, RED with ECN, a receive window, a 1 Mbit/s and a 1 Gbit/s link) are what they
were when recorded: a speed-up of the per-ACK path must not change a byte.

The digests are tests/contract/trace_digest.py's. Re-record (print) them with
``.venv/bin/python -m tests.sim.congestion.test_cwnd_bbr_traces`` only for a change meant to
alter traces, which also bumps the congestion explainer's ``sim_version``.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.congestion import parse
from app.sim.congestion.run import simulate
from tests.contract.trace_digest import digest

SCENARIOS: dict[str, dict[str, Any]] = {
    "bbr-probe-rtt": {
        "link": {"rate_mbps": 10, "rtt_ms": 30, "buffer_bdp": 1},
        "flows": [{"cc": "bbr"}],
        "duration_s": 10.5,
    },
    "bbr-random-loss": {
        "link": {"rate_mbps": 10, "rtt_ms": 60, "buffer_packets": 100, "loss_rate": 0.02},
        "flows": [{"cc": "bbr"}],
        "duration_s": 4,
    },
    "bbr-three-rtts-tiny-buffer": {
        "link": {"rate_mbps": 10, "rtt_ms": 20, "buffer_packets": 5},
        "flows": [
            {"cc": "bbr"},
            {"cc": "bbr", "start_s": 0.3, "rtt_ms": 50},
            {"cc": "bbr", "start_s": 0.6, "rtt_ms": 90},
        ],
        "duration_s": 4,
    },
    "bbr-cubic-established": {
        "link": {"rate_mbps": 10, "rtt_ms": 25, "buffer_packets": 40},
        "flows": [{"cc": "bbr"}, {"cc": "cubic", "start_s": 0.3}],
        "duration_s": 4,
        "connect": "established",
        "seed": 3,
    },
    "bbr-red-ecn-rwnd": {
        "link": {"rate_mbps": 10, "rtt_ms": 30, "buffer_packets": 200, "aqm": "red-ecn"},
        "flows": [{"cc": "bbr", "tcp_ecn": 1}, {"cc": "reno", "tcp_ecn": 1, "rwnd_bytes": 60000}],
        "duration_s": 4,
    },
    "bbr-1mbit": {
        "link": {"rate_mbps": 1, "rtt_ms": 100, "buffer_packets": 20},
        "flows": [{"cc": "bbr"}],
        "duration_s": 8,
    },
    "bbr-1gbit": {
        "link": {"rate_mbps": 1000, "rtt_ms": 10, "buffer_bdp": 0.5},
        "flows": [{"cc": "bbr"}],
        "duration_s": 0.4,
    },
    "cubic-four-loss": {
        "link": {"rate_mbps": 10, "rtt_ms": 30, "buffer_packets": 30, "loss_rate": 0.001},
        "flows": [{"cc": "cubic", "start_s": 0.1 * i} for i in range(4)],
        "duration_s": 4,
    },
}

RECORDED = {  # recorded before the per-ACK work of issue 20 changed the code
    "bbr-probe-rtt": "a719f6b23235a4c2bb6bdb3761710d898c256a4f363c8a3d07bec5b9de08cc70",
    "bbr-random-loss": "41c914f9c36722dcdfe89acee9f445862d569f948ae010410f6f907026933851",
    "bbr-three-rtts-tiny-buffer": "54c2c10ed99cf729461d29501ceb600f69114f8abf8518aba7ac2e3935f527bd",
    "bbr-cubic-established": "9c1c8010b16d2875660830bdb37d468cb9d347cb177ec464eda0c5c5d6171124",
    "bbr-red-ecn-rwnd": "b7b9875e9802ecaf11e44be7b1ab0af68a491194240418b50df6a69f7fb0d930",
    "bbr-1mbit": "6dae89afaa2c9cbee2d424f53858a51864d140cde0ba07c23d44199df0855d6a",
    "bbr-1gbit": "bcec36021f529352fd375a18dcd74a9fb37f552dae39f7dcf646a978f7c621b7",
    "cubic-four-loss": "4dbdfc14f5f3625d4981752846efef7a0bce7217593ce35fea5c5b4d0c4bfcaf",
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_trace_is_the_recorded_one(name: str) -> None:
    assert digest(simulate(parse(SCENARIOS[name]))) == RECORDED[name]


if __name__ == "__main__":
    for name, raw in SCENARIOS.items():
        print(f'    "{name}": "{digest(simulate(parse(raw)))}",')
