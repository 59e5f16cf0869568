"""Every preset's trace is byte-for-byte what it was when the digests were recorded, unless its
explainer's ``sim_version`` says it changed on purpose (see ``trace_digest.py``)."""

from __future__ import annotations

import json

import pytest

from app.explainers import builtin
from tests.contract.trace_digest import DIGESTS, canonical, digest

RECORDED: dict[str, dict[str, str]] = json.loads(DIGESTS.read_text(encoding="utf-8"))
CASES = [(plugin.sim, preset) for plugin in builtin() for preset in plugin.sim.presets]


@pytest.mark.parametrize(("sim", "preset"), CASES, ids=[f"{s.name}-{p.slug}" for s, p in CASES])
def test_preset_trace_unchanged(sim, preset) -> None:  # type: ignore[no-untyped-def]
    recorded = RECORDED.get(sim.name, {})
    if recorded.get("sim_version") != sim.sim_version:
        pytest.fail(
            f"{sim.name}: sim_version {sim.sim_version} has no recorded digests; "
            "run `python -m tests.contract.trace_digest --write` for a change meant to alter traces"
        )
    assert preset.slug in recorded, f"new preset {preset.slug}: record its digest"
    assert digest(sim.run(sim.parse(dict(preset.params)))) == recorded[preset.slug]


def test_digest_sees_a_change_in_narration_and_state() -> None:
    """The digest is not blind: a changed message parameter or state value changes it."""
    from app.sim.core import msg

    a = {"narration": msg("x {n}", n=1), "state": (1, 2.5)}
    b = {"narration": msg("x {n}", n=2), "state": (1, 2.5)}
    c = {"narration": msg("x {n}", n=1), "state": (1, 2.50001)}
    assert len({digest(a), digest(b), digest(c)}) == 3
    assert canonical(msg("x {n}", n=1)) == {"$msg": "x {n}", "params": {"n": 1}}
