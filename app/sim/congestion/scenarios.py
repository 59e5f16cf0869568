"""Preset scenarios for congestion control, each with a lesson in ``content/cwnd-<slug>.md``."""

from __future__ import annotations

from app.sim.core import Preset, msg


def _p(
    flows: list[dict[str, object]],
    *,
    rate: float = 100,
    rtt: float = 40,
    duration: float = 30,
    connect: str = "handshake",
    **buf: float | str,
) -> dict[str, object]:
    link: dict[str, object] = {"rate_mbps": rate, "rtt_ms": rtt}
    link.update(buf or {"buffer_bdp": 1})
    return {
        "link": link,
        "flows": flows,
        "duration_s": duration,
        "mss": 1448,
        "seed": 0,
        "sample_ms": 10,
        "connect": connect,  # flows begin with the SYN, as new scenarios do
    }


PRESETS = (
    Preset(
        slug="slow-start",
        lesson="cwnd-slow-start",
        title=msg("Slow start and the first loss"),
        params=_p([{"cc": "reno", "start_s": 0}], rate=20, rtt=40, duration=4, buffer_bdp=1),
    ),
    Preset(
        slug="reno-sawtooth",
        lesson="cwnd-reno-sawtooth",
        title=msg("Reno's sawtooth"),
        params=_p([{"cc": "reno", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=1),
    ),
    Preset(
        slug="cubic-lfn",
        lesson="cwnd-cubic-lfn",
        title=msg("CUBIC on a long fat pipe"),
        params=_p([{"cc": "cubic", "start_s": 0}], rate=100, rtt=40, duration=60, buffer_bdp=1),
    ),
    Preset(
        slug="cubic-vs-reno",
        lesson="cwnd-cubic-vs-reno",
        title=msg("CUBIC vs Reno sharing a bottleneck"),
        params=_p(
            [{"cc": "cubic", "start_s": 0}, {"cc": "reno", "start_s": 0}],
            rate=20,
            rtt=40,
            duration=60,
            buffer_bdp=1,
        ),
    ),
    Preset(
        slug="bbr-cycle",
        lesson="cwnd-bbr-cycle",
        title=msg("BBR: startup, drain and the probe cycle"),
        params=_p([{"cc": "bbr", "start_s": 0}], rate=20, rtt=40, duration=25, buffer_bdp=1),
    ),
    Preset(
        slug="bbr-vs-cubic",
        lesson="cwnd-bbr-vs-cubic",
        title=msg("BBR vs CUBIC sharing a bottleneck"),
        params=_p(
            [{"cc": "bbr", "start_s": 0}, {"cc": "cubic", "start_s": 0}],
            rate=20,
            rtt=40,
            duration=40,
            buffer_bdp=1,
        ),
    ),
    Preset(
        slug="bufferbloat",
        lesson="cwnd-bufferbloat",
        title=msg("Bufferbloat: a deep buffer"),
        params=_p([{"cc": "cubic", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=8),
    ),
    Preset(
        slug="shallow-buffer",
        lesson="cwnd-shallow-buffer",
        title=msg("A shallow buffer"),
        params=_p([{"cc": "cubic", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=0.1),
    ),
    Preset(
        slug="ecn-red",
        lesson="cwnd-ecn-red",
        title=msg("ECN: the same deep buffer, marked instead of filled"),
        params=_p(
            [{"cc": "cubic", "start_s": 0, "tcp_ecn": 1}],
            rate=10,
            rtt=40,
            duration=40,
            buffer_bdp=8,
            aqm="red-ecn",
            red_min_packets=10,
            red_max_packets=40,
            red_max_p=0.02,
        ),
    ),
    Preset(
        slug="rwnd-limit",
        lesson="cwnd-rwnd-limit",
        title=msg("Flow control: the receive window, not cwnd, sets the rate"),
        params=_p(
            [{"cc": "cubic", "start_s": 0, "rwnd_bytes": 131072}],
            rate=50,
            rtt=40,
            duration=10,
            buffer_bdp=1,
        ),
    ),
)

DEFAULT_PRESET = "cubic-lfn"
