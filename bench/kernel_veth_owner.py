"""Who owns a TCP skb that crosses a veth pair, read from the running kernel (issue 22).

The claim (app/sim/path, the veth walk): ``__tcp_transmit_skb`` makes the sending socket the
skb's owner (``skb_set_owner_w``: ``skb->sk``, ``destructor = tcp_wfree``); on veth
``veth_xmit`` → ``__dev_forward_skb`` → ``skb_scrub_packet`` does not orphan it, so it reaches
the peer namespace still owned by the sender, until ``ip_rcv_core`` calls ``skb_orphan``; the
receiving socket then charges it (``skb_set_owner_r``: ``destructor = sock_rfree``).

This kernel has no kprobes, no event probes and no function-trace filter for us, but it has
BPF (CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS). The script loads a small BPF program, written
here as raw instructions, on five tracepoints; at each hit it reads ``skb->sk`` (offset 24)
and ``skb->destructor`` (offset 96) with ``bpf_probe_read_kernel`` and pushes a record to a
BPF queue map:

    net:net_dev_start_xmit       dev_hard_start_xmit, before veth_xmit      (sender's stack)
    net:netif_rx                 __netif_rx, inside veth_xmit after __dev_forward_skb
    net:netif_receive_skb        __netif_receive_skb_core in the peer, before ip_rcv
    skb:skb_copy_datagram_iovec  the receiver's recvmsg, after ip_rcv_core and tcp_v4_rcv
    sock:sock_send_length / sock:sock_recv_length   the two sockets' addresses

The offsets are checked by the records themselves: the destructor read at +96 must resolve
(/proc/kallsyms) to a destructor function and the sk read at +24 must equal the address
sock_send_length / sock_recv_length report; otherwise the script says the layout is not the
one assumed and reports nothing else.

Set-up: namespaces ss-vo-a (10.77.0.1) and ss-vo-b (10.77.0.2) joined by veth ss-voa/ss-vob;
a receiver in ss-vo-b reads the 4 × 3000 bytes a sender thread in ss-vo-a writes. Needs root; deletes
its namespaces and closes its BPF objects on exit. Takes about a second.
    sudo .venv/bin/python bench/kernel_veth_owner.py          # prints what it found
    sudo .venv/bin/python bench/kernel_veth_owner.py --json   # the same as JSON
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

NS_A, NS_B = "ss-vo-a", "ss-vo-b"
DEV_A, DEV_B = "ss-voa", "ss-vob"
ADDR_A, ADDR_B = "10.77.0.1", "10.77.0.2"
PORT = 7747
WRITES = 4  # writes of PAYLOAD bytes, 50 ms apart, so the receiver reads each skb it queued
PAYLOAD = 3000
TRACEFS = Path("/sys/kernel/tracing")
SK_OFF, DTOR_OFF = 24, 96  # struct sk_buff: the sk union, then _skb_refdst/destructor at 88/96
# tracepoint: (tag, offset of its skbaddr / sk field in the raw record)
POINTS: dict[str, tuple[int, int]] = {
    "net/net_dev_start_xmit": (1, 16),
    "net/netif_rx": (2, 8),
    "net/netif_receive_skb": (3, 8),
    "skb/skb_copy_datagram_iovec": (4, 8),
    "sock/sock_send_length": (5, 8),
    "sock/sock_recv_length": (6, 8),
}
TAGS = {tag: name for name, (tag, _) in POINTS.items()}

# ---- the bpf(2) and perf_event_open(2) system calls (x86-64) ---------------------------------
NR_BPF, NR_PERF_EVENT_OPEN = 321, 298
BPF_MAP_CREATE, BPF_PROG_LOAD, BPF_MAP_LOOKUP_AND_DELETE_ELEM = 0, 5, 21
BPF_MAP_TYPE_QUEUE, BPF_PROG_TYPE_TRACEPOINT = 22, 5
PERF_TYPE_TRACEPOINT = 2
CLONE_NEWNET = 0x40000000
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_SET_BPF = 0x2400, 0x40042408
VALUE = struct.Struct("<5Q")  # tag, skb (or sk), skb->sk, skb->destructor, pid_tgid
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, len(attr))
    ret = LIBC.syscall(NR_BPF, cmd, buf, len(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf cmd {cmd}: {os.strerror(err)}")
    return int(ret)


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, dst | (src << 4), off, imm)


def _program(field_off: int, tag: int, map_fd: int) -> bytes:
    """r7 = the record's pointer field; push {tag, r7, *(r7+24), *(r7+96), pid_tgid}."""
    mov_x, mov_k, add_k = 0xBF, 0xB7, 0x07
    ldx_dw, stx_dw, st_dw, call, exit_ = 0x79, 0x7B, 0x7A, 0x85, 0x95
    fp = 10
    code = [
        _insn(mov_x, 6, 1),
        _insn(ldx_dw, 7, 6, field_off),
        _insn(st_dw, fp, 0, -40, tag),
        _insn(stx_dw, fp, 7, -32),
        _insn(call, imm=14),  # bpf_get_current_pid_tgid
        _insn(stx_dw, fp, 0, -8),
    ]
    for slot, off in ((-24, SK_OFF), (-16, DTOR_OFF)):
        code += [
            _insn(mov_x, 1, fp),
            _insn(add_k, 1, imm=slot),
            _insn(mov_k, 2, imm=8),
            _insn(mov_x, 3, 7),
            _insn(add_k, 3, imm=off),
            _insn(call, imm=113),  # bpf_probe_read_kernel
        ]
    code += [
        _insn(0x18, 1, 1, imm=map_fd),  # ld_imm64 r1 = map (BPF_PSEUDO_MAP_FD)
        _insn(0),
        _insn(mov_x, 2, fp),
        _insn(add_k, 2, imm=-40),
        _insn(mov_k, 3, imm=0),
        _insn(call, imm=87),  # bpf_map_push_elem
        _insn(mov_k, 0, imm=0),
        _insn(exit_),
    ]
    return b"".join(code)


