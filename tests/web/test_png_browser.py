"""The long-lived Chromium of PNG exports (app.web.pngbrowser): one per app worker, kept from
one PNG to the next, replaced when it has gone, recycled, closed when idle or with the app, at
the export priority, and never outliving its worker."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.settings import Settings
from app.web.exporting import PngRenderer, browser_pids
from app.web.pngbrowser import Recycle, alive, kill_browsers

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG"
KEEP = Recycle(pngs=0, rss_mb=0, idle_s=0)  # never replaced nor closed on its own


def _page(text: str) -> str:
    return f"<body style='margin:0'><div class='stage-wrap'><p>{text}</p></div></body>"


def _eventually(condition: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    """Wait for ``condition`` (a bound for a hang, not a speed figure: the machine is shared)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not so after {limit_s:g} s: {what}")
        time.sleep(0.1)


def _nice_of(tid: int, pid: int) -> int | None:
    """A thread's nice value, or None for a thread that ended since its task was listed."""
    try:
        stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    except FileNotFoundError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[16])


@pytest.fixture
def renderers(settings: Settings) -> Iterator[Callable[..., PngRenderer]]:
    made: list[PngRenderer] = []

    def make(**kw: object) -> PngRenderer:
        renderer = PngRenderer(settings.chromium, **kw)  # type: ignore[arg-type]
        made.append(renderer)
        return renderer

    yield make
    for renderer in made:
        renderer.close()


def test_one_browser_draws_one_png_after_another(renderers: Callable[..., PngRenderer]) -> None:
    """The first PNG starts Chromium; the next ones are drawn in it, each in a browser context
    of its own that is closed after it; close() ends the browser and the driver."""
    renderer = renderers(recycle=KEEP)
    before = browser_pids()
    assert renderer.pids() == (None, None)  # started lazily
    seen = set()
    for i in range(3):
        assert renderer.render(_page(f"png {i}"), scale=1, width=200)[:4] == PNG
        seen.add(renderer.pids())
    assert len(seen) == 1
    ((driver, browser),) = seen
    assert driver is not None and browser is not None
    assert browser in browser_pids() - before
    thread = renderer._thread
    assert thread is not None
    contexts = thread.submit(lambda: len(thread.browser()[0].contexts)).result()
    assert contexts == 0
    renderer.close()
    assert renderer.pids() == (None, None)
    assert not alive(browser) and not alive(driver)
    assert browser_pids() - before == set()


def test_a_browser_killed_between_two_pngs_is_replaced(
    renderers: Callable[..., PngRenderer],
) -> None:
    renderer = renderers(recycle=KEEP)
    assert renderer.render(_page("one"), scale=1, width=200)[:4] == PNG
    _, browser = renderer.pids()
    assert browser is not None
    kill_browsers({browser})
    _eventually(lambda: not alive(browser), "the killed browser has gone")
    assert renderer.render(_page("two"), scale=1, width=200)[:4] == PNG
    _, again = renderer.pids()
    assert again is not None and again != browser


def test_the_browser_is_replaced_after_its_pngs(renderers: Callable[..., PngRenderer]) -> None:
    renderer = renderers(recycle=Recycle(pngs=2, rss_mb=0, idle_s=0))
    renderer.render(_page("one"), scale=1, width=200)
    _, first = renderer.pids()
    assert first is not None
    renderer.render(_page("two"), scale=1, width=200)
    # closed once its second PNG was handed over; the third starts a new one
    _eventually(lambda: renderer.pids() == (None, None), "closed after two PNGs")
    assert not alive(first)
    renderer.render(_page("three"), scale=1, width=200)
    _, second = renderer.pids()
    assert second is not None and second != first


def test_the_browser_is_replaced_past_its_memory_bound(
    renderers: Callable[..., PngRenderer],
) -> None:
    renderer = renderers(recycle=Recycle(pngs=0, rss_mb=1, idle_s=0))
    before = browser_pids()
    assert renderer.render(_page("big"), scale=1, width=200)[:4] == PNG
    # over 1 MB resident: closed once its PNG was handed over
    _eventually(lambda: renderer.pids() == (None, None), "closed past the bound")
    assert browser_pids() - before == set()
    assert renderer.render(_page("again"), scale=1, width=200)[:4] == PNG


