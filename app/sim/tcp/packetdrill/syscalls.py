"""The script's system calls, one handler each (an explicit table): the socket calls the model
has (listen, connect, accept, send, recv, shutdown, close) go to app.sim.tcp.calls through
:meth:`app.sim.tcp.driver.Sim.on_call`; the ones that only touch the descriptor (socket,
bind, setsockopt, getsockopt, fcntl, poll) are answered here from the model's socket."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.sim.core.i18n import Message, msg
from app.sim.tcp import sndbuf, tcp_output
from app.sim.tcp.packetdrill.ast import Arg, Elided, ListArg, Name, StructArg, Syscall
from app.sim.tcp.params import Call
from app.sim.tcp.sock import Sock, so_sndbuf

if TYPE_CHECKING:
    from app.sim.tcp.packetdrill.runner import LineResult, Pending, Runner

O_NONBLOCK = 0x800
O_RDWR = 2
SOL_RCVBUF_ARGS = 3  # setsockopt(fd, level, name, value, len): the value is argument 3
SOCKOPTS = ("SO_REUSEADDR", "SO_LINGER", "TCP_NODELAY", "SO_RCVBUF", "SO_SNDBUF", "SO_KEEPALIVE")


def syscall(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    res.t_ms = round(t, 3)
    HANDLERS[n.name](r, n, res, t)


def unsupported(res: LineResult, what: str | Message) -> None:
    res.status = "unsupported"
    res.reasons.append(msg("not supported: {what}", what=what))


def _int(a: Arg | None) -> int | None:
    if isinstance(a, ListArg) and len(a.items) == 1:
        a = a.items[0]
    return a if isinstance(a, int) else None


def _name(a: Arg | None) -> str | None:
    return a.names[0] if isinstance(a, Name) and len(a.names) == 1 else None


def _fd(r: Runner, n: Syscall, res: LineResult) -> int | None:
    """The call's descriptor if the script opened it; else the call fails with EBADF."""
    fd = _int(n.args[0]) if n.args else None
    if fd is None or fd not in r.fds:
        done(r, res, n, -1, "EBADF", r.sim.now, r.sim.now)
        return None
    return fd


def expected(n: Syscall, at: float) -> dict[str, Any]:
    return {"call": n.name, "ret": n.ret, "errno": n.errno, "t_ms": round(at, 3)}


class Tolerance(Protocol):
    """What :func:`done` reads of a runner (the model's or the real kernel's)."""

    @property
    def tol(self) -> float: ...


def done(
    r: Tolerance,
    res: LineResult,
    n: Syscall,
    ret: int,
    errno: str | None,
    at: float,
    want_at: float,
) -> None:
    """Compare what the call returned (and when) with the script's expectation."""
    res.expected = expected(n, want_at)
    res.got = {"call": n.name, "ret": ret, "errno": errno, "t_ms": round(at, 3)}
    if ret != n.ret:
        got = f"{ret} {errno}" if errno else str(ret)
        want = f"{n.ret} {n.errno}" if n.errno else str(n.ret)
        res.fail("ret", msg("returned {got}, expected {want}", got=got, want=want))
    elif n.errno is not None and errno != n.errno:
        res.fail("errno", msg("errno {got}, expected {want}", got=errno or "-", want=n.errno))
    if abs(at - want_at) > r.tol + 1e-9:
        res.fail(
            "time",
            msg(
                "returned at {got} ms, expected {want} ms (tolerance {tol} ms)",
                got=round(at, 3),
                want=round(want_at, 3),
                tol=r.tol,
            ),
        )


def model_call(r: Runner, n: Syscall, res: LineResult, t: float, fd: int, c: Call) -> None:
    """Hand the call to the model; it answers now or (blocked) in a later frame."""
    from app.sim.tcp.packetdrill.runner import Pending

    want = r.end_time(n, t)
    res.expected = expected(n, want)
    r.pending.append(Pending(res, n, c.call if c.call != "abort" else "abort", want, fd))
    r.sim.on_call(c)


def finish(r: Runner, p: Pending, result: str) -> None:
    """A model call returned ``result`` (``"0"``, a byte count or an errno name)."""
    errno: str | None = None
    ret = -1
    if result.startswith("E"):
        errno = result
    elif p.call == "accept":
        ret = _alloc(r, "conn", p.node.ret)
    else:
        ret = int(result)
    fdo = r.fds.get(p.fd)
    if p.call == "connect" and fdo is not None and errno in (None, "EINPROGRESS"):
        fdo.kind = "conn"
    done(r, p.res, p.node, ret, errno, r.sim.now, p.expect_ms)


