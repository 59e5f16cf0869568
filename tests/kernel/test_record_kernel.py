"""``stepscope record demo …`` on the real kernel: a recording through a namespace
bottleneck, a TCP preset's socket calls, a few segments' paths, and Ctrl-C; after each run no
instance, namespace or tracefs mount of that run remains.

Runs ``python -m app.record`` as a child (as a user would run ``stepscope``) and reads its
JSON. Needs root, tracefs and network namespaces; skips otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.record.output import validate
from app.record.tracefs import RecordError, Tracefs

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]


def _skip() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, tc, tracefs)")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    if "tracefs" not in Path("/proc/filesystems").read_text():
        pytest.skip("the kernel has no tracefs")
    probe = f"stepscope-probe-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def _our_mounts() -> int:
    return Path("/proc/mounts").read_text().count("stepscope-tracefs-")


def _leftovers(pid: int) -> list[str]:
    """What the run with this pid left: its namespaces and its tracefs instance."""
    tag = f"stepscope-{pid}"
    out = [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout.split() if ns.startswith(tag + "-")]
    try:
        tfs = Tracefs.open()
    except RecordError:
        return out
    try:
        if (tfs.root / "instances" / tag).exists():
            out.append(f"instance {tag}")
    finally:
        tfs.close()
    return out


def _events_seen(inst: Path) -> int:
    """Events an instance has taken so far (in its buffer or already read from trace_pipe)."""
    total = 0
    for stats in inst.glob("per_cpu/cpu*/stats"):
        try:
            text = stats.read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in ("entries", "read events"):
                total += int(value.split()[0])
    return total


def _run(args: list[str], out: Path, timeout: float) -> tuple[dict[str, Any], int]:
    mounts = _our_mounts()
    cut = args.index("--") if "--" in args else len(args)  # --out before a command's words
    argv = [*args[:cut], "--out", str(out), *args[cut:]]
    p = subprocess.Popen([sys.executable, "-m", "app.record", "record", *argv], cwd=ROOT,
                         stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert _leftovers(p.pid) == [] and _our_mounts() == mounts
    doc = json.loads(out.read_text())
    assert validate(doc) == []
    return doc, p.pid


def test_demo_cwnd_grows_and_backs_off(tmp_path: Path) -> None:
    """tcp:tcp_probe through a 20 Mbit/s, 40 ms, 1 BDP bottleneck for 4 s: slow start takes
    cwnd well past its initial 10, the first losses bring it down, and the flow's facts and
    the link are in the file."""
    _skip()
    doc, _ = _run(["demo", "cwnd", "--cc", "cubic", "--rate-mbit", "20", "--rtt-ms", "40",
                   "--buffer-bdp", "1", "--seconds", "4"], tmp_path / "cwnd.json", 60)
    assert doc["kind"] == "cwnd"
    assert doc["link"]["rate_mbit"] == 20 and doc["link"]["rtt_ms"] == 40
    assert doc["link"]["buffer_bytes"] == 100_000  # 20 Mbit/s x 40 ms
    (flow,) = doc["flows"]
    assert flow["cc"] == "cubic" and flow["mss"] and flow["pacing_rate_bps"]
    evs = doc["events"]
    assert evs and {e["event"] for e in evs} == {"tcp:tcp_probe"}
    assert {e["fields"]["src"] for e in evs} == {flow["src"]}
    cwnd = [int(e["fields"]["snd_cwnd"]) for e in evs]
    assert cwnd[0] <= 10 < 3 * 10 < max(cwnd)
    peak = cwnd.index(max(cwnd))
    assert min(cwnd[peak:]) < max(cwnd), "no reduction after the peak"
    ssthresh = [int(e["fields"]["ssthresh"]) for e in evs]
    assert min(ssthresh) < 2**31 - 1  # a loss set ssthresh
    assert "net.ipv4.tcp_congestion_control" in doc["sysctls"]


def test_demo_tcp_handshake_states(tmp_path: Path) -> None:
    """The handshake preset's calls on 127.0.0.1: the listener, the client's SYN_SENT ->
    ESTABLISHED and the server child's SYN_RECV -> ESTABLISHED, per port."""
    _skip()
    doc, _ = _run(["demo", "tcp", "--preset", "handshake"], tmp_path / "tcp.json", 60)
    ports = doc["demo"]["ports"]
    server, client = str(ports["server"]), str(ports["client"])
    chains: dict[str, list[str]] = {}
    for e in doc["events"]:
        f = e["fields"]
        assert e["event"] == "sock:inet_sock_set_state"
        key = "listener" if f["dport"] == "0" else ("client" if f["sport"] == client else
                                                     "child" if f["sport"] == server else "?")
        chains.setdefault(key, []).append(f["oldstate"][4:] + ">" + f["newstate"][4:])
    assert chains["listener"][0] == "CLOSE>LISTEN"
    assert chains["client"][:2] == ["CLOSE>SYN_SENT", "SYN_SENT>ESTABLISHED"]
    assert chains["child"][-1] == "SYN_RECV>ESTABLISHED"
    calls = {(c[0], c[1]): c[2] for c in doc["demo"]["calls"]}
    assert calls[("client", "connect")] == "0" and calls[("server", "recv")] == "3000"


