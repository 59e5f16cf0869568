"""The TCP explainer against the real kernel.

Each case runs the same socket calls on loopback inside a private network namespace, records
``sock:inet_sock_set_state`` in a private tracefs instance (and ``ss -tan``, TcpExt counters),
and compares every full socket's state chain with the simulator's transitions of its ``sock``
and ``listener`` objects. The tracepoint never shows request socks or timewait socks (they are
set without it), so neither does the comparison; ``ss`` shows the timewait sock instead.

The running kernel may be newer than 6.4: where a sysctl added later changes the behaviour
(``tcp_syn_linear_timeouts``, 6.5+), the namespace sets it to the 6.4 behaviour.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tcpkern import KernelRun, kernel_lab, skip_reason  # noqa: E402

from app.sim.tcp import TcpExplainer  # noqa: E402

pytestmark = pytest.mark.kernel

EX = TcpExplainer()
BASE = 30000 + (os.getpid() % 1000) * 30
ENDPOINTS = ("server", "client", "other", "bulk")
PORTS: dict[str, int] = {}
_RUNS = [0]


def _next_ports() -> dict[str, int]:
    """Fresh ports for every kernel run: a deleted namespace's sockets may still fire the
    (global) tracepoint for a while, and must not be mistaken for this run's."""
    _RUNS[0] += 1
    PORTS.update({ep: BASE + 5 * _RUNS[0] + i for i, ep in enumerate(ENDPOINTS)})
    return dict(PORTS)


SIX_FOUR = {"tcp_syn_linear_timeouts": 0}  # 6.4 had no linear SYN backoff
# The kernel's timer wheel rounds long timeouts up (64 ms granularity for 0.5-4 s at HZ=1000)
# and the runner's threads start a little late: real times are later, never earlier.
SLACK_MS = 600
# Real timers fire late, never early, but the measurement rounds to whole milliseconds and the
# kernel arms them in jiffies: allow this much the other way.
EARLY_MS = 5


def c(t: float, ep: str, call: str, **kw: Any) -> dict[str, Any]:
    return {"t_ms": t, "endpoint": ep, "call": call, **kw}


OPEN = [c(0, "server", "listen"), c(0, "server", "accept"), c(0, "client", "connect")]


def _skip() -> None:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)


def model_chains(raw: dict[str, Any]) -> tuple[dict[str, list[list[tuple[str, str]]]], Any]:
    tr = EX.run(EX.parse(raw))
    by_obj: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for f in tr.frames:
        for t in f.state["transitions"]:
            if t["object"] in ("sock", "listener"):
                key = (t["endpoint"], t["object_id"])
                by_obj.setdefault(key, []).append((t["from_state"][4:], t["to_state"][4:]))
    out: dict[str, list[list[tuple[str, str]]]] = {}
    for (ep, _), ch in by_obj.items():
        # a reused socket (connect after a failed connect) restarts from CLOSE: split it
        cur: list[tuple[str, str]] = []
        for step in ch:
            if step[0] == "CLOSE" and cur:
                out.setdefault(ep, []).append(cur)
                cur = []
            cur.append(step)
        out.setdefault(ep, []).append(cur)
    return out, tr


def norm(results: list[tuple[str, str, str, int]] | list[tuple[str, str, str]]) -> list[str]:
    """Call results with byte counts abstracted (loopback's MSS differs from the model's)."""
    out = []
    for r in results:
        ep, call, res = r[0], r[1], r[2]
        if ep == "other":
            continue
        if res.isdigit() and res != "0":
            res = "data"
        out.append(f"{ep}.{call}={res}")
    return sorted(out)


def model_results(tr: Any) -> list[tuple[str, str, str]]:
    out = []
    for f in tr.frames:
        cs = f.state["call"]
        if cs and cs["result"] not in ("blocked", "EINPROGRESS"):
            out.append((cs["endpoint"], cs["call"], cs["result"]))
    return out


def kernel(
    script: list[dict[str, Any]], until_s: float, tc: list[str] | None = None, **sysctls: int
) -> KernelRun:
    cm = kernel_lab({**SIX_FOUR, **sysctls}, tc)
    try:
        lab = cm.__enter__()
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        # no netns/tracefs permission (a container): skip, the cleanup already ran
        pytest.skip(f"cannot set up a network namespace and tracefs instance: {e}")
    try:
        return lab.run(script, _next_ports(), until_s)
    finally:
        cm.__exit__(None, None, None)


