"""The script's system calls on real sockets in the run's namespace, one handler each (an
explicit table), judged by the model runner's :func:`syscalls.done`. Every socket is
non-blocking underneath; a call the script makes blocking that would block becomes pending and
returns when the kernel lets it (connect, accept, read, write), as packetdrill's syscall
thread does while the script goes on."""

from __future__ import annotations

import errno as E
import fcntl
import select
import socket
import struct
import termios
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp.packetdrill import kernelwire as W
from app.sim.tcp.packetdrill.ast import ListArg, Name, StructArg, Syscall
from app.sim.tcp.packetdrill.syscalls import (
    O_NONBLOCK,
    O_RDWR,
    _bytes,
    _int,
    _name,
    done,
    judge_poll,
)

if TYPE_CHECKING:
    from app.sim.tcp.packetdrill.realkernel import KernelRun
    from app.sim.tcp.packetdrill.runner import LineResult

_LEVELS = {"SOL_SOCKET": socket.SOL_SOCKET, "IPPROTO_TCP": socket.IPPROTO_TCP, "SOL_TCP": 6}
_OPTS = {
    "SO_REUSEADDR": socket.SO_REUSEADDR,
    "SO_KEEPALIVE": socket.SO_KEEPALIVE,
    "SO_RCVBUF": socket.SO_RCVBUF,
    "SO_SNDBUF": socket.SO_SNDBUF,
    "SO_ERROR": socket.SO_ERROR,
    "TCP_NODELAY": socket.TCP_NODELAY,
}
_HOW = {"SHUT_RD": socket.SHUT_RD, "SHUT_WR": socket.SHUT_WR, "SHUT_RDWR": socket.SHUT_RDWR}


@dataclass(slots=True)
class KFd:
    sock: socket.socket
    nonblock: bool = False  # as the script set it (fcntl O_NONBLOCK)


@dataclass(slots=True)
class KPending:
    """A blocking call that has not returned yet."""

    res: LineResult
    node: Syscall
    fd: KFd | None  # None for a poll (it waits on the script's descriptors)
    op: str  # connect | accept | recv | send | poll
    want_ms: float
    count: int = 0  # bytes still to send / to read at most
    sent: int = 0
    tried: bool = False  # a send that has copied what it could once and now sleeps
    entries: list[StructArg] = field(default_factory=list)  # a poll's {fd, events}
    deadline: float = float("inf")  # a poll's timeout (script ms)

    @property
    def wants(self) -> str:
        """What wakes the loop: readable (r), writable (w) or a short tick (a poll)."""
        if self.op == "poll":
            return "tick"
        return "w" if self.op in ("connect", "send") else "r"

    def fileno(self) -> int:
        return self.fd.sock.fileno() if self.fd is not None else -1


def _errname(e: OSError) -> str:
    return E.errorcode.get(e.errno or 0, "EIO")


def _fd(k: KernelRun, n: Syscall, res: LineResult, t: float) -> KFd | None:
    fd = _int(n.args[0]) if n.args else None
    if fd is None or fd not in k.fds:
        done(k, res, n, -1, "EBADF", t, _want(k, n, t))
        return None
    return k.fds[fd]


def _want(k: KernelRun, n: Syscall, t: float) -> float:
    end = k.end_time(n, t)
    return t if end is None else end


def _finish(k: KernelRun, res: LineResult, n: Syscall, ret: int, err: str | None, t: float) -> None:
    done(k, res, n, ret, err, k.now_ms(), _want(k, n, t))


def _alloc(k: KernelRun, s: socket.socket, script_fd: int) -> int:
    """As in packetdrill, the number the script expects names the new descriptor."""
    fd = script_fd
    if fd < 0 or fd in k.fds:
        fd = 3
        while fd in k.fds:
            fd += 1
    s.setblocking(False)
    k.fds[fd] = KFd(s)
    return fd


