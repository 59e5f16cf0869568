"""Check Stepscope's sk_buff sizing model (app.sim.skbuff) against the running kernel.

A UDP socket that never reads is charged skb->truesize for every datagram it queues
(__udp_enqueue_schedule_skb, net/ipv4/udp.c: atomic_add(skb->truesize, &sk->sk_rmem_alloc)).
We send K datagrams of payload P to such a socket, read sk_rmem_alloc back with
getsockopt(SO_MEMINFO) (and, independently, the rx_queue column of /proc/net/udp),
and divide by K.

On loopback and on a veth pair (GRO off, the default) the queued skb is the *sender's* skb:
loopback_xmit / veth_xmit -> __dev_forward_skb only orphan it and hand it to the backlog.
The sender built it in __ip_append_data (net/ipv4/ip_output.c) with
    sock_alloc_send_skb(sk, alloclen)  ->  alloc_skb(alloclen)
    alloclen = P + 8 (udp) + 20 (ip) + hh_len (LL_RESERVED_SPACE = 16) + 15 = P + 59
as long as fraglen + alloc_extra < SKB_MAX_ALLOC (16064). Above that the head holds only
the headers (alloclen = 59) and the payload goes into page frags from current->task_frag,
each copied byte adding 1 to truesize (skb_len_add).

Transports:
    lo         127.0.0.1 -> 127.0.0.1 inside namespace ss-skb-a (MTU 65536)
    veth       ss-skb-a -> ss-skb-b over veth ss-skb-va/ss-skb-vb, MTU --veth-mtu (65535)
    veth-frag  ss-skb-a -> ss-skb-b over veth ss-skb-fa/ss-skb-fb, MTU 1500: payloads above
               1472 are IP-fragmented by the sender and reassembled (ip_defrag) by the receiver

Needs root (it creates and deletes the ss-skb-* namespaces). Example:
    sudo .venv/bin/python bench/kernel_skb.py
    sudo .venv/bin/python bench/kernel_skb.py --payloads 1,197,198,261,262,325,326 --count 64
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import errno
import gzip
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

NS_A, NS_B = "ss-skb-a", "ss-skb-b"
ALL_NS = (NS_A, NS_B)
VETH = ("ss-skb-va", "ss-skb-vb", "10.78.0.1", "10.78.0.2")
VETH_FRAG = ("ss-skb-fa", "ss-skb-fb", "10.78.1.1", "10.78.1.2")
SO_MEMINFO = 55  # include/uapi/asm-generic/socket.h
SK_MEMINFO_VARS = (
    9  # RMEM_ALLOC RCVBUF WMEM_ALLOC SNDBUF FWD_ALLOC WMEM_QUEUED OPTMEM BACKLOG DROPS
)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
CLONE_NEWNET = 0x40000000

DEFAULT_PAYLOADS = (
    "1,100,197,198,200,261,262,300,325,326,400,500,1000,1400,1472,1473,1600,2000,"
    "3000,3700,3800,4000,8000,16000,16004,16005,32000,65507"
)

# ---- kernel constants used by the predictions (x86-64, 4 KiB pages) ------------------------
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
OVERHEAD = 576  # SKB_TRUESIZE(0) = 256 + 320
SKB_MAX_ALLOC = 16064  # SKB_WITH_OVERHEAD(PAGE_SIZE << 2)
HH_LEN = 16  # LL_RESERVED_SPACE(dev): ((14 + 0) & ~15) + 16, loopback and veth alike
IP_HDR, UDP_HDR = 20, 8
FRAG_CHUNK = 32768  # current->task_frag is a 32 KiB compound page (SKB_FRAG_PAGE_ORDER 3)


def data_align(x: int) -> int:
    return (x + 63) // 64 * 64


def head_align(x: int) -> int:
    return data_align(x) + SHINFO


# ---- netns plumbing -----------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
_ORIG_NS_FD: int | None = None


def setns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def enter(ns: str | None) -> None:
    """Move this thread into netns `ns` (None = the namespace we started in)."""
    if ns is None:
        assert _ORIG_NS_FD is not None
        if _libc.setns(_ORIG_NS_FD, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns(original)")
    else:
        setns(f"/run/netns/{ns}")


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip()}")
    return res


def teardown() -> None:
    """Delete only the ss-skb-* namespaces this script creates; their veths go with them."""
    try:
        enter(None)
    except Exception:
        pass
    existing = sh("ip", "netns", "list", check=False).stdout.split()
    for ns in ALL_NS:
        if ns in existing:
            sh("ip", "netns", "del", ns, check=False)


def setup(veth_mtu: int) -> None:
    teardown()
    for ns in ALL_NS:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    for (a, b, ip_a, ip_b), mtu in ((VETH, veth_mtu), (VETH_FRAG, 1500)):
        sh("ip", "link", "add", a, "netns", NS_A, "type", "veth", "peer", "name", b, "netns", NS_B)
        for ns, dev, ip in ((NS_A, a, ip_a), (NS_B, b, ip_b)):
            sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu))
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")


def transport(name: str) -> tuple[str, str, str]:
    """(receiver ns, sender ns, destination address) for a transport name."""
    if name == "lo":
        return NS_A, NS_A, "127.0.0.1"
    if name == "veth":
        return NS_B, NS_A, VETH[3]
    if name == "veth-frag":
        return NS_B, NS_A, VETH_FRAG[3]
    raise ValueError(name)


# ---- measurement --------------------------------------------------------------------------
def meminfo(sock: socket.socket) -> tuple[int, ...]:
    raw = sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 4 * SK_MEMINFO_VARS)
    return struct.unpack(f"{SK_MEMINFO_VARS}I", raw)


def proc_udp_rx_queue(port: int) -> int | None:
    """rx_queue of our socket in /proc/net/udp (read from inside the receiver's netns)."""
    with open("/proc/net/udp") as fh:
        next(fh)
        for line in fh:
            f = line.split()
            if int(f[1].split(":")[1], 16) == port:
                return int(f[4].split(":")[1], 16)
    return None


def measure(name: str, payload: int, count: int, dev: str | None) -> dict[str, Any]:
    rx_ns, tx_ns, dst = transport(name)
    enter(rx_ns)
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s = None
    try:
        # A huge rcvbuf keeps rmem_alloc below rcvbuf/2, so __udp_enqueue_schedule_skb never
        # calls skb_condense() and the charge is the skb's truesize as it arrived.
        r.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        r.bind((dst, 0))
        port = r.getsockname()[1]
        dev_before = _dev_rx(dev) if dev else None
        enter(tx_ns)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        enter(None)
        buf = b"\xa5" * payload
        for _ in range(count):
            s.sendto(buf, (dst, port))
        # loopback/veth hand the skb to the backlog; wait until the queue stops growing
        deadline, last, stable = time.monotonic() + 2.0, -1, 0
        while time.monotonic() < deadline:
            cur = meminfo(r)[0]
            stable = stable + 1 if cur == last else 0
            last = cur
            if stable >= 3:
                break
            time.sleep(0.01)
        mi = meminfo(r)
        enter(rx_ns)
        rxq = proc_udp_rx_queue(port)
        dev_after = _dev_rx(dev) if dev else None
        enter(None)
        # drain: prove exactly `count` datagrams of `payload` bytes sat in the queue
        r.setblocking(False)
        got, sizes = 0, set()
        while True:
            try:
                sizes.add(len(r.recv(65536)))
                got += 1
            except BlockingIOError:
                break
        out = {
            "transport": name,
            "payload": payload,
            "count": count,
            "rmem_alloc": mi[0],
            "rcvbuf": mi[1],
            "drops": mi[8],
            "proc_rx_queue": rxq,
            "received": got,
            "sizes": sorted(sizes),
            "per_skb": mi[0] / count,
            "exact": mi[0] % count == 0,
        }
        if dev:
            out["rx_packets_on_dev"] = dev_after - dev_before  # type: ignore[operator]
        return out
    finally:
        enter(None)
        r.close()
        if s is not None:
            s.close()


def _dev_rx(dev: str) -> int:
    """rx_packets of `dev` from /proc/net/dev (per-netns, unlike /sys which stays the host's)."""
    with open("/proc/net/dev") as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            if name.strip() == dev:
                return int(rest.split()[1])
    raise LookupError(dev)


# ---- predictions --------------------------------------------------------------------------
def udp_skbs(payload: int, mtu: int) -> list[tuple[int, int]]:
    """The skbs __ip_append_data builds for one datagram: [(alloclen, paged bytes), ...]."""
    frag_hdr, alloc_extra = IP_HDR, HH_LEN + 15
    maxfraglen = ((mtu - frag_hdr) & ~7) + frag_hdr
    length, out, first = payload + UDP_HDR, [], True
    while length > 0:
        datalen = length
        if datalen > mtu - frag_hdr:
            datalen = maxfraglen - frag_hdr
        fraglen = datalen + frag_hdr
        if fraglen + alloc_extra < SKB_MAX_ALLOC:
            out.append((fraglen + alloc_extra, 0))
        else:  # paged: the head keeps the headers, the rest goes to task_frag pages
            trans = UDP_HDR if first else 0
            out.append((frag_hdr + trans + alloc_extra, datalen - trans))
        length -= datalen
        first = False
    return out


def alloc_truesize(alloclen: int, small_head: int) -> tuple[int, str]:
    """(truesize, where) of alloc_skb(alloclen) for a given small-head cache size."""
    from app.sim.skbuff.alloc import kmalloc_size_roundup

    obj = head_align(alloclen)
    if obj <= small_head:
        return small_head - SHINFO + OVERHEAD, f"small_head {small_head}"
    got = kmalloc_size_roundup(obj)
    where = f"kmalloc-{got}" if got <= 8192 else f"pages {got}"
    return got - SHINFO + OVERHEAD, where


def model_truesize(alloclen: int, paged: int) -> int:
    """Stepscope's own model (Linux 6.4, 640-byte small head), run through its explainer."""
    from app.sim.skbuff import SkbExplainer

    ex = SkbExplainer()
    ops: list[dict[str, Any]] = [{"op": "alloc_skb", "size": alloclen}]
    left = paged
    while left > 0:
        chunk = min(left, FRAG_CHUNK)
        ops.append({"op": "skb_add_rx_frag", "size": chunk, "truesize": chunk})
        left -= chunk
    tr = ex.run(ex.parse({"ops": ops}))
    return int(tr.frames[-1].state["skbs"][0]["truesize"])


def predict_datagram(payload: int, mtu: int, small_head: int | None) -> dict[str, Any]:
    """Truesize charged for one datagram. small_head None = the Stepscope model itself.

    One skb: its truesize. Several (IP fragments, sent via the frag_list fast path of
    ip_do_fragment, so each fragment is one of the skbs above): ip_frag_reasm ->
    inet_frag_reasm_finish(coalesce=true) copies a fragment into the head's tailroom when
    it fits (skb_try_coalesce, no truesize added) and otherwise chains it on frag_list
    (head->truesize += fp->truesize).
    """
    skbs = udp_skbs(payload, mtu)
    sizes = []
    for alloclen, paged in skbs:
        if small_head is None:
            ts = model_truesize(alloclen, paged)
        else:
            ts = alloc_truesize(alloclen, small_head)[0] + paged
        sizes.append(ts)
    total = sizes[0]
    if len(skbs) > 1:
        alloclen0 = skbs[0][0]
        end0 = sizes[0] - OVERHEAD
        tailroom = end0 - alloclen0 + 15  # tail = hh_len + fraglen = alloclen - 15
        linear = True
        for (alloclen, _paged), ts in zip(skbs[1:], sizes[1:], strict=True):
            flen = alloclen - HH_LEN - 15 - IP_HDR
            if linear and flen <= tailroom:
                tailroom -= flen
            else:
                linear = False
                total += ts
    return {"alloclen": [a for a, _ in skbs], "paged": [p for _, p in skbs], "truesize": total}


def host_small_head() -> dict[str, Any]:
    """The running kernel's skbuff_small_head size: from SLUB sysfs, and derived from config."""
    info: dict[str, Any] = {}
    p = Path("/sys/kernel/slab/skbuff_small_head/object_size")
    info["slab_object_size"] = int(p.read_text()) if p.exists() else None
    cfg: dict[str, str] = {}
    try:
        with gzip.open("/proc/config.gz", "rt") as fh:
            for line in fh:
                m = re.match(r"(CONFIG_\w+)=(.*)", line)
                if m:
                    cfg[m.group(1)] = m.group(2)
    except OSError:
        return info

    def on(k: str) -> bool:
        return cfg.get(k) in ("y", "m")

    # include/linux/netdevice.h (LL_MAX_HEADER, MAX_HEADER), include/net/tcp.h, gro.h
    if on("CONFIG_HYPERV_NET"):
        ll = 128
    elif on("CONFIG_WLAN") or on("CONFIG_AX25"):
        ll = 128 if on("CONFIG_MAC80211_MESH") else 96
    else:
        ll = 32
    tunnels = any(
        on(k)
        for k in ("CONFIG_NET_IPIP", "CONFIG_NET_IPGRE", "CONFIG_IPV6_SIT", "CONFIG_IPV6_TUNNEL")
    )
    max_header = ll + 48 if tunnels else ll
    max_tcp_header = data_align(128 + max_header)
    gro_pad = max_header + 128 + 64 + 0  # GRO_MAX_HEAD + NET_SKB_PAD + NET_IP_ALIGN

    def cache(x: int) -> int:
        return x + 64 if x & (x - 1) == 0 else x

    info.update(
        LL_MAX_HEADER=ll,
        MAX_HEADER=max_header,
        MAX_TCP_HEADER=max_tcp_header,
        GRO_MAX_HEAD_PAD=gro_pad,
        derived_6_4_rule=cache(head_align(max_tcp_header)),
        derived_6_12_rule=cache(head_align(max(max_tcp_header, gro_pad))),
    )
    return info


# ---- main ---------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(
        description="Measure per-skb truesize of UDP datagrams queued on a non-reading socket "
        "(loopback and veth) and compare it with Stepscope's sk_buff model.",
        epilog="Needs root: creates/deletes network namespaces ss-skb-a and ss-skb-b.",
    )
    ap.add_argument(
        "--payloads", default=DEFAULT_PAYLOADS, help="comma-separated UDP payload sizes (1..65507)"
    )
    ap.add_argument("--count", type=int, default=32, help="datagrams per measurement (default 32)")
    ap.add_argument("--transports", default="lo,veth,veth-frag", help="any of lo, veth, veth-frag")
    ap.add_argument(
        "--veth-mtu", type=int, default=65535, help="MTU of the 'veth' pair (default 65535)"
    )
    ap.add_argument("--time-limit", type=int, default=120, help="abort after this many seconds")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON file (default data/kernel/<stamp>-skb-udp.json)",
    )
    ap.add_argument("--no-json", action="store_true", help="do not write the JSON file")
    args = ap.parse_args()

    payloads = [int(x) for x in args.payloads.split(",") if x.strip()]
    if any(not 0 <= p <= 65507 for p in payloads):
        ap.error("payloads must be within 0..65507 (IPv4 UDP maximum)")
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    for t in transports:
        if t not in ("lo", "veth", "veth-frag"):
            ap.error(f"unknown transport {t!r}")
    if args.veth_mtu < 68 or args.veth_mtu > 65535:
        ap.error("--veth-mtu must be within 68..65535")
    if os.geteuid() != 0:
        print(
            "kernel_skb.py needs root: it creates and deletes the network namespaces "
            f"{', '.join(ALL_NS)}.\nRun: sudo .venv/bin/python bench/kernel_skb.py "
            + " ".join(sys.argv[1:]),
            file=sys.stderr,
        )
        return 2

    global _ORIG_NS_FD
    _ORIG_NS_FD = os.open("/proc/self/ns/net", os.O_RDONLY)

    def on_signal(signum: int, _frame: Any) -> None:
        raise SystemExit(f"stopped by signal {signum} (time limit or interrupt)")

    signal.signal(signal.SIGALRM, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.alarm(args.time_limit)
    atexit.register(teardown)

    host = host_small_head()
    small_here = host.get("slab_object_size") or host.get("derived_6_12_rule") or 704
    mtus = {"lo": 65536, "veth": args.veth_mtu, "veth-frag": 1500}
    devs = {"lo": None, "veth": VETH[1], "veth-frag": VETH_FRAG[1]}
    rows: list[dict[str, Any]] = []
    try:
        setup(args.veth_mtu)
        for t in transports:
            for p in payloads:
                m = measure(t, p, args.count, devs[t])
                if m["received"] != args.count or m["drops"]:
                    print(
                        f"warning: {t} P={p}: received {m['received']}/{args.count}, "
                        f"drops {m['drops']}",
                        file=sys.stderr,
                    )
                mtu = mtus[t]
                m["mtu"] = mtu
                m["pred_model_6_4"] = predict_datagram(p, mtu, None)
                m["pred_6_12_defconfig"] = predict_datagram(p, mtu, 704)
                m["pred_this_host"] = predict_datagram(p, mtu, small_here)
                # sanity: our 640-byte re-computation agrees with the explainer's model
                assert predict_datagram(p, mtu, 640)["truesize"] == m["pred_model_6_4"]["truesize"]
                rows.append(m)
    finally:
        signal.alarm(0)
        teardown()

    uname = os.uname()
    print(f"kernel {uname.release}; skbuff_small_head here: {host}")
    print(f"K = {args.count} datagrams per row; truesize per datagram in bytes\n")
    hdr = (
        f"{'transport':<10}{'payload':>8}{'alloclen':>14}{'paged':>7}{'model 6.4':>11}"
        f"{'6.12+ def':>11}{'this cfg':>10}{'measured':>10}  match"
    )
    print(hdr)
    print("-" * len(hdr))
    for m in rows:
        pm, pd, ph = m["pred_model_6_4"], m["pred_6_12_defconfig"], m["pred_this_host"]
        alloc = "+".join(str(a) for a in ph["alloclen"])
        if len(alloc) > 13:
            alloc = f"{len(ph['alloclen'])} skbs"
        meas = m["per_skb"]
        meas_s = f"{meas:.0f}" if m["exact"] else f"{meas:.1f}"
        tags = []
        if meas == pm["truesize"]:
            tags.append("model")
        if meas == pd["truesize"]:
            tags.append("6.12def")
        if meas == ph["truesize"]:
            tags.append("host")
        print(
            f"{m['transport']:<10}{m['payload']:>8}{alloc:>14}{sum(ph['paged']):>7}"
            f"{pm['truesize']:>11}{pd['truesize']:>11}{ph['truesize']:>10}{meas_s:>10}  "
            f"{','.join(tags) or 'NONE'}"
        )

    if not args.no_json:
        out = (
            args.out or ROOT / "data" / "kernel" / f"{time.strftime('%Y%m%d-%H%M%S')}-skb-udp.json"
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "kernel": uname.release,
            "count": args.count,
            "veth_mtu": args.veth_mtu,
            "host_small_head": host,
            "rows": rows,
        }
        out.write_text(json.dumps(doc, indent=1))
        print(f"\nraw results: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        if e.errno == errno.EPERM:
            print(f"permission denied: {e}", file=sys.stderr)
            sys.exit(2)
        raise
