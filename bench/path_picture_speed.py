"""How long the packet-path explainer takes to draw one step of a long walk the first time
(the first open, PNG export or embed of that walk): the walk's layout, which draws every
step's sk_buff part to find the tallest, and then that step's picture.

    .venv/bin/python bench/path_picture_speed.py
    .venv/bin/python bench/path_picture_speed.py --step 1500 --lang zh-CN

For each walk (rx over veth with 8 and 32 packets, tx over veth with 32) it prints the
simulation's CPU time, then the CPU time of the first picture (layout and replay included,
every cache of the pictures emptied first) and of the next step's picture (layout cached).
A benchmark that prints numbers, not a test: they depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.explainers import builtin  # noqa: E402
from app.sim.core.i18n import reader_gettext  # noqa: E402
from app.web import i18n, svgtext  # noqa: E402
from app.web.explainers.path import replay as path_replay  # noqa: E402
from app.web.explainers.path.picture import LAYOUTS  # noqa: E402
from app.web.explainers.skb import scene as skb_scene  # noqa: E402

WALKS = (
    {"path": "rx", "device": "veth", "packets": 8},
    {"path": "rx", "device": "veth", "packets": 32},
    {"path": "tx", "device": "veth", "packets": 32},
)


def _empty_caches() -> None:
    LAYOUTS.clear()
    path_replay.CACHE.clear()
    # (getattr: the script also measures trees from before these caches)
    for memo in getattr(skb_scene, "PLACEMENTS", ()):
        memo.clear()
    clear = getattr(svgtext.advance, "cache_clear", None)
    if clear is not None:
        clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--step", type=int, default=1500, help="the step drawn (modulo the walk)")
    ap.add_argument("--lang", default="en", choices=tuple(i18n.LANGUAGES))
    args = ap.parse_args()
    plugin = next(p for p in builtin() if p.name == "path")
    token, reader = i18n.use(args.lang), reader_gettext.set(i18n.gettext_for(args.lang))
    try:
        print(f"{'walk':<34} {'steps':>6} {'sim s':>7} {'first picture s':>16} {'next s':>8}")
        for raw in WALKS:
            t0 = time.process_time()
            trace = plugin.sim.run(plugin.sim.parse(raw))
            sim = time.process_time() - t0
            _empty_caches()
            step = args.step % len(trace.frames)
            t0 = time.process_time()
            plugin.web.picture(trace, trace.frames[step])
            first = time.process_time() - t0
            t0 = time.process_time()
            plugin.web.picture(trace, trace.frames[(step + 1) % len(trace.frames)])
            after = time.process_time() - t0
            name = f"{raw['path']} {raw['device']} {raw['packets']} packets"
            print(f"{name:<34} {len(trace.frames):>6} {sim:>7.2f} {first:>16.2f} {after:>8.3f}")
    finally:
        reader_gettext.reset(reader)
        i18n.reset(token)


if __name__ == "__main__":
    main()