def test_demo_path_stacks(tmp_path: Path) -> None:
    """Segments across a veth pair: queued on one end, received on the other, each event with
    its kernel stack."""
    _skip()
    doc, _ = _run(["demo", "path"], tmp_path / "path.json", 60)
    evs = doc["events"]
    devs = doc["filter"]["dev"].split(",")
    names = {e["event"] for e in evs}
    assert {"net:net_dev_queue", "net:netif_receive_skb"} <= names
    assert all(e["stack"] for e in evs if e["event"].startswith("net:"))
    assert {e["fields"]["dev"] for e in evs if e["event"].startswith("net:")} <= set(devs)
    rx = [e["stack"] for e in evs if e["event"] == "net:netif_receive_skb"]
    tx = [e["stack"] for e in evs if e["event"] == "net:net_dev_queue"]
    assert any("__dev_queue_xmit" in s and "tcp_write_xmit" in s for s in tx)
    assert any("__netif_receive_skb" in " ".join(s) for s in rx)


def test_sigint_while_recording_cleans_up(tmp_path: Path) -> None:
    """Ctrl-C during a demo recording: the file is written with what was recorded, and the
    namespaces, the helpers and the tracefs instance are gone."""
    _skip()
    out = tmp_path / "int.json"
    mounts = _our_mounts()
    p = subprocess.Popen([sys.executable, "-m", "app.record", "record", "demo", "cwnd",
                          "--seconds", "30", "--out", str(out)], cwd=ROOT,
                         stderr=subprocess.PIPE, text=True)
    tfs = Tracefs.open()
    try:
        deadline = time.monotonic() + 30
        while _events_seen(tfs.root / "instances" / f"stepscope-{p.pid}") < 100:
            assert p.poll() is None and time.monotonic() < deadline, "not recording"
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        tfs.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert _leftovers(p.pid) == [] and _our_mounts() == mounts
    doc = json.loads(out.read_text())
    assert validate(doc) == [] and doc["events"]  # (the receiver's probes are left out)
    assert doc["duration_ms"] < 10_000
    helpers = subprocess.run(["pgrep", "-f", f"app.record.(flow|relay).*{doc['filter']['port']}"],
                             capture_output=True, text=True).stdout.split()
    assert helpers == []


def test_instance_removed_when_its_mount_went_away() -> None:
    """Another program unmounts the tracefs the recorder was using: the instance (which lives
    on in the kernel) is still removed, through a private mount."""
    _skip()
    mounts = _our_mounts()
    first = Tracefs.open(())  # a private mount, as when nothing had tracefs mounted
    inst = first.instance(f"stepscope-{os.getpid()}-gone")
    inst.create()
    assert first.mounted is not None
    subprocess.run(["umount", str(first.mounted)], check=True)
    first.release(inst)
    first.close()
    check = Tracefs.open(())
    try:
        assert not (check.root / "instances" / inst.name).exists()
    finally:
        check.close()
    assert _our_mounts() == mounts


FLOWS = """
import socket, sys, threading
def flow(port, size, n):
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port)); srv.listen(1)
    got = []
    def sink():
        c, _ = srv.accept()
        while (d := c.recv(65536)):
            got.append(len(d))
        c.close()
    t = threading.Thread(target=sink); t.start()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(n):
        s.sendall(b"x" * size); __import__("time").sleep(0.01)
    s.close(); t.join(); srv.close()
flow(int(sys.argv[1]), 700, 20)
flow(int(sys.argv[2]), 3000, 20)
"""


def test_record_path_keeps_the_port_s_packets(tmp_path: Path) -> None:
    """``record path --port P --dev lo -- CMD`` where CMD sends 700-byte writes to P, then
    3,000-byte writes to another port: the kept packets are P's (their data segments all
    shorter than the other flow's), some are kept by skb address where tcp_probe prints it,
    and the note counts what was kept of all packets."""
    _skip()
    script = tmp_path / "flows.py"
    script.write_text(FLOWS)
    port, other = 20000 + os.getpid() % 20000, 40000 + os.getpid() % 20000
    doc, _ = _run(["path", "--port", str(port), "--dev", "lo", "--seconds", "20", "--",
                   sys.executable, str(script), str(port), str(other)],
                  tmp_path / "flow.json", 90)
    note = next(n for n in doc["notes"] if n.startswith("--port/--dst:"))
    kept, total = (int(x) for x in note.split()[1:4:2])
    assert 0 < kept < total, note
    queued = [e for e in doc["events"] if e["event"] == "net:net_dev_queue"]
    lens = [int(e["fields"]["len"]) for e in queued]
    data = [n for n in lens if n > 200]
    assert data and max(data) < 1500, sorted(set(lens))  # 700 B + headers, never 3,000 B
    # one SYN and one SYN-ACK (74 bytes on lo): P's handshake, not the other flow's
    assert lens.count(74) == 2, [e["stack"][:6] for e in queued if e["fields"]["len"] == "74"]
    assert doc["filter"]["port"] == port