def _alloc(r: Runner, kind: str, script_fd: int) -> int:
    """A new descriptor. As in packetdrill, the number the script expects names it (script
    fds are mapped to live ones), so it is not a check; else the lowest free from 3."""
    from app.sim.tcp.packetdrill.runner import Fd

    fd = script_fd
    if fd < 0 or fd in r.fds:
        fd = 3
        while fd in r.fds:
            fd += 1
    r.fds[fd] = Fd(kind)
    return fd


def _call(r: Runner, call: str, **kw: Any) -> Call:
    return Call(t_ms=r.sim.now, endpoint=r.local, call=call, **kw)


# --- handlers ------------------------------------------------------------------------------------
def sys_socket(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    if any(f.kind in ("socket", "conn") for f in r.fds.values()):
        unsupported(res, msg("a second connection socket (the model has one per endpoint)"))
        return
    fd = _alloc(r, "socket", n.ret)
    kind = n.args[1] if len(n.args) > 1 else None
    r.fds[fd].nonblock = isinstance(kind, Name) and "SOCK_NONBLOCK" in kind.names
    done(r, res, n, fd, None, t, r.end_time(n, t))


def _flags_unsupported(n: Syscall, res: LineResult) -> bool:
    """send/recv flags the model has no meaning for (MSG_EOR, MSG_PEEK, …): unsupported."""
    flags = n.args[3] if len(n.args) > 3 else 0
    if flags == 0 or isinstance(flags, Elided):
        return False
    names = ",".join(flags.names) if isinstance(flags, Name) else str(flags)
    unsupported(res, f"{n.name} flags {names}")
    return True


def sys_bind(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    if _fd(r, n, res) is not None:
        done(r, res, n, 0, None, t, r.end_time(n, t))


def sys_listen(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is None:
        return
    r.fds[fd].kind = "listener"
    backlog = _int(n.args[1]) if len(n.args) > 1 else None
    model_call(r, n, res, t, fd, _call(r, "listen", backlog=max(0, min(backlog or 0, 4096))))


def _nodelay(r: Runner, fd: int) -> bool:
    """TCP_NODELAY set on the descriptor (a listener's passes to its children)."""
    return bool(r.fds[fd].opts.get("TCP_NODELAY"))


def sys_connect(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is not None:
        c = _call(r, "connect", nonblock=r.fds[fd].nonblock, nodelay=_nodelay(r, fd))
        model_call(r, n, res, t, fd, c)


def sys_accept(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is not None:
        model_call(r, n, res, t, fd, _call(r, "accept", nodelay=_nodelay(r, fd)))


def _bytes(n: Syscall) -> int | None:
    v = _int(n.args[2]) if len(n.args) > 2 else None
    return v if v is not None and 0 < v <= 10_000_000 else None


def sys_send(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    size = _bytes(n)
    if fd is None or _flags_unsupported(n, res):
        return
    if size is None:
        unsupported(
            res, msg("a send size the model cannot take (1 to {max} bytes)", max=10_000_000)
        )
        return
    model_call(r, n, res, t, fd, _call(r, "send", bytes=size, nonblock=r.fds[fd].nonblock))


def sys_recv(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is not None and not _flags_unsupported(n, res):
        model_call(r, n, res, t, fd, _call(r, "recv", bytes=_bytes(n)))


def sys_close(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is None:
        return
    fdo = r.fds.pop(fd)
    ep = r.sim.ep
    if fdo.kind == "socket":
        done(r, res, n, 0, None, t, r.end_time(n, t))
        return
    c = _call(r, "abort" if fdo.linger0 else "close")
    if fdo.kind == "listener":
        held, ep.fd = ep.fd, None  # close the listener, not the accepted socket
        model_call(r, n, res, t, fd, c)
        ep.fd = held
        return
    model_call(r, n, res, t, fd, c)


def sys_shutdown(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    how = _name(n.args[1]) if len(n.args) > 1 else None
    if fd is None:
        return
    if how not in ("SHUT_RD", "SHUT_WR", "SHUT_RDWR"):
        unsupported(res, f"shutdown how {how}")
        return
    model_call(r, n, res, t, fd, _call(r, "shutdown", how=how))


def sys_setsockopt(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is None:
        return
    opt = _name(n.args[2]) if len(n.args) > 2 else None
    val = n.args[3] if len(n.args) > 3 else None
    if opt not in SOCKOPTS:
        unsupported(res, f"setsockopt {opt}")
        return
    fdo = r.fds[fd]
    if opt == "SO_LINGER":
        s = val.items[0] if isinstance(val, ListArg) and val.items else val
        on = s.get("onoff") if isinstance(s, StructArg) else None
        secs = s.get("linger") if isinstance(s, StructArg) else None
        fdo.linger0 = on == 1 and secs == 0
        fdo.opts[opt] = 1 if on == 1 else 0
    else:
        v = _int(val)
        if v is None:
            unsupported(res, f"setsockopt {opt} value")
            return
        # sock_setsockopt doubles SO_RCVBUF/SO_SNDBUF for bookkeeping overhead
        fdo.opts[opt] = 2 * v if opt == "SO_RCVBUF" else v
        sk = r.sim.ep.fd
        live = fdo.kind == "conn" and isinstance(sk, Sock)
        if opt == "SO_SNDBUF":
            fdo.opts[opt] = so_sndbuf(v)
            if live and isinstance(sk, Sock):
                sndbuf.set_sndbuf(r.sim, sk, v)  # a live socket's: app.sim.tcp.sndbuf
        if opt == "TCP_NODELAY" and live and isinstance(sk, Sock):
            # __tcp_sock_set_nodelay: TCP_NAGLE_OFF, and what Nagle held goes now
            sk.nodelay = bool(v)
            if v:
                tcp_output.push(r.sim, sk, force=True)
    done(r, res, n, 0, None, t, r.end_time(n, t))


def sys_getsockopt(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is None:
        return
    opt = _name(n.args[2]) if len(n.args) > 2 else None
    want = n.args[3] if len(n.args) > 3 else None
    fdo = r.fds[fd]
    if opt == "SO_ERROR":
        sk = r.sim.ep.fd
        err = sk.err if isinstance(sk, Sock) else None
        if isinstance(sk, Sock):
            sk.err = None  # sock_error reads and clears sk_err
        value: int | str = err or 0
    elif opt == "SO_SNDBUF" and fdo.kind == "conn" and isinstance(r.sim.ep.fd, Sock):
        value = r.sim.ep.fd.sndbuf  # sk_sndbuf, grown by tcp_sndbuf_expand unless locked
    elif opt in fdo.opts:
        value = fdo.opts[opt]
    elif opt == "SO_SNDBUF":
        value = r.sim.p.sysctl.tcp_wmem[1]  # tcp_init_sock
    else:
        unsupported(res, msg("getsockopt {opt} (the model has no value for it)", opt=str(opt)))
        return
    done(r, res, n, 0, None, t, r.end_time(n, t))
    res.got = {**(res.got or {}), "value": value}
    expect = (
        _int(want)
        if _int(want) is not None
        else _name(want.items[0] if isinstance(want, ListArg) and want.items else want)
    )
    if expect is not None and expect != value:
        res.fail("value", msg("value {got}, expected {want}", got=value, want=expect))


def sys_fcntl(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    fd = _fd(r, n, res)
    if fd is None:
        return
    cmd = _name(n.args[1]) if len(n.args) > 1 else None
    fdo = r.fds[fd]
    if cmd == "F_SETFL" and len(n.args) > 2:
        flags = n.args[2]
        names = flags.names if isinstance(flags, Name) else ()
        fdo.nonblock = "O_NONBLOCK" in names or (
            isinstance(flags, int) and bool(flags & O_NONBLOCK)
        )
        done(r, res, n, 0, None, t, r.end_time(n, t))
    elif cmd == "F_GETFL":
        done(r, res, n, O_RDWR | (O_NONBLOCK if fdo.nonblock else 0), None, t, r.end_time(n, t))
    else:
        unsupported(res, f"fcntl {cmd}")


POLL_BITS = ("POLLIN", "POLLOUT", "POLLERR", "POLLHUP", "POLLRDHUP", "POLLRDNORM", "POLLWRNORM")


def revents(r: Runner, fd: int) -> set[str]:
    """tcp_poll's answer for the model's socket (tcp.c): readable data or a FIN, writable once
    connected while the send buffer is writeable (app.sim.tcp.sndbuf), errors and hang-ups."""
    fdo = r.fds.get(fd)
    ep = r.sim.ep
    out: set[str] = set()
    if fdo is None:
        return {"POLLNVAL"}
    if fdo.kind == "listener":
        if ep.listener is not None and ep.listener.accept_q:
            out |= {"POLLIN", "POLLRDNORM"}
        return out
    sk = ep.fd
    if not isinstance(sk, Sock):
        return {"POLLOUT", "POLLHUP", "POLLWRNORM"} if fdo.kind == "socket" else {"POLLHUP"}
    if sk.err is not None:
        out.add("POLLERR")
    if sk.state == "CLOSE" or (sk.rcv_shut and sk.snd_shut):
        out.add("POLLHUP")
    if sk.sock_done or sk.rcv_shut:
        out |= {"POLLIN", "POLLRDNORM", "POLLRDHUP"}
    if sk.state in ("SYN_SENT", "SYN_RECV"):
        return out
    if sk.recv_q > 0:
        out |= {"POLLIN", "POLLRDNORM"}
    if not sk.snd_shut and sk.state in ("ESTABLISHED", "CLOSE_WAIT"):
        # tcp_poll (net/ipv4/tcp.c line 565): writeable, else SOCK_NOSPACE so that ACKs
        # freeing space run sk_stream_write_space
        if sndbuf.is_writeable(r.sim, sk):
            out |= {"POLLOUT", "POLLWRNORM"}
        else:
            sk.nospace = True
    return out


@dataclass(slots=True)
class PendingPoll:
    """A poll() still waiting: for an event on its descriptors or its timeout."""

    res: LineResult
    node: Syscall
    entries: list[StructArg]
    deadline: float
    expect_ms: float


def poll_ready(r: Runner, entries: list[StructArg]) -> tuple[int, list[set[str]]]:
    got: list[set[str]] = []
    for e in entries:
        fd = _int(e.get("fd"))
        ev = e.get("events")
        asked = set(ev.names) if isinstance(ev, Name) else set()
        got.append(revents(r, fd if fd is not None else -1) & (asked | {"POLLERR", "POLLHUP"}))
    return sum(1 for g in got if g), got


def sys_poll(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    """poll(): answered now when a descriptor is ready or the timeout is 0; else it waits
    (while the script's later lines run) for an event or its timeout (-1: none)."""
    fds = n.args[0] if n.args else None
    timeout = _int(n.args[2]) if len(n.args) > 2 else 0
    if not isinstance(fds, ListArg) or not all(isinstance(x, StructArg) for x in fds.items):
        unsupported(res, msg("poll without a list of {what}", what="{fd, events}"))
        return
    entries = [x for x in fds.items if isinstance(x, StructArg)]
    deadline = t + timeout if timeout is not None and timeout >= 0 else float("inf")
    pp = PendingPoll(res, n, entries, deadline, r.end_time(n, t))
    res.expected = expected(n, pp.expect_ms)
    if not check_poll(r, pp):
        r.polls.append(pp)


def check_poll(r: Runner, pp: PendingPoll) -> bool:
    """Finish ``pp`` if a descriptor is ready or its timeout has passed; True if finished."""
    count, got = poll_ready(r, pp.entries)
    now = r.sim.now
    if count == 0 and now < pp.deadline:
        return False
    at = now if count else pp.deadline
    judge_poll(r, pp.res, pp.node, pp.entries, got, at, pp.expect_ms)
    return True


def judge_poll(
    r: Tolerance,
    res: LineResult,
    n: Syscall,
    entries: list[StructArg],
    got: list[set[str]],
    at: float,
    expect_ms: float,
) -> None:
    """Compare a poll's answer (``got``: each entry's revents, returned at ``at``) with the
    script's: the count, the time and each ``revents`` written. Shared with the kernel run."""
    count = sum(1 for g in got if g)
    done(r, res, n, count, None, at, expect_ms)
    res.got = {**(res.got or {}), "revents": ["|".join(sorted(g)) or "0" for g in got]}
    for e, g in zip(entries, got, strict=True):
        want = e.get("revents")
        wanted = set(want.names) if isinstance(want, Name) else set() if want == 0 else None
        if wanted is not None and wanted != g:
            res.fail(
                "revents",
                msg(
                    "revents {got}, expected {want}",
                    got="|".join(sorted(g)) or "0",
                    want="|".join(sorted(wanted)) or "0",
                ),
            )


Handler = Callable[["Runner", Syscall, "LineResult", float], None]


def sys_ioctl(r: Runner, n: Syscall, res: LineResult, t: float) -> None:
    """``ioctl(fd, SIOCINQ, [N])``: tcp_ioctl (net/ipv4/tcp.c line 602) answers tcp_inq,
    the bytes received and not read yet (0 in SYN_SENT/SYN_RECV; EINVAL on a listener)."""
    fd = _fd(r, n, res)
    if fd is None:
        return
    if r.fds[fd].kind == "listener":
        done(r, res, n, -1, "EINVAL", t, r.end_time(n, t))
        return
    sk = r.sim.ep.fd
    value = sk.recv_q if isinstance(sk, Sock) and sk.state not in ("SYN_SENT", "SYN_RECV") else 0
    done(r, res, n, 0, None, t, r.end_time(n, t))
    res.got = {**(res.got or {}), "value": value}
    want = _int(n.args[2]) if len(n.args) > 2 else None
    if want is not None and want != value:
        res.fail("value", msg("value {got}, expected {want}", got=value, want=want))


HANDLERS: dict[str, Handler] = {
    "socket": sys_socket,
    "bind": sys_bind,
    "listen": sys_listen,
    "accept": sys_accept,
    "connect": sys_connect,
    "write": sys_send,
    "send": sys_send,
    "sendto": sys_send,
    "read": sys_recv,
    "recv": sys_recv,
    "recvfrom": sys_recv,
    "close": sys_close,
    "shutdown": sys_shutdown,
    "setsockopt": sys_setsockopt,
    "getsockopt": sys_getsockopt,
    "fcntl": sys_fcntl,
    "poll": sys_poll,
    "ioctl": sys_ioctl,
}