def compare(
    raw: dict[str, Any],
    kscript: list[dict[str, Any]],
    until_s: float,
    tc: list[str] | None = None,
    **sysctls: int,
) -> tuple[Any, KernelRun]:
    want, tr = model_chains(raw)
    kr = kernel(kscript, until_s, tc, **sysctls)
    got = {ep: ch for ep, ch in kr.chains.items() if ep != "other"}
    # children accepted for "other" are not in the model (it is a phantom there)
    if "other" in {c["endpoint"] for c in kscript}:
        got["server"] = [
            ch
            for ch, key in zip(kr.chains.get("server", []), kr.keys.get("server", []), strict=True)
            if key is None or key[1] != PORTS["other"]
        ]
    assert sorted(got.get("client", [])) == sorted(want.get("client", [])), (got, want)
    assert sorted(got.get("server", [])) == sorted(want.get("server", [])), (got, want)
    return tr, kr


def preset_script(slug: str) -> list[dict[str, Any]]:
    p = EX.preset(slug)
    assert p is not None
    return list(p.params["script"])


@pytest.mark.parametrize(
    "slug",
    [
        "handshake",
        "client-close",
        "server-close",
        "half-close",
        "abort",
        "close-unread",
        "closed-port",
    ],
)
def test_preset_matches_kernel(slug: str) -> None:
    """The preset's socket calls give the same inet_sock_set_state chains, per socket, and the
    same errno results on the real kernel as in the simulator."""
    _skip()
    p = EX.preset(slug)
    assert p is not None
    # loopback's MSS (65483) sends each write in one segment, as a large model MSS does
    raw = {**dict(p.params), "until_ms": 600, "mss": 65483}
    tr, kr = compare(raw, preset_script(slug), until_s=0.6)
    assert norm(kr.results) == norm(model_results(tr))


def test_time_wait_is_a_minisock_seen_by_ss() -> None:
    """After the active close, the tracepoint shows FIN_WAIT2 -> CLOSE (tcp_done), yet ss still
    lists the 4-tuple in TIME-WAIT: the timewait sock (tcp_time_wait) of the model."""
    _skip()
    p = EX.preset("client-close")
    assert p is not None
    raw = {**dict(p.params), "until_ms": 600}
    tr, kr = compare(raw, preset_script("client-close"), until_s=0.6)
    last = tr.frames[-1].state["endpoints"]["client"]
    assert last["rfc"] == "TIME_WAIT"
    assert [o["tw_substate"] for o in last["linux"]] == ["TCP_TIME_WAIT"]
    tw = [ln for ln in kr.ss.splitlines() if ln.startswith("TIME-WAIT")]
    assert any(f"127.0.0.1:{PORTS['client']}" in ln for ln in tw), kr.ss


def test_accept_queue_full_and_syn_cookies() -> None:
    """listen(0) with one unaccepted connection: the next SYNs are dropped (ListenOverflows)
    until accept() makes room; the retransmitted SYN at 3.1 s then connects, answered with a
    SYN cookie since the SYN queue (0 allowed) counts as full (tcp_conn_request)."""
    _skip()
    raw = {
        "script": [
            c(0, "server", "listen", backlog=0, queued=1),
            c(100, "client", "connect"),
            c(2500, "server", "accept"),
            c(2500, "server", "accept"),
        ],
        "until_ms": 3500,
    }
    ks = [
        c(0, "server", "listen", backlog=0),
        c(20, "other", "connect"),
        c(100, "client", "connect"),
        c(2500, "server", "accept"),
        c(2500, "server", "accept"),
    ]
    tr, kr = compare(raw, ks, until_s=3.5)
    model_t = next(
        f.state["t_ms"]
        for f in tr.frames
        if (cs := f.state["call"]) and cs["call"] == "connect" and cs["result"] == "0"
    )
    kern_t = next(r[3] for r in kr.results if r[0] == "client" and r[1] == "connect")
    assert -EARLY_MS <= kern_t - model_t < SLACK_MS, (model_t, kern_t)
    drops = sum(
        1
        for f in tr.frames
        for n in (f.narration, *f.notes)
        if n.id.startswith("The accept queue is full (")
    )
    assert kr.counter("ListenOverflows") == drops == 2
    cookies = sum(
        1 for f in tr.frames if (s := f.state["segment"]) and s["kind"] == "synack_cookie"
    )
    assert cookies == 1
    if os.uname().release.startswith("6.4."):
        assert kr.counter("SyncookiesSent") == cookies
    # Newer kernels test inet_csk_reqsk_queue_is_full with ">" instead of 6.4's ">=", so with
    # backlog 0 they keep a request sock and send no cookie (SyncookiesSent stays 0).