def _block(
    k: KernelRun,
    n: Syscall,
    res: LineResult,
    f: KFd,
    op: str,
    t: float,
    count: int = 0,
    sent: int = 0,
) -> None:
    """The call would block: EAGAIN on a non-blocking descriptor (a send that copied some
    bytes first returns their count, as tcp_sendmsg_locked does), else it waits."""
    if f.nonblock:
        if sent:
            _finish(k, res, n, sent, None, t)
            return
        _finish(k, res, n, -1, "EINPROGRESS" if op == "connect" else "EAGAIN", t)
        return
    res.expected = {"call": n.name, "ret": n.ret, "errno": n.errno}
    k.pending.append(KPending(res, n, f, op, _want(k, n, t), count=count, sent=sent))


def sys_socket(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    if k.congestion is not None:  # see KernelRun.congestion
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, k.congestion.encode())
    _finish(k, res, n, _alloc(k, s, n.ret), None, t)


def _simple(k: KernelRun, n: Syscall, res: LineResult, t: float, call: Callable[[], None]) -> None:
    try:
        call()
    except OSError as e:
        _finish(k, res, n, -1, _errname(e), t)
        return
    _finish(k, res, n, 0, None, t)


def sys_bind(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    if (f := _fd(k, n, res, t)) is not None:
        _simple(k, n, res, t, lambda: f.sock.bind((W.LOCAL_IP, W.LOCAL_PORT)))


def sys_listen(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    backlog = _int(n.args[1]) if len(n.args) > 1 else None
    if (f := _fd(k, n, res, t)) is not None:
        _simple(k, n, res, t, lambda: f.sock.listen(backlog or 1))


def sys_connect(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    if (f := _fd(k, n, res, t)) is None:
        return
    err = f.sock.connect_ex((W.REMOTE_IP, W.LOCAL_PORT))
    k.remote_port = W.LOCAL_PORT  # the peer listens on packetdrill's port
    if err == 0:
        _finish(k, res, n, 0, None, t)
    elif err == E.EINPROGRESS:
        _block(k, n, res, f, "connect", t)
    else:
        _finish(k, res, n, -1, E.errorcode.get(err, "EIO"), t)


def sys_accept(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    if (f := _fd(k, n, res, t)) is None:
        return
    if not _try(k, KPending(res, n, f, "accept", _want(k, n, t))):
        _block(k, n, res, f, "accept", t)


def sys_send(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    count = _bytes(n)
    if (f := _fd(k, n, res, t)) is None:
        return
    p = KPending(res, n, f, "send", _want(k, n, t), count=count or 0)
    if not _try(k, p):
        _block(k, n, res, f, "send", t, count=p.count, sent=p.sent)


def sys_recv(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    count = _bytes(n)
    if (f := _fd(k, n, res, t)) is None:
        return
    p = KPending(res, n, f, "recv", _want(k, n, t), count=count or 0)
    if not _try(k, p):
        _block(k, n, res, f, "recv", t, count=p.count)


def sys_close(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    if (f := _fd(k, n, res, t)) is not None:
        k.fds = {fd: v for fd, v in k.fds.items() if v is not f}
        _simple(k, n, res, t, f.sock.close)


def sys_shutdown(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    how = _HOW.get(_name(n.args[1]) or "") if len(n.args) > 1 else None
    if how is None:
        res.status = "unsupported"
        res.reasons.append(msg("not supported: {what}", what="shutdown how"))
    elif (f := _fd(k, n, res, t)) is not None:
        _simple(k, n, res, t, lambda: f.sock.shutdown(how))


def _opt(n: Syscall) -> tuple[int, int] | None:
    level = _LEVELS.get(_name(n.args[1]) or "") if len(n.args) > 2 else None
    name = _name(n.args[2]) if len(n.args) > 2 else None
    if level is None or name is None:
        return None
    if name == "SO_LINGER":
        return level, socket.SO_LINGER
    return (level, _OPTS[name]) if name in _OPTS else None


def sys_setsockopt(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    opt = _opt(n)
    val = n.args[3] if len(n.args) > 3 else None
    if isinstance(val, ListArg) and val.items and isinstance(val.items[0], StructArg):
        val = val.items[0]
    if isinstance(val, StructArg):
        on, secs = _int(val.get("onoff")), _int(val.get("linger"))
        value: int | bytes | None = None if on is None or secs is None else _linger(on, secs)
    else:
        value = _int(val)
    if opt is None or value is None:
        res.status = "unsupported"
        res.reasons.append(msg("not supported: {what}", what=f"setsockopt {n.args[2:3]}"))
        return
    if (f := _fd(k, n, res, t)) is not None:
        _simple(k, n, res, t, lambda: f.sock.setsockopt(opt[0], opt[1], value))


def _linger(on: int, secs: int) -> bytes:
    return struct.pack("ii", on, secs)


def sys_getsockopt(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    opt = _opt(n)
    if opt is None or opt[1] == socket.SO_LINGER:
        res.status = "unsupported"
        res.reasons.append(msg("not supported: {what}", what="getsockopt"))
        return
    if (f := _fd(k, n, res, t)) is None:
        return
    value = f.sock.getsockopt(opt[0], opt[1])
    _finish(k, res, n, 0, None, t)
    want = n.args[3] if len(n.args) > 3 else None
    shown: int | str = (
        E.errorcode.get(value, value) if opt[1] == socket.SO_ERROR and value else value
    )
    res.got = {**(res.got or {}), "value": shown}
    expect = _int(want)
    if expect is None and isinstance(want, ListArg) and want.items:
        expect_name = _name(want.items[0])
        if expect_name is not None and expect_name != shown:
            res.fail("value", msg("value {got}, expected {want}", got=shown, want=expect_name))
    elif expect is not None and expect != shown:
        res.fail("value", msg("value {got}, expected {want}", got=shown, want=expect))


def sys_fcntl(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    cmd = _name(n.args[1]) if len(n.args) > 1 else None
    if (f := _fd(k, n, res, t)) is None:
        return
    if cmd == "F_GETFL":
        _finish(k, res, n, O_RDWR | (O_NONBLOCK if f.nonblock else 0), None, t)
    elif cmd == "F_SETFL" and len(n.args) > 2:
        arg = n.args[2]
        names = arg.names if hasattr(arg, "names") else ()
        f.nonblock = "O_NONBLOCK" in names or (isinstance(arg, int) and bool(arg & O_NONBLOCK))
        _finish(k, res, n, 0, None, t)
    else:
        res.status = "unsupported"
        res.reasons.append(msg("not supported: {what}", what=f"fcntl {cmd}"))


_POLL_BITS = {
    "POLLIN": select.POLLIN,
    "POLLPRI": select.POLLPRI,
    "POLLOUT": select.POLLOUT,
    "POLLERR": select.POLLERR,
    "POLLHUP": select.POLLHUP,
    "POLLNVAL": select.POLLNVAL,
    "POLLRDNORM": select.POLLRDNORM,
    "POLLWRNORM": select.POLLWRNORM,
    "POLLRDHUP": 0x2000,
}


def poll_now(k: KernelRun, entries: list[StructArg]) -> list[set[str]]:
    """Each entry's revents, asked of the kernel now (poll with a zero timeout)."""
    got: list[set[str]] = []
    for e in entries:
        fd = _int(e.get("fd"))
        ev = e.get("events")
        asked = set(ev.names) if isinstance(ev, Name) else set()
        f = k.fds.get(fd if fd is not None else -1)
        if f is None:
            got.append({"POLLNVAL"})
            continue
        mask = 0
        for name in asked:
            mask |= _POLL_BITS.get(name, 0)
        p = select.poll()
        p.register(f.sock.fileno(), mask)
        bits = p.poll(0)[0][1] if p.poll(0) else 0
        got.append({name for name, bit in _POLL_BITS.items() if bit and bits & bit})
    return got


def sys_poll(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    """poll(): answered now when a descriptor is ready or the timeout is 0; else pending until
    one is or its timeout passes (-1: none), judged by the model runner's judge_poll."""
    fds = n.args[0] if n.args else None
    timeout = _int(n.args[2]) if len(n.args) > 2 else 0
    if not isinstance(fds, ListArg) or not all(isinstance(x, StructArg) for x in fds.items):
        res.status = "unsupported"
        res.reasons.append(msg("poll without a list of {what}", what="{fd, events}"))
        return
    entries = [x for x in fds.items if isinstance(x, StructArg)]
    deadline = t + timeout if timeout is not None and timeout >= 0 else float("inf")
    p = KPending(res, n, None, "poll", _want(k, n, t), entries=entries, deadline=deadline)
    res.expected = {"call": n.name, "ret": n.ret, "errno": n.errno}
    if not _try_poll(k, p):
        k.pending.append(p)


def _try_poll(k: KernelRun, p: KPending) -> bool:
    got = poll_now(k, p.entries)
    now = k.now_ms()
    if not any(got) and now < p.deadline:
        return False
    at = now if any(got) else p.deadline
    judge_poll(k, p.res, p.node, p.entries, got, at, p.want_ms)
    return True


def _ended(s: socket.socket) -> bool:
    """The socket has an error or is shut down, read without consuming sk_err: tcp_poll
    (net/ipv4/tcp.c lines 545 and 594) says POLLHUP for SHUTDOWN_MASK or TCP_CLOSE (a reset
    or a timeout ends in tcp_done), POLLERR while sk_err is set."""
    po = select.poll()
    po.register(s, select.POLLOUT)
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in po.poll(0))


def _try(k: KernelRun, p: KPending) -> bool:
    """Try the call once more without blocking; True when it returned (and was judged)."""
    assert p.fd is not None  # only a poll has none
    s = p.fd.sock
    try:
        if p.op == "connect":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                done(k, p.res, p.node, -1, E.errorcode.get(err, "EIO"), k.now_ms(), p.want_ms)
                return True
            s.getpeername()  # ENOTCONN while the handshake is under way
            ret = 0
        elif p.op == "accept":
            conn, _ = s.accept()
            ret = _alloc(k, conn, p.node.ret)
        elif p.op == "recv":
            ret = len(s.recv(p.count))
        else:
            # a blocking writer sleeps in sk_stream_wait_memory until sk_stream_write_space
            # wakes it, which is when tcp_poll would say POLLOUT (__sk_stream_is_writeable):
            # after its first go, the socket (non-blocking underneath) is only tried then,
            # not whenever memory is free
            if p.tried and not select.select([], [s], [], 0)[1]:
                return False
            if p.tried and p.sent and _ended(s):
                # sk_stream_wait_memory woke on sk_err or SEND_SHUTDOWN: tcp_sendmsg_locked's
                # do_error returns the bytes copied and leaves sk_err for the next call
                # (net/core/stream.c line 133, net/ipv4/tcp.c line 1468); a send() here
                # would consume it (sk_stream_wait_connect's sock_error)
                done(k, p.res, p.node, p.sent, None, k.now_ms(), p.want_ms)
                return True
            p.tried = True
            while p.sent < p.count:
                p.sent += s.send(bytes(min(p.count - p.sent, 65536)))
            ret = p.sent
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as e:
        if p.op == "connect" and e.errno == E.ENOTCONN:
            return False
        if p.op == "send" and p.sent:  # an error after some bytes: their count (do_error)
            done(k, p.res, p.node, p.sent, None, k.now_ms(), p.want_ms)
            return True
        done(k, p.res, p.node, -1, _errname(e), k.now_ms(), p.want_ms)
        return True
    done(k, p.res, p.node, ret, None, k.now_ms(), p.want_ms)
    return True


def try_pending(k: KernelRun, p: KPending) -> bool:
    return _try_poll(k, p) if p.op == "poll" else _try(k, p)


Handler = Callable[["KernelRun", Syscall, "LineResult", float], None]


def sys_ioctl(k: KernelRun, n: Syscall, res: LineResult, t: float) -> None:
    """``ioctl(fd, SIOCINQ, [N])`` on the kernel's socket (FIONREAD is the same request)."""
    if (f := _fd(k, n, res, t)) is None:
        return
    try:
        raw = fcntl.ioctl(f.sock.fileno(), termios.FIONREAD, struct.pack("i", 0))
    except OSError as e:
        _finish(k, res, n, -1, E.errorcode.get(e.errno or 0, "EIO"), t)
        return
    value = int(struct.unpack("i", raw)[0])
    _finish(k, res, n, 0, None, t)
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