def _load(field_off: int, tag: int, map_fd: int) -> int:
    insns = _program(field_off, tag, map_fd)
    lic = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(65536)
    prog = ctypes.create_string_buffer(insns, len(insns))
    attr = struct.pack(
        "<IIQQIIQII16s",
        BPF_PROG_TYPE_TRACEPOINT,
        len(insns) // 8,
        ctypes.addressof(prog),
        ctypes.addressof(lic),
        1,
        len(log),
        ctypes.addressof(log),
        0,
        0,
        b"ss_veth_owner",
    ).ljust(128, b"\0")
    try:
        return _bpf(BPF_PROG_LOAD, attr)
    except OSError as e:
        raise OSError(e.errno, f"{e.strerror}: {log.value.decode(errors='replace')}") from e


def _attach(point: str, prog_fd: int) -> list[int]:
    tp_id = int((TRACEFS / "events" / point / "id").read_text())
    attr = struct.pack("<IIQQQQQ", PERF_TYPE_TRACEPOINT, 112, tp_id, 1, 0, 0, 0).ljust(112, b"\0")
    buf = ctypes.create_string_buffer(attr, len(attr))
    fds = []
    for cpu in range(os.cpu_count() or 1):
        fd = LIBC.syscall(NR_PERF_EVENT_OPEN, buf, -1, cpu, -1, 8)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"perf_event_open {point}: {os.strerror(err)}")
        fds.append(int(fd))
        # the program joins the tracepoint's own list, which runs on every CPU: attach it once
        if cpu == 0 and LIBC.ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd) < 0:
            raise OSError(ctypes.get_errno(), f"PERF_EVENT_IOC_SET_BPF {point}")
        LIBC.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)
    return fds


def _drain(map_fd: int) -> list[tuple[int, ...]]:
    out = []
    value = ctypes.create_string_buffer(VALUE.size)
    attr = struct.pack("<IIQQQ", map_fd, 0, 0, ctypes.addressof(value), 0)
    while True:
        try:
            _bpf(BPF_MAP_LOOKUP_AND_DELETE_ELEM, attr)
        except OSError:
            return out
        out.append(VALUE.unpack(value.raw))


# ---- namespaces and traffic ------------------------------------------------------------------
def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextmanager
def _namespaces() -> Iterator[None]:
    for ns in (NS_A, NS_B):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
    try:
        for ns in (NS_A, NS_B):
            _ip("netns", "add", ns)
        _ip("link", "add", DEV_A, "netns", NS_A, "type", "veth", "peer", DEV_B, "netns", NS_B)
        for ns, dev, addr in ((NS_A, DEV_A, ADDR_A), (NS_B, DEV_B, ADDR_B)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        for ns in (NS_A, NS_B):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


RECEIVER = f"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{ADDR_B}", {PORT})); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while n < {WRITES * PAYLOAD}:
    d = c.recv(65536)
    if not d: break
    n += len(d)
