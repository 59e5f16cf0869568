"""Delayed ACKs on the real kernel (issue 25): when the server ACKs a request in ping-pong
mode, after the delayed-ACK timer took it out again, and a FIN with and without data before it.

Two network namespaces joined by a veth pair (no added delay); tcpdump on the server's veth.
Run as root: ``.venv/bin/python -m bench.kernel_tcp_delack``. It prints, for each segment the
client sends, how long the server took to acknowledge it (and whether that ACK carried data),
beside what the model (Linux 6.4) does. The namespaces are deleted afterwards.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

A, B = "tcpdack_a", "tcpdack_b"
SRV_IP = "10.78.0.2"
SERVER = f"""
import socket, threading, time
def listen(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('{SRV_IP}', port)); s.listen(4); return s
l1, l2, l3 = listen(5101), listen(5102), listen(5103)
def pingpong():
    c, _ = l1.accept()
    c.recv(100); c.send(b'r' * 30)           # reply at once: ping-pong
    c.recv(100); time.sleep(0.01); c.send(b'r' * 30)  # the ACK should ride on this
    c.recv(100)                              # no reply: the delayed-ACK timer
    c.recv(100)                              # after it: quick ACKs again
    time.sleep(0.3); c.close()
def fin_only():
    c, _ = l2.accept(); time.sleep(0.4); c.close()
def fin_after_data():
    c, _ = l3.accept(); c.recv(100); time.sleep(0.4); c.close()
ts = [threading.Thread(target=f) for f in (pingpong, fin_only, fin_after_data)]
[t.start() for t in ts]; [t.join() for t in ts]
"""
CLIENT = f"""
import socket, time
c = socket.socket(); c.connect(('{SRV_IP}', 5101)); time.sleep(0.05)
c.send(b'q' * 50); c.recv(100); time.sleep(0.02)
c.send(b'q' * 50); c.recv(100); time.sleep(0.02)
c.send(b'q' * 50); time.sleep(0.08)
c.send(b'q' * 50); time.sleep(0.1); c.close()
d = socket.socket(); d.connect(('{SRV_IP}', 5102)); time.sleep(0.05); d.close()
e = socket.socket(); e.connect(('{SRV_IP}', 5103)); time.sleep(0.02)
e.send(b'q' * 100); time.sleep(0.05); e.close()
time.sleep(0.5)
"""
MODEL = {
    5101: [
        "request 1: 0 ms (quick)",
        "request 2: rides on the reply, 10 ms",
        "request 3: 40 ms (timer; ping-pong ends)",
        "request 4: 0 ms (quick)",
    ],
    5102: ["FIN, no data before: the next tick (1 ms at HZ=1000)"],
    5103: ["data: 0 ms (quick)", "FIN after data: 40 ms (ato)"],
}
PKT = re.compile(
    r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\], (?:seq (\d+)(?::(\d+))?|ack)"
)


def sh(*args: str, check: bool = True) -> None:
    subprocess.run(args, check=check, capture_output=True)


def capture() -> str:
    for ns in (A, B):
        sh("ip", "netns", "del", ns, check=False)
    try:
        for ns in (A, B):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", "tdk_a", "type", "veth", "peer", "name", "tdk_b")
        for ns, dev, addr in ((A, "tdk_a", "10.78.0.1/24"), (B, "tdk_b", f"{SRV_IP}/24")):
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        with tempfile.TemporaryDirectory() as tmp:
            pcap = f"{tmp}/cap.pcap"
            dump = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    B,
                    "tcpdump",
                    "-i",
                    "tdk_b",
                    "-U",
                    "-nn",
                    "-S",
                    "-w",
                    pcap,
                    "tcp",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)
            srv = subprocess.Popen(["ip", "netns", "exec", B, sys.executable, "-c", SERVER])
            time.sleep(0.3)
            sh("ip", "netns", "exec", A, sys.executable, "-c", CLIENT)
            srv.wait(timeout=10)
            time.sleep(0.5)
            dump.terminate()
            dump.wait(timeout=10)
            return subprocess.run(
                ["tcpdump", "-nn", "-S", "-tt", "-r", pcap], capture_output=True, text=True
            ).stdout
    finally:
        for ns in (A, B):
            sh("ip", "netns", "del", ns, check=False)


def report(out: str) -> None:
    for port, expect in MODEL.items():
        pkts = []
        for line in out.splitlines():
            m = PKT.match(line)
            if not m or port not in (int(m.group(3)), int(m.group(5))):
                continue
            ack = re.search(r"ack (\d+)", line)
            length = int(m.group(8)) - int(m.group(7)) if m.group(8) else 0
            pkts.append(
                (
                    float(m.group(1)),
                    int(m.group(3)) == port,
                    m.group(6),
                    length,
                    int(ack.group(1)) if ack else 0,
                    int(m.group(8) or m.group(7) or 0),
                )
            )
        print(f"port {port}  (model: {'; '.join(expect)})")
        for i, (t, from_srv, flags, length, _ack, end) in enumerate(pkts):
            if from_srv or not (length or "F" in flags):
                continue
            want = end + (1 if "F" in flags else 0)
            reply = next((p for p in pkts[i + 1 :] if p[1] and p[4] >= want), None)
            what = "FIN" if "F" in flags and not length else f"{length} bytes"
            if reply is None:
                print(f"  client {what}: no ACK seen")
                continue
            rides = f" with {reply[3]} bytes of data" if reply[3] else ""
            print(f"  client {what}: server ACKs after {(reply[0] - t) * 1000:.1f} ms{rides}")


def main() -> None:
    cfg = subprocess.run(["sh", "-c", "zcat /proc/config.gz 2>/dev/null"], capture_output=True)
    hz = next((ln for ln in cfg.stdout.decode().splitlines() if ln.startswith("CONFIG_HZ=")), "")
    print(f"kernel {Path('/proc/sys/kernel/osrelease').read_text().strip()} {hz}")
    report(capture())


if __name__ == "__main__":
    main()
