"""The socket calls of a TCP script (the TCP explainer's presets' ``script``), run for real.

:data:`RUNNER` is a self-contained Python program run inside a network namespace
(``ip netns exec NS python -c RUNNER SPEC``): one thread per endpoint makes its calls at
(or after) ``t_ms``, each endpoint's socket bound to 127.0.0.1 and its port from the spec;
it prints one JSON line (call results, ``ss -tan``, ``ss -tino``, /proc/net/netstat) and
waits for its stdin to close. ``stepscope record demo tcp`` and tests/kernel/ use it.
"""

from __future__ import annotations

# Calls the runner knows; a script with any other call is refused before it runs.
CALLS = frozenset(
    {"listen", "connect", "accept", "send", "recv", "shutdown", "close", "abort"}
)

# The TCP explainer's presets whose socket calls run as they are on a real kernel (their
# state chains are compared with the model's in tests/kernel/test_tcp_kernel.py).
DEMO_PRESETS = (
    "handshake",
    "client-close",
    "server-close",
    "half-close",
    "abort",
    "close-unread",
    "closed-port",
)

# The program run inside the namespace: one thread per endpoint, each making its calls in
# order at (or after) t_ms, like the simulator's script semantics.
RUNNER = r"""
import errno, json, os, socket, struct, sys, threading, time
spec = json.loads(sys.argv[1])
ports = spec["ports"]
peer = {"client": "server", "other": "server", "server": "client", "bulk": "client"}
t0 = time.monotonic()
out = []
lock = threading.Lock()
st = {ep: {"lsn": None, "conn": None} for ep in ports}
keep = []

def new_sock(ep):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", ports[ep]))
    return s

def do(ep, c):
    e = st[ep]
    call = c["call"]
    if call == "listen":
        s = new_sock(ep)
        if c.get("rcvbuf"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, c["rcvbuf"])
        s.listen(c.get("backlog", 128)); e["lsn"] = s; return "0"
    if call == "connect":
        s = new_sock(ep); e["conn"] = s
        if c.get("keepalive"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.connect(("127.0.0.1", ports[c.get("peer") or peer[ep]])); return "0"
    if call == "accept":
        s, _ = e["lsn"].accept()
        keep.append(s)  # an accepted socket nobody uses must not be closed by the GC
        if e["conn"] is None:
            e["conn"] = s
        return "0"
    if call == "send":
        e["conn"].sendall(b"x" * c["bytes"]); return str(c["bytes"])
    if call == "recv":
        return str(len(e["conn"].recv(c.get("bytes") or 1 << 20)))
    if call == "shutdown":
        e["conn"].shutdown(getattr(socket, c["how"])); return "0"
    if call in ("close", "abort"):
        s = e["conn"] or e["lsn"]
        if call == "abort":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        if e["conn"] is s:
            e["conn"] = None
        else:
            e["lsn"] = None
        return "0"
    raise ValueError(call)

script = sorted(enumerate(spec["script"]), key=lambda ic: (ic[1]["t_ms"], ic[0]))
order = [i for i, _ in script]
started = {i: threading.Event() for i in order}

def worker(ep, calls):
    for i, c in calls:
        delay = c["t_ms"] / 1000 - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        # calls at the same t_ms start in script order (the simulator's tie-break)
        for j in order[: order.index(i)]:
            cj = spec["script"][j]
            if cj["t_ms"] == c["t_ms"] and cj["endpoint"] != ep:
                started[j].wait(0.5)
                time.sleep(0.005)
        started[i].set()
        try:
            r = do(ep, c)
        except OSError as ex:
            r = errno.errorcode.get(ex.errno, str(ex.errno))
        with lock:
            out.append([ep, c["call"], r, round((time.monotonic() - t0) * 1000)])

threads = []
for ep in ports:
    calls = [(i, c) for i, c in script if c["endpoint"] == ep]
    if not calls:
        continue
    th = threading.Thread(target=worker, args=(ep, calls), daemon=True)
    th.start()
    threads.append(th)
deadline = t0 + spec["until_s"]
for th in threads:
    th.join(max(0.0, deadline - time.monotonic()))
time.sleep(max(0.0, deadline - time.monotonic()))
ss = os.popen("ss -tan").read()
ssi = os.popen("ss -tino").read()
netstat = open("/proc/net/netstat").read()
print(json.dumps({"results": out, "ss": ss, "ssi": ssi, "netstat": netstat}), flush=True)
sys.stdin.read()
os._exit(0)
"""
