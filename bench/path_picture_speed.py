"""How long the packet-path explainer takes to draw one step of a long walk the first time
(the first open, PNG export or embed of that walk): the walk's layout, which draws every
step's sk_buff part to find the tallest, and then that step's picture.

    .venv/bin/python bench/path_picture_speed.py
    .venv/bin/python bench/path_picture_speed.py --step 1500 --lang zh-CN

For each walk (rx over veth with 8 and 32 packets, tx over veth with 32) it prints the
simulation's CPU time, then the CPU time of the first picture (layout and replay included,
every cache of the pictures emptied first) and of the next step's picture (layout cached);
then the sk_buff explainer's own pictures of every step of a long trace (they share its code).
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
from app.sim.skbuff.ops import MAX_OPS  # noqa: E402
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
        _skb_walk()
    finally:
        reader_gettext.reset(reader)
        i18n.reset(token)


def _skb_walk() -> None:
    """The sk_buff explainer's own pictures share its scene code: every step of its longest
    trace (MAX_OPS ops: a reserve, then pushes and pulls of 14 bytes)."""
    plugin = next(p for p in builtin() if p.name == "skb")
    ops: list[dict[str, object]] = [
        {"op": "alloc_skb", "skb": "a", "size": 2048},
        {"op": "skb_reserve", "skb": "a", "len": 128},
    ]
    while len(ops) < MAX_OPS:
        ops += [
            {"op": "skb_push", "skb": "a", "len": 14},
            {"op": "skb_pull", "skb": "a", "len": 14},
        ]
    trace = plugin.sim.run(plugin.sim.parse({"ops": ops[:MAX_OPS]}))
    _empty_caches()
    t0 = time.process_time()
    for f in trace.frames:
        plugin.web.picture(trace, f)
    took = time.process_time() - t0
    print(f"sk_buff explainer: every step of a {len(trace.frames)}-step trace, {took:.2f} s")


if __name__ == "__main__":
    main()
