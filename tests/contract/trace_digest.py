"""A digest of every preset's trace, so a refactor can prove it changed no behaviour.

The trace is walked into canonical JSON: dataclasses by their field names (not their module
path, so moving a class keeps the digest), messages as their catalog id and parameters (both
languages render from those), tuples and lists alike, floats by ``repr``. Enums by value.

``python -m tests.contract.trace_digest --write`` records the current digests into
``tests/contract/trace_digests.json``; ``tests/contract/test_trace_digests.py`` recomputes them.
Record again only for a change that is *meant* to change a trace (and bump that explainer's
``sim_version``).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import sys
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.explainers import builtin
from app.sim.core import Message

DIGESTS = Path(__file__).with_name("trace_digests.json")


def canonical(value: Any) -> Any:
    if isinstance(value, Message):
        return {
            "$msg": value.id,
            "params": {k: canonical(v) for k, v in sorted(value.params.items())},
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return canonical(value.value)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple, array)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, float):
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if hasattr(value, "__slots__") or hasattr(value, "__dict__"):
        slots = getattr(type(value), "__slots__", None)
        names = list(slots) if slots else sorted(vars(value))
        return {"$obj": type(value).__name__, **{n: canonical(getattr(value, n)) for n in names}}
    return repr(value)


def digest(trace: Any) -> str:
    text = json.dumps(canonical(trace), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def compute() -> dict[str, dict[str, str]]:
    """{explainer: {"sim_version": ..., preset slug: digest}} for every built-in explainer."""
    out: dict[str, dict[str, str]] = {}
    for plugin in builtin():
        sim = plugin.sim
        rows: dict[str, str] = {"sim_version": sim.sim_version}
        for preset in sim.presets:
            rows[preset.slug] = digest(sim.run(sim.parse(dict(preset.params))))
        out[sim.name] = rows
    return out


if __name__ == "__main__":
    found = compute()
    if "--write" in sys.argv:
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(found, indent=1, sort_keys=True))
