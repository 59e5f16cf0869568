"""The Chromium that draws PNG exports: one per app worker, started on the first PNG, kept for
the next ones, and driven from one thread.

Starting Playwright's driver and a Chromium for every PNG took about 1.3 s of CPU each, and the
processes of each (several hundred MB, summed) came and went with every export. Now one
:class:`BrowserThread` per app worker owns one Chromium (and the driver that started it), and
each PNG gets a fresh browser context and page of its own, closed after it:

* **one thread**: Playwright's sync API is bound to the thread that started it, so every call
  (launch, each PNG's page, close) runs on the thread named ``png``, whose CPU priority is
  lowered first (:func:`lower_thread_priority`): Linux keeps a nice value per thread and a
  process started from it begins with it, so the driver and Chromium run at that priority.
* **started lazily, replaced when gone**: the first PNG launches it; a browser found dead
  (killed, crashed, disconnected) is replaced by a new one before the next PNG, and a PNG whose
  page cannot be opened in a reused browser is tried once more in a new one.
* **recycled**: after :attr:`Recycle.pngs` PNGs, or when its processes hold more than
  :attr:`Recycle.rss_mb` MB (resident, summed), it is closed after the PNG it drew; the next
  PNG starts a new one. After :attr:`Recycle.idle_s` s without a PNG it is closed too: an idle
  server holds no Chromium.
* **one at a time in the server**: a Chromium and its driver take about 550-700 MB resident
  (summed over their processes), and each app worker kept one: the soaks of issue 24 saw 2.1 GB
  of browsers at once. A worker holds a lock file of the server's (:class:`ServerLock`: ``flock``
  on a file named after uvicorn's master, so every worker of one server shares it) for as long
  as its browser lives; a worker that has a PNG to draw waits for it (within the drawing's
  time limit) and says so, and the holder closes its browser after the PNG it is drawing, or at
  once when idle, when another waits.
* **stopped from outside**: :meth:`BrowserThread.kill` SIGKILLs the browser's processes from
  any thread (the hard timeout of a drawing); the Playwright call under way fails at once.
* **dies with its worker**: the driver reads its commands from a pipe of the app worker's and
  exits when that pipe closes, closing the browser (whose own pipe to the driver closes too:
  Chromium exits without its driver). A process forked from the worker (a simulation process)
  would inherit a copy of that pipe and keep the driver alive after the worker, so a fork's
  child swaps the driver's pipes for ``/dev/null`` at once (``os.register_at_fork``).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import queue
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.web.libc import LIBC

if TYPE_CHECKING:
    from playwright.sync_api import Browser

log = logging.getLogger("stepscope")
T = TypeVar("T")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebGL charts draw in software on a server without a GPU
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    # fewer processes, each holding its own copy of Chromium's libraries and heap (its summed
    # resident memory with the driver's: about 690 -> 530 MB after a PNG): the GPU work in the
    # browser process, no zygote, one renderer for every page
    "--in-process-gpu",
    "--no-zygote",
    "--renderer-process-limit=1",
]
# A switch Chromium ignores, on the browser process's command line: how its processes are
# found (to measure, to kill), whatever else this process runs.
MARK_SWITCH = "--stepscope-png-browser"
PR_CAPBSET_DROP = 24  # linux/prctl.h
CAP_SYS_NICE = 23  # linux/capability.h
CLOSE_S = 5.0  # closing a browser and its driver takes this long at most (then SIGKILL)
DRIVER_GRACE_S = 5.0  # a drawing that outlived the browser's kill by this long: the driver too


@dataclass(frozen=True, slots=True)
class Recycle:
    """When the browser is replaced: after ``pngs`` PNGs, or when its processes (the driver's
    and Chromium's) hold over ``rss_mb`` MB resident, summed; closed after ``idle_s`` s without
    a PNG. 0: never, for each."""

    pngs: int = 200
    rss_mb: float = 1024.0
    idle_s: float = 5.0


WAIT_POLL_S = 0.05  # a worker waiting for the server's browser lock tries this often
IDLE_POLL_S = 0.25  # an idle browser's thread looks this often whether another worker waits


class BrowserBusy(OSError):
    """Another app worker's browser did not close within the time a drawing may take (an
    OSError: the browser could not be started, as when it cannot be run)."""

    def __init__(self) -> None:
        super().__init__("another app worker's PNG browser is still drawing")


def server_lock_path() -> Path | None:
    """The lock file every app worker of this server shares, named after the process that
    started them (uvicorn's master with ``--workers``); ``None`` for an app that runs alone (one
    process: nothing to share a browser with — and several apps in one process, as tests make
    them, would otherwise wait on each other's lock for good)."""
    import multiprocessing

    master = multiprocessing.parent_process()
    if master is None or master.pid is None or master.pid != os.getppid():
        return None
    return Path(tempfile.gettempdir()) / f"stepscope-png-{os.getuid()}-{master.pid}.lock"


class ServerLock:
    """At most one browser in the server (see the module's docstring): an exclusive ``flock``
    on ``path`` while a browser lives, and a shared one on ``path``+``.wait`` while waiting for
    it, which the holder sees (:meth:`wanted`). ``None``: no lock (every worker its own)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None
        self._wait_fd: int | None = None
        self.held = False

    def _open(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        if self._fd is None or self._wait_fd is None:
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
            self._fd = os.open(self.path, flags, 0o600)
            self._wait_fd = os.open(f"{self.path}.wait", flags, 0o600)
        return self._fd, self._wait_fd

    def acquire(self, timeout_s: float) -> None:
        """Hold the lock (:class:`BrowserBusy` if another worker's browser lives on past
        ``timeout_s``)."""
        fds = self._open()
        if fds is None or self.held:
            self.held = True
            return
        fd, wait_fd = fds
        deadline = time.monotonic() + timeout_s
        fcntl.flock(wait_fd, fcntl.LOCK_SH)  # the holder sees someone waits
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise BrowserBusy from None
                    time.sleep(WAIT_POLL_S)
        finally:
            fcntl.flock(wait_fd, fcntl.LOCK_UN)
        self.held = True

    def wanted(self) -> bool:
        """Whether another worker waits for the lock (held here)."""
        fds = self._open()
        if fds is None or not self.held:
            return False
        try:
            fcntl.flock(fds[1], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fds[1], fcntl.LOCK_UN)
        return False

    def release(self) -> None:
        if self.held and self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.held = False

    def close(self) -> None:
        self.release()
        for fd in (self._fd, self._wait_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._wait_fd = None


# --- processes -----------------------------------------------------------------------------------


def _proc_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _descendants(root: int, children: dict[int, list[int]]) -> set[int]:
    out: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (exists and is not a zombie waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def browser_pids() -> set[int]:
    """The Chromium browser processes this process started (through Playwright's driver)."""
    found = set()
    for pid in _descendants(os.getpid(), _proc_children()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"--remote-debugging-pipe" in cmdline:
            found.add(pid)
    return found


def _has(pid: int, arg: str) -> bool:
    """Whether process ``pid`` runs with ``arg`` on its command line."""
    try:
        return arg.encode() + b"\0" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _marked(mark: str) -> set[int]:
    """The processes under this one whose command line holds the switch ``mark``."""
    return {pid for pid in _descendants(os.getpid(), _proc_children()) if _has(pid, mark)}


def kill_browsers(pids: set[int]) -> None:
    """SIGKILL these browsers and every process under them (renderers, GPU, zygotes)."""
    children = _proc_children()
    victims = set(pids)
    for pid in pids:
        victims |= _descendants(pid, children)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


def tree_rss_mb(root: int) -> float:
    """Resident MB of ``root`` and every process under it, summed (0.0 where not known)."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    break
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total / 1024


_LIBC = LIBC


def drop_priority_raising() -> bool:
    """Take ``CAP_SYS_NICE`` out of the calling thread's capability bounding set (Linux: the
    set is per thread, and every process started from the thread inherits it), so no program
    it starts can raise its own CPU priority. Chromium sets a nice value of its own on each of
    its threads (0, and -8 for the ones that draw) where it may: run as root, it undid the
    lowered priority it was started with. Without the capability, ``setpriority`` to a lower
    nice value than a thread has fails with EACCES unless ``RLIMIT_NICE`` allows it (Linux 6.4:
    ``set_one_prio`` in kernel/sys.c:196, ``can_nice`` in kernel/sched/core.c:7238). Answers
    whether the kernel took it (not root: the capability is not there to drop)."""
    if _LIBC is None:
        return False
    try:
        return int(_LIBC.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)) == 0
    except AttributeError:  # not Linux
        return False


def lower_thread_priority(nice: int) -> None:
    """Lower the CPU priority of the calling thread by ``nice`` (Linux keeps a nice value per
    thread, and a process started from the thread begins with it: Playwright's driver and the
    Chromium it starts, several processes that took a whole core each at the app workers'
    priority while pages waited). For good: a thread cannot raise it again unprivileged, and
    what it starts cannot either (:func:`drop_priority_raising`)."""
    if nice <= 0:
        return
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the process's, or nothing
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    drop_priority_raising()


# --- the driver's pipes stay out of forked children ----------------------------------------------

_driver_fds: set[int] = set()  # this process's ends of the pipes to live drivers
_driver_fds_lock = threading.Lock()


def _pipe_fds(driver: int) -> set[int]:
    """This process's fds on the pipes of ``driver``'s stdin and stdout."""
    try:
        pipes = {os.readlink(f"/proc/{driver}/fd/{fd}") for fd in (0, 1)}
        mine = os.listdir("/proc/self/fd")
    except OSError:
        return set()
    found = set()
    for name in mine:
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{name}")
            if link.startswith("pipe:") and link in pipes:
                found.add(int(name))
    return found


def _release_driver_pipes() -> None:
    """In a forked child: the driver's pipes become ``/dev/null`` (the fd numbers stay taken,
    so an object that thinks it owns one closes nothing else), so the child keeps no driver
    alive after the app worker."""
    if not _driver_fds:
        return
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        for fd in _driver_fds:
            with contextlib.suppress(OSError):
                os.dup2(devnull, fd, inheritable=False)
    finally:
        os.close(devnull)
    _driver_fds.clear()


def _after_fork_in_child() -> None:
    _release_driver_pipes()
    _driver_fds_lock.release()


os.register_at_fork(
    before=_driver_fds_lock.acquire,
    after_in_parent=_driver_fds_lock.release,
    after_in_child=_after_fork_in_child,
)


# --- one browser ---------------------------------------------------------------------------------


_marks = itertools.count(1)


class _Session:
    """A Playwright driver and the Chromium it launched (used on the png thread only)."""

    def __init__(self, chromium: Path, timeout_s: float) -> None:
        from playwright.sync_api import sync_playwright

        self.mark = f"{MARK_SWITCH}={os.getpid()}.{next(_marks)}"
        self.drawn = 0
        self.pid: int | None = None  # the browser process
        self.driver: int | None = None
        self.fds: set[int] = set()
        self._manager = sync_playwright()
        playwright = self._manager.start()
        try:
            self.browser: Browser = playwright.chromium.launch(
                executable_path=str(chromium),
                headless=True,
                args=[*CHROMIUM_ARGS, self.mark],
                timeout=timeout_s * 1000,
            )
        except BaseException:
            self._stop()
            raise
        self.pid = min(_marked(self.mark), default=None)
        self.driver = _parent(self.pid) if self.pid is not None else None
        if self.driver is not None:
            self.fds = _pipe_fds(self.driver)
            with _driver_fds_lock:
                _driver_fds.update(self.fds)

    def usable(self) -> bool:
        return self.pid is not None and _has(self.pid, self.mark) and self.browser.is_connected()

    def rss_mb(self) -> float:
        return tree_rss_mb(self.driver) if self.driver is not None else 0.0

    def kill(self) -> None:
        """SIGKILL Chromium's processes (any thread; found by their switch, never by a pid
        that may since have been given to another process)."""
        kill_browsers(_marked(self.mark))

    def kill_driver(self) -> None:
        driver = self.driver
        if driver is not None and _parent(driver) == os.getpid() and _has(driver, "run-driver"):
            with contextlib.suppress(OSError):
                os.kill(driver, signal.SIGKILL)

    def close(self) -> None:
        """Close the browser, then the driver (png thread); whatever is left after
        :data:`CLOSE_S` is killed."""
        watchdog = threading.Timer(CLOSE_S, self._kill_all)
        watchdog.daemon = True
        watchdog.start()
        try:
            with contextlib.suppress(Exception):
                self.browser.close()
            self._stop()
        finally:
            watchdog.cancel()
            self._kill_all()  # nothing, unless the driver left something behind

    def _kill_all(self) -> None:
        self.kill()
        self.kill_driver()

    def _stop(self) -> None:
        with _driver_fds_lock:  # before the fds close: their numbers may be reused
            _driver_fds.difference_update(self.fds)
        with contextlib.suppress(Exception):
            self._manager.__exit__(None, None, None)


# --- the png thread ------------------------------------------------------------------------------

_Call = tuple[Callable[[], Any], Future[Any]]


class BrowserThread:
    """The thread that draws PNGs and the browser it keeps (see the module's docstring).

    :meth:`submit` runs a callable on the thread; there, :meth:`browser` gives the live browser
    (launching one if needed) and :meth:`drew` / :meth:`discard` say how a PNG went."""

    def __init__(
        self,
        chromium: Path,
        *,
        nice: int = 0,
        timeout_s: float = 30.0,
        recycle: Recycle,
        lock: Path | None = None,
    ) -> None:
        self.chromium = chromium
        self.nice = nice
        self.timeout_s = timeout_s
        self.recycle = recycle
        self.lock = ServerLock(lock)  # one browser in the server (None: one per worker)
        self.launched = 0  # browsers started (monitoring, tests)
        self._session: _Session | None = None
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="png", daemon=True)
        self._thread.start()

    # any thread

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        done: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the PNG thread is closed")
            self._calls.put((fn, done))
        return done

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def pids(self) -> tuple[int | None, int | None]:
        """The driver's and the browser's process ids (``None``: no browser now)."""
        session = self._session
        return (session.driver, session.pid) if session is not None else (None, None)

    def kill(self) -> None:
        """SIGKILL the browser's processes (the Playwright call under way fails at once; the
        next PNG starts a new browser); the driver too if that call is still under way after
        :data:`DRIVER_GRACE_S`."""
        session = self._session
        if session is None:
            return
        session.kill()
        later = threading.Timer(DRIVER_GRACE_S, self._kill_driver_if_current, args=(session,))
        later.daemon = True
        later.start()

    def _kill_driver_if_current(self, session: _Session) -> None:
        if self._session is session:  # not closed by its thread since: the call still hangs
            session.kill_driver()

    def close(self, wait_s: float = CLOSE_S) -> None:
        """Stop the thread: PNGs still waiting are cancelled, the browser and its driver are
        closed (and killed if the thread does not manage it within ``wait_s``)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while True:
                try:
                    call = self._calls.get_nowait()
                except queue.Empty:
                    break
                if call is not None:
                    call[1].cancel()
            self._calls.put(None)
        if self.on_thread():
            return  # the loop ends after the call under way
        self._thread.join(wait_s)
        session = self._session
        if self._thread.is_alive() and session is not None:  # a drawing under way
            session.kill()
            session.kill_driver()
            self._thread.join(wait_s)

    # the png thread

    def browser(self) -> tuple[Browser, bool]:
        """The live browser, and whether it drew a PNG before (launched if there is none, or
        if the one there is has gone)."""
        session = self._session
        if session is not None and not session.usable():
            log.warning("the PNG browser had gone; starting a new one")
            self.discard()
            session = None
        if session is None:
            self.lock.acquire(self.timeout_s)  # BrowserBusy: another worker's lives on
            try:
                session = self._session = _Session(self.chromium, self.timeout_s)
            except BaseException:
                self.lock.release()
                raise
            self.launched += 1
        return session.browser, session.drawn > 0

    def drew(self) -> None:
        """A PNG was drawn: count it (after the call, the browser is closed if it is due for
        replacement: :meth:`_retire_if_due`, once the PNG is handed over)."""
        if self._session is not None:
            self._session.drawn += 1

    def _retire_if_due(self) -> None:
        session, limit = self._session, self.recycle
        if session is None or not session.drawn:
            return
        if (
            (0 < limit.pngs <= session.drawn)
            or (0 < limit.rss_mb < session.rss_mb())
            or (self._calls.empty() and self.lock.wanted())  # another worker's turn
        ):
            self.discard()

    def discard(self) -> None:
        """Close the browser (the next PNG starts a new one) and let another worker have one."""
        session = self._session
        if session is not None:
            try:
                session.close()
            finally:
                self._session = None
                self.lock.release()

    def _next_call(self) -> _Call | None:
        """The next call for the thread; with a browser, ``queue.Empty`` once it has been idle
        for ``recycle.idle_s`` or another worker waits for the server's browser lock."""
        if self._session is None:
            return self._calls.get()
        idle = self.recycle.idle_s
        until = time.monotonic() + idle if idle > 0 else None
        while True:
            wait = IDLE_POLL_S if until is None else min(IDLE_POLL_S, until - time.monotonic())
            if wait <= 0:
                raise queue.Empty
            try:
                return self._calls.get(timeout=wait)
            except queue.Empty:
                if self.lock.wanted():
                    raise
                continue

    def _loop(self) -> None:
        lower_thread_priority(self.nice)
        try:
            while True:
                try:
                    call = self._next_call()
                except queue.Empty:
                    self.discard()  # idle, or wanted elsewhere: an idle server holds no Chromium
                    continue
                if call is None:
                    return
                fn, done = call
                if not done.set_running_or_notify_cancel():
                    continue
                try:
                    done.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    done.set_exception(exc)
                self._retire_if_due()
        finally:
            self.discard()
            self.lock.close()
