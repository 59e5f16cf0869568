"""Congestion control explainer: a packet-level dumbbell with Linux 6.4's Reno, CUBIC and BBR v1.

``parse`` / ``run`` / ``dump`` are the registry interface; see ``run.py`` for the output shape
and ``engine.py`` for the model.
"""

from __future__ import annotations

from app.sim.congestion.params import CwndParams, dump, parse
from app.sim.congestion.run import EXPLAINER, SIM_VERSION, run
from app.sim.registry import Explainer, Preset, register


def _p(
    flows: list[dict[str, object]],
    *,
    rate: float = 100,
    rtt: float = 40,
    duration: float = 30,
    **buf: float,
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
    }


PRESETS = (
    Preset(
        slug="slow-start",
        lesson="cwnd-slow-start",
        title="Slow start and the first loss",
        params=_p([{"cc": "reno", "start_s": 0}], rate=20, rtt=40, duration=4, buffer_bdp=1),
    ),
    Preset(
        slug="reno-sawtooth",
        lesson="cwnd-reno-sawtooth",
        title="Reno's sawtooth",
        params=_p([{"cc": "reno", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=1),
    ),
    Preset(
        slug="cubic-lfn",
        lesson="cwnd-cubic-lfn",
        title="CUBIC on a long fat pipe",
        params=_p([{"cc": "cubic", "start_s": 0}], rate=100, rtt=40, duration=60, buffer_bdp=1),
    ),
    Preset(
        slug="cubic-vs-reno",
        lesson="cwnd-cubic-vs-reno",
        title="CUBIC vs Reno sharing a bottleneck",
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
        title="BBR: startup, drain and the probe cycle",
        params=_p([{"cc": "bbr", "start_s": 0}], rate=20, rtt=40, duration=25, buffer_bdp=1),
    ),
    Preset(
        slug="bbr-vs-cubic",
        lesson="cwnd-bbr-vs-cubic",
        title="BBR vs CUBIC sharing a bottleneck",
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
        title="Bufferbloat: a deep buffer",
        params=_p([{"cc": "cubic", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=8),
    ),
    Preset(
        slug="shallow-buffer",
        lesson="cwnd-shallow-buffer",
        title="A shallow buffer",
        params=_p([{"cc": "cubic", "start_s": 0}], rate=10, rtt=40, duration=40, buffer_bdp=0.1),
    ),
)

EXPLAINER_DEF = register(
    Explainer(
        name=EXPLAINER,
        title="Congestion control",
        summary=(
            "Watch Reno, CUBIC and BBR share a bottleneck: cwnd, queue and RTT over time, and "
            "each loss, recovery, timeout, HyStart exit, CUBIC epoch and BBR mode change "
            "explained with the numbers of that moment (Linux 6.4)."
        ),
        sim_version=SIM_VERSION,
        parse=parse,
        run=run,
        dump=dump,
        presets=PRESETS,
        default_preset="cubic-lfn",
    )
)

__all__ = ["CwndParams", "EXPLAINER_DEF", "PRESETS", "dump", "parse", "run"]
