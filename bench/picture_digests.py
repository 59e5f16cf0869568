"""sha256 of every step's picture of the packet-path and sk_buff explainers, in English and
Chinese: every preset of both, and long path walks (rx/tx over veth/loopback, 8 and 32 packets).
For checking that a change to how the pictures are drawn (caches, a cheaper layout) leaves the
SVG byte for byte as it was:

    .venv/bin/python bench/picture_digests.py --write /tmp/before.json   # before the change
    .venv/bin/python bench/picture_digests.py --check /tmp/before.json   # after it

``--only path`` / ``--only skb`` limits it to one explainer; ``--short`` skips the 32-packet
walks. Prints how many pictures it drew, how long that took, and (``--check``) every step whose
picture differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.explainers import builtin  # noqa: E402
from app.sim.core.i18n import reader_gettext  # noqa: E402
from app.web import i18n  # noqa: E402

LONG_WALKS = [
    {"path": p, "device": d, "packets": n}
    for n in (8, 32)
    for p in ("rx", "tx")
    for d in ("veth", "loopback")
]


def _cases(only: str | None, short: bool) -> list[tuple[str, str, dict[str, Any]]]:
    out: list[tuple[str, str, dict[str, Any]]] = []
    for plugin in builtin():
        if plugin.name not in ("path", "skb") or (only and plugin.name != only):
            continue
        for preset in plugin.sim.presets:
            out.append((plugin.name, f"preset:{preset.slug}", dict(preset.params)))
        if plugin.name == "path":
            for raw in LONG_WALKS:
                if short and raw["packets"] > 8:
                    continue
                out.append((plugin.name, f"walk:{json.dumps(raw, sort_keys=True)}", raw))
    return out


def digests(only: str | None, short: bool) -> dict[str, list[str]]:
    plugins = {p.name: p for p in builtin()}
    out: dict[str, list[str]] = {}
    for name, label, raw in _cases(only, short):
        plugin = plugins[name]
        trace = plugin.sim.run(plugin.sim.parse(raw))
        t0 = time.process_time()
        for lang in i18n.LANGUAGES:
            token, reader = i18n.use(lang), reader_gettext.set(i18n.gettext_for(lang))
            try:
                out[f"{name} {label} {lang}"] = [
                    hashlib.sha256(plugin.web.picture(trace, f).encode()).hexdigest()
                    for f in trace.frames
                ]
            finally:
                reader_gettext.reset(reader)
                i18n.reset(token)
        took = time.process_time() - t0
        print(f"  {name} {label}: {len(trace.frames)} steps, {took:.2f} s", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="save the digests to this JSON file")
    group.add_argument("--check", type=Path, help="compare with digests saved by --write")
    ap.add_argument("--only", choices=("path", "skb"))
    ap.add_argument("--short", action="store_true", help="skip the 32-packet walks")
    args = ap.parse_args()
    t0 = time.process_time()
    found = digests(args.only, args.short)
    cpu = time.process_time() - t0
    print(f"{sum(len(v) for v in found.values())} pictures in {len(found)} walks, {cpu:.1f} s CPU")
    if args.write:
        args.write.write_text(json.dumps(found, indent=0, sort_keys=True))
        return
    saved: dict[str, list[str]] = json.loads(args.check.read_text())
    bad = 0
    for key, got in found.items():
        want = saved.get(key)
        if want is None:
            print(f"not saved: {key}")
            continue
        diff = [i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b]
        if len(got) != len(want) or diff:
            bad += 1
            print(f"DIFFERS {key}: {len(got)} vs {len(want)} steps, steps {diff[:20]}")
    print("identical" if not bad else f"{bad} walks differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
