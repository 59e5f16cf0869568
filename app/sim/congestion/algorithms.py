"""The one list of congestion-control algorithms: name → ops table (``tcp_ca_find``).

``params.CC_NAMES`` (what a flow's ``cc`` may be) and :func:`make_ca` both come from
:data:`ALGORITHMS`; adding an algorithm is one entry here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType

from app.sim.congestion.bbr import Bbr
from app.sim.congestion.cubic import Cubic
from app.sim.congestion.reno import CongestionOps, Reno

ALGORITHMS: Mapping[str, type[CongestionOps]] = MappingProxyType(
    {ops.name: ops for ops in (Reno, Cubic, Bbr)}
)


def make_ca(name: str, rng: random.Random) -> CongestionOps:
    """A fresh instance of algorithm ``name`` for one flow; ``rng`` is the run's generator."""
    ops = ALGORITHMS.get(name)
    if ops is None:
        raise ValueError(f"unknown congestion control {name!r}")
    return ops.create(rng)