def test_syn_retries_give_up() -> None:
    """With tcp_syn_retries 1 and SYNs dropped by a full accept queue, connect() fails with
    ETIMEDOUT after 1 + 2 s, as tcp_write_timeout does in 6.4 (exponential SYN backoff; the
    preset's 6 retries take 127 s, too long for a test)."""
    _skip()
    raw = {
        "script": [c(0, "server", "listen", backlog=0, queued=1), c(100, "client", "connect")],
        "sysctl": {"tcp_syn_retries": 1},
        "until_ms": 4000,
    }
    ks = [
        c(0, "server", "listen", backlog=0),
        c(20, "other", "connect"),
        c(100, "client", "connect"),
    ]
    tr, kr = compare(raw, ks, until_s=4.0, tcp_syn_retries=1)
    model = [
        (cs["result"], f.state["t_ms"])
        for f in tr.frames
        if (cs := f.state["call"]) and cs["call"] == "connect" and cs["result"] != "blocked"
    ]
    kern = [(r[2], r[3]) for r in kr.results if r[0] == "client"]
    assert model[0][0] == kern[0][0] == "ETIMEDOUT"
    assert -EARLY_MS <= kern[0][1] - model[0][1] < SLACK_MS, (model, kern)


# A slow token bucket on lo (10 kB/s) with a bulk transfer on other ports in front: segments
# sent while it drains wait in the qdisc, so the two endpoints' segments cross in flight, as
# they do on a long path. (sch_netem is not available everywhere; tbf usually is.)
SLOW_LO = ["tbf", "rate", "80kbit", "burst", "2000", "latency", "20s"]
BULK = [
    c(0, "bulk", "listen"),
    c(50, "other", "connect", peer="bulk"),
    c(60, "other", "send", bytes=14000),  # one initial window: nothing follows it
]


def _tbf_or_skip() -> None:
    ns = f"stepscope-tcp-probe-{os.getpid()}"
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, timeout=10)
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", *SLOW_LO],
            capture_output=True,
            timeout=10,
        )
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
    if r.returncode != 0:
        pytest.skip("tc qdisc tbf not available")


def test_simultaneous_close_matches_kernel() -> None:
    """Both endpoints close while neither FIN has arrived: FIN_WAIT1 -> CLOSING (tcp_fin) ->
    CLOSE via tcp_time_wait on both sides, on the kernel as in the simulator."""
    _skip()
    _tbf_or_skip()
    raw = {"script": [*OPEN, c(300, "client", "close"), c(300, "server", "close")]}
    ks = [*BULK, *OPEN, c(300, "client", "close"), c(300, "server", "close")]
    tr, kr = compare(raw, ks, until_s=4.0, tc=SLOW_LO)
    assert ["FIN_WAIT1", "CLOSING"] == [s for s in (t[1] for t in kr.chains["client"][0])][2:4]


def test_simultaneous_open_matches_kernel() -> None:
    """Crossed SYNs: both sockets go SYN_SENT -> SYN_RECV -> ESTABLISHED (no listener)."""
    _skip()
    _tbf_or_skip()
    raw = {"script": [c(300, "client", "connect"), c(300, "server", "connect")]}
    ks = [*BULK, c(300, "client", "connect"), c(300, "server", "connect")]
    tr, kr = compare(raw, ks, until_s=4.0, tc=SLOW_LO)
    assert kr.chains["server"][0][1] == ("SYN_SENT", "SYN_RECV")


def test_orphaned_fin_wait2_is_a_timewait_sock() -> None:
    """close() then the peer's ACK: the full socket closes (tracepoint FIN_WAIT2 -> CLOSE) and
    ss lists FIN-WAIT-2 for the tuple: the timewait sock with tw_substate TCP_FIN_WAIT2."""
    _skip()
    raw = {"script": [*OPEN, c(100, "client", "close")], "until_ms": 600}
    tr, kr = compare(raw, list(raw["script"]), until_s=0.6)
    last = tr.frames[-1].state["endpoints"]["client"]
    assert last["rfc"] == "FIN_WAIT_2"
    assert [(o["object"], o["tw_substate"]) for o in last["linux"]] == [
        ("timewait_sock", "TCP_FIN_WAIT2")
    ]
    assert kr.chains["client"][0][-1] == ("FIN_WAIT2", "CLOSE")
    fw2 = [ln for ln in kr.ss.splitlines() if ln.startswith("FIN-WAIT-2")]
    assert any(f"127.0.0.1:{PORTS['client']}" in ln for ln in fw2), kr.ss


