"""The path explainer's netfilter hook order against the real kernel (bench/kernel_netfilter.py).

The model narrates, per IPv4 hook, the functions nf_hook_slow calls in priority order
(app/sim/path/walk.py HOOK_ENTRIES, from enum nf_ip_hook_priorities). The bench script pings
through three namespaces with nftables NAT chains in the middle one and probe chains around
every priority, and reports which kernel entries (defrag, conntrack, DNAT, SNAT, confirm) it
saw run at each hook and between which priorities. This test asserts the model's entries per
hook, in order and at their priorities, are exactly those the kernel showed.

Not observable here, so not asserted: the iptables tables (raw, mangle, filter) — nftables
registers none, only the priorities they would use — and defrag at LOCAL_OUT (a locally
generated packet is whole there; ip_fragment runs after POST_ROUTING).

Needs root, iproute2 and nft; skips otherwise. The script deletes its namespaces even on failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.sim.path.walk import HOOK_ENTRIES

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import kernel_netfilter as kn  # noqa: E402

pytestmark = pytest.mark.kernel

# The model's words for the entries the kernel check can see, and the priority each carries.
NAMES = {
    "defrag": "defrag",
    "conntrack (": "conntrack",
    "dnat": "DNAT",
    "snat": "SNAT",
    "confirm": "confirm",
}
PRIO = re.compile(r"(−?\d+|INT_MAX)\)")


def model_entries(hook: str) -> list[tuple[str, int]]:
    """(entry, priority) in the order the model's narration of ``hook`` names them."""
    out = []
    for part in re.split(r"\)[ ,.;]*(?:and,? )?", HOOK_ENTRIES[hook].id):
        low = part.lower()
        name = next((v for k, v in NAMES.items() if k in low), None)
        m = PRIO.search(part + ")")
        if name and m:
            raw = m.group(1)
            out.append((name, kn.INT_MAX if raw == "INT_MAX" else int(raw.replace("−", "-"))))
    return out


@pytest.fixture(scope="module")
def kernel() -> dict[str, object]:
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces and nftables")
    if shutil.which("ip") is None or shutil.which("nft") is None:
        pytest.skip("iproute2 (ip) or nftables (nft) is not installed")
    try:
        return kn.check()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"could not set up namespaces or nftables: {exc}")


def test_model_parser_sees_every_hook() -> None:
    assert [n for n, _ in model_entries("PRE_ROUTING")] == ["defrag", "conntrack", "DNAT"]
    assert [n for n, _ in model_entries("POST_ROUTING")] == ["SNAT", "confirm"]
    assert model_entries("FORWARD") == []


@pytest.mark.parametrize("scenario", list(kn.SCENARIOS))
def test_hook_order_matches_kernel(kernel: dict[str, object], scenario: str) -> None:
    result = kernel[scenario]
    assert isinstance(result, dict)
    hooks = result["hooks"]
    assert isinstance(hooks, dict)
    for hook, seen in hooks.items():
        model = model_entries(hook)
        if hook == "LOCAL_OUT":
            model = [e for e in model if e[0] != "defrag"]
        if hook == "PRE_ROUTING" and scenario != "local-in":
            # Only the local-in ping is big enough to arrive in fragments.
            model = [e for e in model if e[0] != "defrag"]
        assert [e for e, _, _ in seen] == [n for n, _ in model], (scenario, hook, seen)
        for (name, lo, hi), (_, prio) in zip(seen, model, strict=True):
            assert lo < prio <= hi, (scenario, hook, name, lo, prio, hi)
