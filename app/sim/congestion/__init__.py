"""Congestion control explainer: a packet-level dumbbell with Linux 6.4's Reno, CUBIC and BBR v1.

:class:`CwndExplainer` is the contract; ``run.py`` documents the output shape and ``engine.py``
the model, whose parts follow Linux's files: ``link.py`` (the bottleneck), ``receiver.py``,
``sender.py`` (tcp_output.c), ``recovery.py`` (tcp_recovery.c, tcp_timer.c) and ``ack.py``
(tcp_ack).
"""

from __future__ import annotations

from app.sim.native import use_native

use_native(__name__, __path__)  # the compiled hot modules, when built and current

from app.sim.congestion.explainer import CwndExplainer  # noqa: E402
from app.sim.congestion.params import CwndParams, dump, parse  # noqa: E402
from app.sim.congestion.run import SIM_VERSION, run  # noqa: E402
from app.sim.congestion.scenarios import PRESETS  # noqa: E402

__all__ = ["SIM_VERSION", "CwndExplainer", "CwndParams", "PRESETS", "dump", "parse", "run"]
