"""The names other packages import from the sk_buff simulation (the path explainer replays its
skb with :class:`SkbMachine`; bench/kernel_skb.py checks :func:`kmalloc_size_roundup`).

The simulation itself lives in modules that follow the kernel's files: :mod:`.skb` (the
structs), :mod:`.alloc`, :mod:`.linear`, :mod:`.frags`, :mod:`.share`, :mod:`.proto`,
:mod:`.free` and :mod:`.machine`. New code imports from those.
"""

from __future__ import annotations

from app.sim.skbuff.alloc import kmalloc_size_roundup
from app.sim.skbuff.machine import SkbMachine
from app.sim.skbuff.skb import DATAREF_MASK, SHINFO, Step

__all__ = ["DATAREF_MASK", "SHINFO", "SkbMachine", "Step", "kmalloc_size_roundup"]
