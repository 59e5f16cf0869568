"""The "skb" explainer: sk_buff geometry, step by step (Linux 6.4, x86-64).

Public surface: :class:`SkbExplainer` (the contract), and the plain functions :func:`parse`,
:func:`run`, :func:`dump` and :func:`api_frames` it is built from.
"""

from __future__ import annotations

from app.sim.skbuff.explainer import SkbExplainer
from app.sim.skbuff.ops import Op, SkbParams
from app.sim.skbuff.params import dump, parse
from app.sim.skbuff.run import SIM_VERSION, api_frames, run

__all__ = ["SIM_VERSION", "Op", "SkbExplainer", "SkbParams", "api_frames", "dump", "parse", "run"]
