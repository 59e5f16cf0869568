"""The "skb" explainer: sk_buff geometry, step by step (Linux 6.4, x86-64).

Public surface: :data:`EXPLAINER` (registered as "skb"), :func:`parse`, :func:`run`,
:func:`dump` and :func:`api_frames` (the JSON frames of ``POST /api/v1/explainers/skb/run``).
"""

from __future__ import annotations

from app.sim.registry import Explainer, register
from app.sim.skbuff.ops import Op, SkbParams, dump, parse
from app.sim.skbuff.run import SIM_VERSION, api_frames, run
from app.sim.skbuff.scenarios import DEFAULT_PRESET, PRESETS

EXPLAINER = register(
    Explainer(
        name="skb",
        title="sk_buff geometry",
        summary=(
            "How Linux sizes, fills, clones and frees socket buffers: head, data, tail, end, "
            "frags and reference counts, one kernel call at a time."
        ),
        sim_version=SIM_VERSION,
        parse=parse,
        run=run,
        dump=dump,
        presets=PRESETS,
        default_preset=DEFAULT_PRESET,
    )
)

__all__ = ["EXPLAINER", "Op", "SkbParams", "api_frames", "dump", "parse", "run"]
