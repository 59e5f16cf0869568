"""Who owns a TCP skb crossing veth, on the real kernel (bench/kernel_veth_owner.py), against
the path explainer's veth walk.

The walk (app/sim/path) says the sending socket owns the skb from __tcp_transmit_skb
(``skb_set_owner_w``, destructor ``tcp_wfree``) through veth_xmit → __dev_forward_skb →
skb_scrub_packet (which does not orphan) and __netif_receive_skb_core in the peer namespace,
until ip_rcv_core's skb_orphan; the receiving socket owns it from tcp_queue_rcv
(``skb_set_owner_r``, ``sock_rfree``) until the read. The bench script reads ``skb->sk`` and
``skb->destructor`` with a BPF program on the tracepoints those functions fire; this test
compares what it saw with the walk's owner at the frame of each tracepoint's function.

Needs root, iproute2 and BPF (bpf(2) and perf_event_open(2) on tracepoints); skips otherwise.
About 3 s. The script deletes its namespaces and closes its BPF objects even on failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.explainers import builtin

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import kernel_veth_owner as kv  # noqa: E402

pytestmark = pytest.mark.kernel

# tracepoint → the function of the veth walk whose frame it fires in (6.4: trace_net_dev_start_xmit
# in xmit_one, trace_netif_rx in netif_rx_internal, trace_netif_receive_skb in
# __netif_receive_skb_core, trace_skb_copy_datagram_iovec under tcp_recvmsg)
FRAME_OF = {
    "net/net_dev_start_xmit": "xmit_one",
    "net/netif_rx": "netif_rx_internal",
    "net/netif_receive_skb": "__netif_receive_skb_core",
    "skb/skb_copy_datagram_iovec": "tcp_recvmsg",
}


@pytest.fixture(scope="module")
def kernel() -> dict[str, object]:
    if os.geteuid() != 0:
        pytest.skip("needs root for BPF and network namespaces")
    if shutil.which("ip") is None:
        pytest.skip("iproute2 (ip) is not installed")
    try:
        return kv.observe()
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"BPF on tracepoints or namespaces unavailable: {exc}")


def model_owners() -> dict[str, tuple[str | None, str | None]]:
    """(owner, destructor) of the veth walk's skb at the first frame of each function."""
    sim = next(p for p in builtin() if p.name == "path").sim
    trace = sim.run(sim.parse(dict(sim.preset("veth").params)))
    out: dict[str, tuple[str | None, str | None]] = {}
    for frame in trace.frames:
        skb = frame.state["skb"] or {}
        out.setdefault(frame.state["function"], (skb.get("sk"), skb.get("destructor")))
    return out


def test_the_offsets_check_out_and_skbs_were_followed(kernel: dict[str, object]) -> None:
    assert kernel["layout_ok"], kernel
    assert int(str(kernel["chains"])) >= 1
    assert kernel["received"] == str(kv.WRITES * kv.PAYLOAD)


def test_owner_at_each_tracepoint_matches_the_veth_walk(kernel: dict[str, object]) -> None:
    seen = kernel["seen"]
    assert isinstance(seen, dict) and set(seen) == set(FRAME_OF)
    model = model_owners()
    for point, function in FRAME_OF.items():
        want = model[function]
        assert [tuple(v) for v in seen[point]] == [want], (point, function, seen[point], want)
    # the walk orphans at ip_rcv_core, between the last two tracepoints
    assert model["ip_rcv_core"] == (None, None)
