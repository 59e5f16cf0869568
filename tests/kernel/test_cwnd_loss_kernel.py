"""The cwnd model's F-RTO, timestamp undo and SACK compression against the real kernel.

Each test runs one Reno flow through bench/kernel_loss.py's namespaces (sl-*, deleted
afterwards even on failure): 20 Mbit/s tbf, 40 ms delay line, 1-BDP buffer. The running kernel
may be newer than 6.4; these three behaviours are the same there.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

pytestmark = pytest.mark.kernel


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "tc", "nstat"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    if not Path("/sys/kernel/tracing").exists():
        return "needs tracefs"
    return None


REASON = _skip_reason()
needs_kernel = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _first_ack_branch(frto: str) -> tuple[str, dict]:
    """One black-out run; which of the kernel's branches the first ACK after the timeout took:
    "frto" (tcp_process_loss step 2.b: cwnd 2, two new segments), "retransmit" (cwnd 2, no new
    data) or "undone" (tcp_try_undo_loss: the segments had reached the receiver just before the
    link went down and only their ACKs were lost, so the retransmission is DSACKed or the
    timestamp echo predates it, and the cwnd from before the timeout comes back)."""
    import kernel_loss as kl

    run = kl.one_flow(rcv_sysctl={}, snd_sysctl={"net.ipv4.tcp_frto": frto}, disrupt="down")
    step = kl.frto_step(run["probe"])
    assert step is not None, "no timeout in the probe trace"
    if step["cwnd_after_first_ack"] == 2:
        return ("frto" if step["new_segments_after_first_ack"] else "retransmit"), step
    assert run["sender"]["TcpExtTCPLossUndo"] >= 1, step
    assert step["cwnd_after_first_ack"] >= (step["cwnd_before_timeout"] or 3) > 2, step
    return "undone", step


@needs_kernel
def test_frto_sends_new_data_on_the_first_ack_after_a_real_timeout() -> None:
    """tcp_process_loss step 2.b: after an RTO that follows a real black-out, the first ACK
    that moves snd_una (cwnd 2) sends 2 new segments with tcp_frto = 2 when F-RTO is armed, else
    retransmits (no new data); with tcp_frto = 0 it never sends new data."""
    # F-RTO runs only when the timeout starts a new recovery (tcp_enter_loss: new_recovery) and
    # unsent data waits (tcp_process_loss: !tcp_write_queue_empty); the real flow sometimes
    # meets the black-out just after a tail drop put it in Recovery (about one run in three on
    # a quiet machine, most runs under heavy load), and then the kernel, like the model
    # (test_frto_is_off_for_a_first_timeout_during_fast_recovery), retransmits instead. Now and
    # then the timeout is undone on that ACK (see _first_ack_branch; a CI run met it). Every run
    # takes one of those branches with the numbers each implies; up to four runs look for 2.b.
    seen = []
    for _ in range(4):
        branch, step = _first_ack_branch("2")
        if branch != "undone":
            assert step["new_segments_after_first_ack"] in {0, 2}, step
        seen.append(branch)
        if branch == "frto":
            break
    assert "frto" in seen or "retransmit" in seen, seen
    # Without F-RTO the first ACK only retransmits (unless the timeout is undone: look again).
    without = []
    for _ in range(3):
        branch, step = _first_ack_branch("0")
        without.append(branch)
        if branch != "undone":
            break
    assert without[-1] == "retransmit", (without, step)


@needs_kernel
def test_delay_spike_timeout_is_undone() -> None:
    """tcp_try_undo_loss via tcp_packet_delayed: a 0.7 s freeze of the path (nothing lost)
    fires the RTO, and the late ACK's timestamp echo undoes it (TCPLossUndo), not F-RTO's
    step 3.b (TCPSpuriousRTOs stays 0), as in the model's test_spurious_timeout_is_undone."""
    import kernel_loss as kl

    r = kl.one_flow(rcv_sysctl={}, snd_sysctl={}, disrupt="freeze")
    s = r["sender"]
    assert s["TcpExtTCPTimeouts"] >= 1
    assert s["TcpExtTCPLossUndo"] >= 1
    assert s["TcpExtTCPSpuriousRTOs"] == 0


@needs_kernel
def test_receiver_compresses_sacks_unless_comp_sack_nr_is_0() -> None:
    """__tcp_ack_snd_check: with out-of-order data the receiver holds SACKs back
    (TCPAckCompressed > 0) with tcp_comp_sack_nr = 44 and never with 0."""
    import kernel_loss as kl

    on = kl.one_flow(rcv_sysctl={"net.ipv4.tcp_comp_sack_nr": "44"}, snd_sysctl={}, disrupt=None)
    off = kl.one_flow(rcv_sysctl={"net.ipv4.tcp_comp_sack_nr": "0"}, snd_sysctl={}, disrupt=None)
    assert on["receiver"]["TcpExtTCPAckCompressed"] > 0
    assert off["receiver"]["TcpExtTCPAckCompressed"] == 0