def test_zero_window_arms_the_persist_timer() -> None:
    """A receiver that does not read closes its window; the sender, with data left and nothing
    in flight, runs the persist timer (ss: timer:(persist,...)), as the model's probe0 timer."""
    _skip()
    raw = {
        "script": [*OPEN, c(50, "client", "send", bytes=200_000)],
        "rcvbuf": 4000,
        "until_ms": 1500,
    }
    ks = [
        c(0, "server", "listen", rcvbuf=4096),
        c(0, "server", "accept"),
        c(0, "client", "connect"),
        c(50, "client", "send", bytes=200_000),
    ]
    tr, kr = compare(raw, ks, until_s=1.5)
    client = tr.frames[-1].state["endpoints"]["client"]
    timers = {t["name"] for o in client["linux"] for t in o["timers"]}
    assert "probe0" in timers and client["snd_wnd"] == 0
    lines = kr.ssi.splitlines()
    local = f"127.0.0.1:{PORTS['client']}"
    mine = [i for i, ln in enumerate(lines) if ln.split()[3:4] == [local]]
    blob = " ".join(lines[i] + " " + (lines[i + 1] if i + 1 < len(lines) else "") for i in mine)
    assert mine and "timer:(persist," in blob, kr.ssi


def test_keepalive_timer_is_armed_for_the_idle_time() -> None:
    """SO_KEEPALIVE on a connected socket arms the keepalive timer for tcp_keepalive_time
    (2 h): ss shows timer:(keepalive,119min,0), the model a keepalive deadline 7200 s out."""
    _skip()
    script = [*OPEN[:2], c(0, "client", "connect", keepalive=True)]
    tr, kr = compare({"script": script, "until_ms": 500}, script, until_s=0.5)
    client = tr.frames[-1].state["endpoints"]["client"]
    ka = [
        t["deadline_ms"] for o in client["linux"] for t in o["timers"] if t["name"] == "keepalive"
    ]
    assert ka and 7_199_000 < ka[0] < 7_201_000
    local = f"127.0.0.1:{PORTS['client']}"
    lines = kr.ssi.splitlines()
    mine = [i for i, ln in enumerate(lines) if ln.split()[3:4] == [local]]
    blob = " ".join(lines[i] + " " + (lines[i + 1] if i + 1 < len(lines) else "") for i in mine)
    assert "timer:(keepalive,119min,0)" in blob or "timer:(keepalive,120min,0)" in blob, blob


def test_new_syn_reopens_a_time_wait_tuple() -> None:
    """The server closed first and holds the 4-tuple in TIME_WAIT; a new SYN from the same
    client port is accepted through the listener (TCP_TW_SYN) and a new child connects."""
    _skip()
    script = [
        *OPEN,
        c(100, "server", "close"),
        c(100, "client", "recv"),
        c(150, "client", "close"),
        c(500, "client", "connect"),
        c(500, "server", "accept"),
    ]
    raw = {"script": script, "until_ms": 800, "mss": 65483}
    tr, kr = compare(raw, script, until_s=0.8)
    assert norm(kr.results) == norm(model_results(tr))
    assert any(
        t["function"] == "tcp_timewait_state_process" and t["event"] == "SYN"
        for f in tr.frames
        for t in f.state["transitions"]
    )


def test_syncookies_always() -> None:
    """tcp_syncookies = 2 sends a cookie for every SYN: no request sock, and the final ACK
    builds the child through cookie_v4_check; same socket chains, SyncookiesSent/Recv 1."""
    _skip()
    script = [*OPEN, c(50, "client", "send", bytes=100), c(50, "server", "recv")]
    raw = {"script": script, "until_ms": 400, "sysctl": {"tcp_syncookies": 2}}
    tr, kr = compare(raw, script, until_s=0.4, tcp_syncookies=2)
    cookies = sum(
        1 for f in tr.frames if (s := f.state["segment"]) and s["kind"] == "synack_cookie"
    )
    assert cookies == kr.counter("SyncookiesSent") == kr.counter("SyncookiesRecv") == 1
    assert norm(kr.results) == norm(model_results(tr))