def test_an_idle_browser_is_closed(renderers: Callable[..., PngRenderer]) -> None:
    renderer = renderers(recycle=Recycle(idle_s=0.5))
    renderer.render(_page("one"), scale=1, width=200)
    driver, browser = renderer.pids()
    assert driver is not None and browser is not None
    _eventually(lambda: renderer.pids() == (None, None), "the idle browser closed")
    _eventually(lambda: not alive(browser) and not alive(driver), "its processes ended")
    assert renderer.render(_page("two"), scale=1, width=200)[:4] == PNG  # and a new one starts


def test_chromium_runs_at_the_export_priority(renderers: Callable[..., PngRenderer]) -> None:
    """Every thread of the driver and of every Chromium process is at least ``nice`` lower
    than the app (Chromium gives its threads a priority of its own where it may: as root,
    0 and -8, undoing the drawing thread's)."""
    renderer = renderers(nice=5, recycle=KEEP)
    renderer.render(_page("nice"), scale=1, width=200)
    driver, browser = renderer.pids()
    assert driver is not None and browser is not None
    base = os.getpriority(os.PRIO_PROCESS, 0)
    tree, todo = set(), [driver]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += [int(c) for c in _children(pid)]
    listed = {(pid, int(tid)): _nice_of(int(tid), pid) for pid in tree for tid in _tasks(pid)}
    nices = {key: nice for key, nice in listed.items() if nice is not None}
    assert len({pid for pid, _ in nices}) >= 3  # the driver, the browser, its helpers
    low = {key: nice for key, nice in nices.items() if nice < min(19, base + 5)}
    assert not low, f"threads above the export priority: {low}"


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:  # ended
        return []


def _children(pid: int) -> list[str]:
    """The children of every thread of ``pid`` (none once it has ended: Chromium's short-lived
    helpers end while they are listed)."""
    out: list[str] = []
    for task in _tasks(pid):
        try:
            out += Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
    return out


WORKER = """
import os, sys, time
from pathlib import Path
from app.web.exporting import PngRenderer
renderer = PngRenderer(Path(sys.argv[1]))
assert renderer.render("<body>x</body>", scale=1, width=100)[:4] == b"\\x89PNG"
child = os.fork()  # as a simulation process: forked after the browser started, outliving us
if child == 0:
    time.sleep(300)
    os._exit(0)
driver, browser = renderer.pids()
print(driver, browser, child, flush=True)
time.sleep(300)
"""


def test_the_browser_dies_with_its_worker(settings: Settings) -> None:
    """A worker killed with SIGKILL leaves no driver and no Chromium, even when a process it
    forked after starting the browser lives on (it would hold the driver's pipe)."""
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(settings.chromium)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline()
        driver, browser, child = (int(x) for x in line.split())
        assert alive(driver) and alive(browser) and alive(child)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        _eventually(lambda: not alive(driver), "the driver ended with its worker")
        _eventually(lambda: not alive(browser), "Chromium ended with its worker")
        assert alive(child)  # what kept the driver before: it lives on, holding nothing of it
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_close_does_not_wait_for_a_drawing_under_way(renderers: Callable[..., PngRenderer]) -> None:
    """The app's shutdown while a page spins: the browser is killed, nothing is left, and the
    PNG that was being drawn fails rather than hanging."""
    renderer = renderers(timeout_s=600)
    before = browser_pids()
    outcome: list[BaseException | bytes] = []

    def draw() -> None:
        try:
            outcome.append(
                renderer.render("<body><script>for (;;) {}</script></body>", scale=1, width=100)
            )
        except BaseException as exc:  # noqa: BLE001 - what the test looks at
            outcome.append(exc)

    drawing = threading.Thread(target=draw)
    drawing.start()
    _eventually(lambda: renderer.pids()[1] is not None, "the browser started")
    renderer.close()
    drawing.join(60)
    assert not drawing.is_alive()
    assert outcome and not isinstance(outcome[0], bytes)
    _eventually(lambda: browser_pids() - before == set(), "no Chromium left")
