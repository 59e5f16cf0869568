"""Print the real kernel's handshake options and windows beside the TCP model's (issue 25).

Needs root, iproute2 and tcpdump. For each variant (6.4's default sysctls, then one sysctl
off, then SO_RCVBUF 4000) it creates two network namespaces joined by a veth pair (MTU 1500),
sets the sysctls in both, connects, sends 1000 bytes, and prints the first five segments
tcpdump saw next to the model's. The namespaces are deleted afterwards, even on failure.
Traffic stays inside them. Run: ``sudo .venv/bin/python bench/kernel_tcp_options.py``.
See content/tcp-kernel-check.md for what it showed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

from app.sim.tcp import TcpExplainer  # noqa: E402

A, B = "tcpopt_a", "tcpopt_b"
RMEM_64 = "4096 131072 6291456"  # 6.4's default net.ipv4.tcp_rmem
VARIANTS: list[tuple[str, dict[str, str], int]] = [
    ("defaults", {}, 0),
    ("tcp_timestamps=0", {"tcp_timestamps": "0"}, 0),
    ("tcp_sack=0", {"tcp_sack": "0"}, 0),
    ("tcp_window_scaling=0", {"tcp_window_scaling": "0"}, 0),
    ("tcp_ecn=1", {"tcp_ecn": "1"}, 0),
    ("SO_RCVBUF 4000", {}, 4000),
]
SERVER = (
    "import socket,sys,time\n"
    "rb=int(sys.argv[1]); s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
    "rb and s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,rb)\n"
    "s.bind(('10.77.0.2',5001)); s.listen(8); c,_=s.accept(); time.sleep(0.2)\n"
    "c.recv(100000); time.sleep(0.1); c.close()\n"
)
CLIENT = (
    "import socket,sys,time\n"
    "rb=int(sys.argv[1]); c=socket.socket()\n"
    "rb and c.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,rb)\n"
    "c.connect(('10.77.0.2',5001)); time.sleep(0.05); c.send(b'x'*1000); time.sleep(0.4); c.close()\n"
)


def sh(*args: str, check: bool = True) -> None:
    subprocess.run(args, check=check, capture_output=True)


def kernel(sysctls: dict[str, str], rcvbuf: int) -> list[str]:
    for ns in (A, B):
        sh("ip", "netns", "del", ns, check=False)
    try:
        for ns in (A, B):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", "tov_a", "type", "veth", "peer", "name", "tov_b")
        for ns, dev, addr in ((A, "tov_a", "10.77.0.1/24"), (B, "tov_b", "10.77.0.2/24")):
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            for key, value in {"tcp_rmem": RMEM_64, **sysctls}.items():
                Path(f"/tmp/{ns}.sysctl").write_text(value)
                sh(
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sh",
                    "-c",
                    f"cat /tmp/{ns}.sysctl > /proc/sys/net/ipv4/{key}",
                )
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
                    "tov_b",
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
            srv = subprocess.Popen(
                ["ip", "netns", "exec", B, sys.executable, "-c", SERVER, str(rcvbuf)]
            )
            time.sleep(0.3)
            sh("ip", "netns", "exec", A, sys.executable, "-c", CLIENT, str(rcvbuf))
            srv.wait(timeout=10)
            time.sleep(0.3)
            dump.terminate()
            dump.wait(timeout=10)
            out = subprocess.run(
                ["tcpdump", "-nn", "-S", "-r", pcap], capture_output=True, text=True, check=True
            ).stdout
        lines = []
        for line in out.splitlines()[:5]:
            m = re.search(r"Flags \[([^\]]*)\].*?win (\d+)(?:, options \[([^\]]*)\])?", line)
            if m:
                opts = re.sub(r"(val|ecr) \d+", r"\1 …", m.group(3) or "")
                lines.append(f"[{m.group(1)}] win {m.group(2)} <{opts}>")
        return lines
    finally:
        for ns in (A, B):
            sh("ip", "netns", "del", ns, check=False)


def model(sysctls: dict[str, str], rcvbuf: int) -> list[str]:
    ex = TcpExplainer()
    c = [
        {"t_ms": 0, "endpoint": "server", "call": "listen"},
        {"t_ms": 0, "endpoint": "server", "call": "accept"},
        {"t_ms": 0, "endpoint": "client", "call": "connect"},
        {"t_ms": 50, "endpoint": "client", "call": "send", "bytes": 1000},
    ]
    raw: dict[str, object] = {"script": c, "until_ms": 500}
    if sysctls:
        raw["sysctl"] = {k: int(v) for k, v in sysctls.items()}
    if rcvbuf:
        raw["rcvbuf"] = rcvbuf
    tr = ex.run(ex.parse(raw))
    segs = [f.state["segment"] for f in tr.frames if f.state["segment"] is not None]
    out = []
    for seg in segs[:4]:
        opts = re.sub(r"(val|ecr) \d+", r"\1 …", ",".join(seg["options"]))
        out.append(f"{'+'.join(seg['flags'])} win {seg['window']} <{opts}>")
    return out


def main() -> None:
    for name, sysctls, rcvbuf in VARIANTS:
        print(f"== {name}")
        for who, lines in (("kernel", kernel(sysctls, rcvbuf)), ("model ", model(sysctls, rcvbuf))):
            for line in lines:
                print(f"  {who} {line}")


if __name__ == "__main__":
    main()