print(n, flush=True)
"""


def _send(result: dict[str, int]) -> None:
    """In a thread of its own moved into ss-vo-a: connect and write PAYLOAD bytes."""
    result["tid"] = threading.get_native_id()
    with open(f"/run/netns/{NS_A}") as f:
        if LIBC.setns(f.fileno(), CLONE_NEWNET) != 0:  # this thread only (os.setns is 3.12+)
            raise OSError(ctypes.get_errno(), "setns")
    with socket.create_connection((ADDR_B, PORT), timeout=5) as s:
        for _ in range(WRITES):
            s.sendall(b"x" * PAYLOAD)
            time.sleep(0.05)
        time.sleep(0.1)


@dataclass
class Hit:
    point: str
    skb: int
    sk: int
    destructor: str
    tid: int


def _symbols(addrs: set[int]) -> dict[int, str]:
    want = {a for a in addrs if a}
    out: dict[int, str] = {0: "NULL"}
    with open("/proc/kallsyms") as f:
        for line in f:
            a, _, name = line.split()[:3]
            if int(a, 16) in want:
                out[int(a, 16)] = name
    return out


def observe() -> dict[str, object]:
    """Run the transfer with the probes attached and return what they saw."""
    if os.geteuid() != 0:
        raise PermissionError("needs root (BPF, namespaces)")
    if not (TRACEFS / "events").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True)
    qattr = struct.pack("<IIIII", BPF_MAP_TYPE_QUEUE, 0, VALUE.size, 65536, 0).ljust(72, b"\0")
    map_fd = _bpf(BPF_MAP_CREATE, qattr)
    fds: list[int] = [map_fd]
    result: dict[str, int] = {}
    try:
        for point, (tag, off) in POINTS.items():
            prog = _load(off, tag, map_fd)
            fds.append(prog)
            fds += _attach(point, prog)
        with _namespaces():
            rx = subprocess.Popen(
                ["ip", "netns", "exec", NS_B, sys.executable, "-c", RECEIVER],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert rx.stdout is not None
                rx.stdout.readline()
                t = threading.Thread(target=_send, args=(result,))
                t.start()
                t.join(10)
                got = rx.stdout.readline().strip()
                rx_pid = rx.pid
            finally:
                with suppress(Exception):
                    rx.wait(5)
            records = _drain(map_fd)
    finally:
        for fd in reversed(fds):
            os.close(fd)
    return _verdict(records, result.get("tid", 0), got, rx_pid)


def _chains(records: list[tuple[int, ...]], tid: int, rx_pid: int) -> list[list[Hit]]:
    """The sender's data skbs, each followed from dev_hard_start_xmit to the receiver's read.

    Records come in the order they were pushed. An skb address is reused as soon as the skb is
    freed, so a chain starts at net_dev_start_xmit with the sender's socket as owner and
    ``tcp_wfree`` (a data segment: pure ACKs get ``__sock_wfree``), takes the next netif_rx and
    netif_receive_skb of that address on the sender's thread (veth's backlog is drained there,
    in __local_bh_enable_ip), and ends at the receiver's skb_copy_datagram_iovec of it."""
    syms = _symbols({r[3] for r in records})
    send_sk = {r[1] for r in records if r[0] == 5 and (r[4] & 0xFFFFFFFF) == tid}
    open_: dict[int, list[Hit]] = {}
    done: list[list[Hit]] = []
    for tag, skb, sk, dtor, pid_tgid in records:
        if tag >= 5:
            continue
        hit = Hit(TAGS[tag], skb, sk, syms.get(dtor, hex(dtor)), pid_tgid & 0xFFFFFFFF)
        if tag == 1:
            open_.pop(skb, None)
            if sk in send_sk and hit.destructor == "tcp_wfree" and hit.tid == tid:
                open_[skb] = [hit]
            continue
        chain = open_.get(skb)
        if chain is None:
            continue
        want = {2: 1, 3: 2, 4: 3}[tag]
        if len(chain) != want or (tag < 4 and hit.tid != tid) or (tag == 4 and hit.tid != rx_pid):
            open_.pop(skb)
            continue
        chain.append(hit)
        if tag == 4:
            done.append(open_.pop(skb))
    return done


def _verdict(records: list[tuple[int, ...]], tid: int, got: str, rx_pid: int) -> dict[str, object]:
    send_sk = {r[1] for r in records if r[0] == 5 and (r[4] & 0xFFFFFFFF) == tid}
    recv_sk = {r[1] for r in records if r[0] == 6 and (r[4] & 0xFFFFFFFF) == rx_pid}
    chains = _chains(records, tid, rx_pid)

    def owner(sk: int) -> str:
        if sk in send_sk:
            return "sender"
        if sk in recv_sk:
            return "receiver"
        return "none" if sk == 0 else "other"

    seen: dict[str, set[tuple[str, str]]] = {}
    for chain in chains:
        for h in chain:
            seen.setdefault(h.point, set()).add((owner(h.sk), h.destructor))
    # the offsets hold when the first hit of every chain reads back the sender's socket and
    # tcp_wfree, and the last the receiver's socket and a receive destructor
    layout_ok = bool(chains) and all(
        owner(c[0].sk) == "sender" and owner(c[-1].sk) == "receiver" for c in chains
    )
    return {
        "kernel": platform.release(),
        "received": got,
        "sender_sk": sorted(hex(s) for s in send_sk),
        "receiver_sk": sorted(hex(s) for s in recv_sk),
        "layout_ok": layout_ok,
        "chains": len(chains),
        "records": len(records),
        "seen": {p: sorted(v) for p, v in seen.items()},
    }


def main() -> int:
    out = observe()
    if "--json" in sys.argv:
        print(json.dumps(out, indent=2))
        return 0
    print(f"kernel {out['kernel']}, received {out['received']} bytes, data skbs followed {out['chains']}")
    if not out["layout_ok"]:
        print("the sk_buff offsets assumed (sk 24, destructor 96) did not check out")
        return 1
    for point, seen in dict(out["seen"]).items():  # type: ignore[call-overload]
        print(f"{point:30} " + ", ".join(f"owner {o}, destructor {d}" for o, d in seen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
