"""Export services, kept out of the route module: standalone SVG files, PNGs drawn by
headless Chromium (Debian's ``chromium``, driven through Playwright; one long-lived browser per
app worker, drawing one PNG at a time: :mod:`app.web.pngbrowser`; results cached since traces
are deterministic), and self-contained offline HTML documents whose
local scripts and stylesheets are inlined."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import FileResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from markupsafe import Markup
from starlette.routing import Mount

from app.sim.core import Message, Trace, msg
from app.sim.core.cost import megabytes
from app.web.player import player_context, reader_glossary
from app.web.pngbrowser import CHROMIUM_ARGS as CHROMIUM_ARGS
from app.web.pngbrowser import BrowserThread, Recycle
from app.web.pngbrowser import browser_pids as browser_pids
from app.web.pngbrowser import lower_thread_priority as lower_thread_priority
from app.web.runs import Busy
from app.web.sources import Source
from app.web.templating import render, render_block

SVG_NS = "http://www.w3.org/2000/svg"
DEFAULT_SIZE = (1000.0, 600.0)
_VIEWBOX = re.compile(r'viewBox="\s*[-\d.]+[\s,]+[-\d.]+[\s,]+([\d.]+)[\s,]+([\d.]+)\s*"')
_LOCAL_SCRIPT = re.compile(
    r'<script\b([^>]*?)\bsrc="(/(?:static|vendor)/[^"?#]+)"([^>]*)>\s*</script>', re.I
)
_LOCAL_STYLE = re.compile(
    r'<link\b[^>]*?\brel="stylesheet"[^>]*?\bhref="(/(?:static|vendor)/[^"?#]+)"[^>]*>', re.I
)


def app_css(request: Request) -> str:
    path: Path = request.app.state.settings.root / "static" / "css" / "app.css"
    return path.read_text(encoding="utf-8")


def picture_size(picture: str) -> tuple[float, float]:
    """Width and height of a picture from its root ``viewBox`` (a default for HTML pictures)."""
    head = picture[: picture.find(">") + 1] if picture.lstrip().startswith("<svg") else ""
    m = _VIEWBOX.search(head)
    return (float(m.group(1)), float(m.group(2))) if m else DEFAULT_SIZE


def standalone_svg(picture: str, *, css: str, theme: str) -> str:
    """A self-contained SVG file: the page's picture, verbatim, inside an outer ``<svg>`` that
    carries the stylesheet and the theme, so it looks as it does on the page."""
    w, h = picture_size(picture)
    css = css.replace("]]>", "]] >")
    body = (
        picture
        if picture.lstrip().startswith("<svg")
        else (
            f'<foreignObject width="{w:g}" height="{h:g}"><div xmlns="http://www.w3.org/1999/xhtml" '
            f'class="stage">{picture}</div></foreignObject>'
        )
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="{SVG_NS}" class="stepscope-export" data-theme="{theme}" width="{w:g}" '
        f'height="{h:g}" viewBox="0 0 {w:g} {h:g}">'
        f"<style><![CDATA[\n{css}\n.stepscope-export .glide, .stepscope-export .seg {{ transition: none; }}\n]]></style>"
        '<rect class="export-bg" width="100%" height="100%" style="fill: var(--bg)"/>'
        f"{body}</svg>\n"
    )


PNG_CACHE_SIZE = 64
FRAME_PAD = 8  # px of background around the picture in a PNG
PNG_TIMEOUT_S = 30.0  # a Chromium still drawing after this is killed (answered 503)
# A request waits this long at most for its PNG (the ones queued before it included), then
# 503 with Retry-After (the drawing under way ends within PNG_TIMEOUT_S). Under a client's
# usual minute: the soak's clients gave up at 60 s on PNGs queued behind two slow ones.
PNG_WAIT_S = 45.0
# The offline HTML file at most (every frame's picture inside): above, 413 naming the limit. A
# 5,000-step walkthrough was 299 MB and took a 4 GB process to build.
MAX_OFFLINE_BYTES = 50_000_000
# Bytes of offline HTML built per second (207 MB took 17.8 s): a file estimated over a second's
# worth is a long run of its own and counts against the client's quota.
OFFLINE_BYTES_PER_SECOND = 12_000_000

# The box a PNG shows: everything drawn in the picture area, not only the area's own box. Regions
# that scroll on the page (a wide timeline, a table) are opened up first so all they hold shows;
# an SVG (a picture, a chart with its title and legend) counts as its own box, since it
# clips what it holds; so does any element that hides its overflow.
FRAME_JS = """(pad) => {
  const wrap = document.querySelector('.stage-wrap');
  if (!wrap) return null;
  for (const el of wrap.querySelectorAll('*')) {
    if (!(el instanceof HTMLElement)) continue;
    const cs = getComputedStyle(el);
    const scrolls = (o) => o === 'auto' || o === 'scroll';
    if ((scrolls(cs.overflowX) && el.scrollWidth > el.clientWidth)
        || (scrolls(cs.overflowY) && el.scrollHeight > el.clientHeight)) {
      el.style.overflow = 'visible';
      el.style.maxHeight = 'none';
      el.style.maxWidth = 'none';
    }
  }
  const box = wrap.getBoundingClientRect();
  let left = box.left, top = box.top, right = box.right, bottom = box.bottom;
  const visit = (el) => {
    const cs = getComputedStyle(el);
    if (cs.display === 'none') return;
    const r = el.getBoundingClientRect();
    if (cs.visibility !== 'hidden' && r.width > 0 && r.height > 0) {
      const w = el instanceof HTMLElement && !/(hidden|clip)/.test(cs.overflowX)
        ? Math.max(r.width, el.scrollWidth) : r.width;
      const h = el instanceof HTMLElement && !/(hidden|clip)/.test(cs.overflowY)
        ? Math.max(r.height, el.scrollHeight) : r.height;
      left = Math.min(left, r.left); top = Math.min(top, r.top);
      right = Math.max(right, r.left + w); bottom = Math.max(bottom, r.top + h);
    }
    if (el instanceof SVGElement || /(hidden|clip)/.test(cs.overflowX + cs.overflowY)) return;
    for (const child of el.children) visit(child);
  };
  for (const child of wrap.children) visit(child);
  const x = Math.max(0, Math.floor(left + window.scrollX - pad));
  const y = Math.max(0, Math.floor(top + window.scrollY - pad));
  return {
    x, y,
    width: Math.ceil(right + window.scrollX + pad) - x,
    height: Math.ceil(bottom + window.scrollY + pad) - y,
  };
}"""


class PngUnavailable(Exception):
    def __init__(self, message: str | Message) -> None:
        super().__init__(str(message))
        self.message = message


class OfflineTooLarge(Exception):
    """The offline HTML of a scenario would be over :data:`MAX_OFFLINE_BYTES`."""

    def __init__(self, size: float) -> None:
        self.message = msg(
            "this walkthrough's offline file would be about {size} MB; the limit is {limit} MB: "
            "export a shorter run, or single steps as SVG or PNG",
            size=megabytes(size),
            limit=megabytes(MAX_OFFLINE_BYTES),
        )
        super().__init__(str(self.message))


def png_css(picture: str) -> str:
    """Show only the picture area (charts drawn once per trace, then this step's picture), at
    the picture's own width, with nothing mid-transition."""
    w, _ = picture_size(picture)
    return (
        ".offline-head, .side, .fields-fold, .controls, .frame-store, .embed-credit, .run-summary,"
        " .lesson-intro { display: none !important; }"
        " body, main { margin: 0 !important; padding: 0 !important; background: var(--bg); }"
        f" main {{ padding: {FRAME_PAD}px !important; }}"
        " .player-body { display: block !important; }"
        f" .stage-wrap {{ width: {w:g}px; }}"
        " * { transition: none !important; animation: none !important; }"
    )


class _Stale(Exception):
    """A reused browser could not open a page: it has gone (try once more in a new one)."""


class PngRenderer:
    """Draws PNGs in the configured Chromium, one at a time, and keeps the last few.

    One Chromium per app worker, started on the first PNG and kept for the next ones (a fresh
    browser context and page each), on one thread of its own (:mod:`app.web.pngbrowser`)."""

    def __init__(
        self,
        chromium: Path,
        max_waiting: int = 8,
        timeout_s: float = PNG_TIMEOUT_S,
        nice: int = 0,
        wait_s: float = PNG_WAIT_S,
        recycle: Recycle | None = None,
        lock: Path | None = None,
    ) -> None:
        self.chromium = chromium
        self.timeout_s = timeout_s
        self.wait_s = wait_s
        self.nice = nice  # the drawing thread's, so Playwright's driver's and Chromium's
        self.recycle = recycle or Recycle()
        self.lock = lock  # the server's browser lock (app.web.pngbrowser.ServerLock; None: none)
        self._cache: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        # PNGs are drawn on one thread of their own, which keeps the browser; requests wait
        # for them without holding a request thread, and at most ``max_waiting`` wait (then 503).
        self._thread: BrowserThread | None = None
        self._thread_lock = threading.Lock()
        self.max_waiting = max_waiting
        self._waiting = 0

    def _png_thread(self) -> BrowserThread:
        with self._thread_lock:
            if self._thread is None:
                self._thread = BrowserThread(
                    self.chromium,
                    nice=self.nice,
                    timeout_s=self.timeout_s,
                    recycle=self.recycle,
                    lock=self.lock,
                )
            return self._thread

    async def render_async(
        self, html: str, *, scale: int, width: float, ready: str | None = None
    ) -> bytes:
        if self._waiting >= self.max_waiting:
            raise Busy(10)
        self._waiting += 1
        try:
            future = self._png_thread().submit(
                lambda: self.render(html, scale=scale, width=width, ready=ready)
            )
            try:
                return await asyncio.wait_for(
                    asyncio.shield(asyncio.wrap_future(future)), self.wait_s
                )
            except TimeoutError:
                raise Busy(10) from None
        finally:
            self._waiting -= 1

    def pids(self) -> tuple[int | None, int | None]:
        """Playwright's driver's and the browser's process ids (``None``: no browser now)."""
        thread = self._thread
        return thread.pids() if thread is not None else (None, None)

    def close(self) -> None:
        """Close the browser and its thread (the app's shutdown); PNGs still waiting are
        cancelled. A later PNG starts them again."""
        with self._thread_lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.close()

    def cached(self, key: tuple[Any, ...]) -> bytes | None:
        return self._cache.get(key)

    def store(self, key: tuple[Any, ...], data: bytes) -> None:
        self._cache[key] = data
        while len(self._cache) > PNG_CACHE_SIZE:
            self._cache.popitem(last=False)

    def render(self, html: str, *, scale: int, width: float, ready: str | None = None) -> bytes:
        """Screenshot the picture area of ``html`` in headless Chromium, once ``ready`` (the
        shown view's JS predicate, :attr:`WebView.export_ready`) holds. A drawing still at it
        after ``timeout_s`` is stopped: the browser is killed (:class:`PngUnavailable`), and
        the next PNG starts a new one. Runs on the PNG thread (called elsewhere, it waits
        for it there)."""
        if not self.chromium.exists():
            raise PngUnavailable(
                f"PNG export needs Chromium at {self.chromium} (Debian: apt-get install chromium)"
            )
        thread = self._png_thread()
        if not thread.on_thread():
            return thread.submit(
                lambda: self.render(html, scale=scale, width=width, ready=ready)
            ).result()
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            thread.kill()

        timer = threading.Timer(self.timeout_s, stop)
        timer.daemon = True
        timer.start()
        try:
            for attempt in (1, 2):
                try:
                    data = self._draw(thread, html, scale=scale, width=width, ready=ready)
                except _Stale as exc:  # a reused browser that had gone: once more, in a new one
                    thread.discard()
                    if attempt == 2 or timed_out.is_set():
                        raise PngUnavailable(f"Chromium could not draw the PNG: {exc}") from None
                    continue
                except PngUnavailable:
                    thread.discard()
                    if timed_out.is_set():
                        raise PngUnavailable(
                            msg(
                                "Chromium took over {s} s to draw this PNG and was stopped",
                                s=f"{self.timeout_s:g}",
                            )
                        ) from None
                    raise
                if timed_out.is_set():  # drawn, but its browser is being killed
                    thread.discard()
                else:
                    thread.drew()
                return data
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            timer.cancel()

    def _draw(
        self, thread: BrowserThread, html: str, *, scale: int, width: float, ready: str | None
    ) -> bytes:
        """Draw in a browser context and page of their own (closed after), on the PNG thread."""
        try:
            from playwright.sync_api import Error as PlaywrightError
            from playwright.sync_api import TimeoutError as PlaywrightTimeout
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise PngUnavailable("PNG export needs the playwright package") from exc
        try:
            browser, reused = thread.browser()
        except (PlaywrightError, OSError) as exc:
            raise PngUnavailable(f"Chromium could not start: {exc}") from exc
        try:
            context = browser.new_context(
                viewport={"width": int(width) + 40, "height": 800}, device_scale_factor=scale
            )
            page = context.new_page()
        except PlaywrightError as exc:
            if reused:
                raise _Stale(str(exc)) from exc
            raise PngUnavailable(f"Chromium could not draw the PNG: {exc}") from exc
        try:
            page.route("**/*", lambda route: route.abort())  # the document is self-contained
            page.set_default_timeout(self.timeout_s * 1000)
            page.set_content(html, wait_until="load")
            # what the view's scripts draw after load (charts): its own condition
            if ready:
                try:
                    page.wait_for_function(ready, timeout=min(10_000, self.timeout_s * 500))
                except PlaywrightTimeout:
                    pass  # draw what is there rather than nothing
            clip = page.evaluate(FRAME_JS, FRAME_PAD)
            if clip is None:
                return page.screenshot(type="png", full_page=True)
            # wide enough that nothing wraps or hides at the right edge
            needed = int(clip["x"] + clip["width"]) + 1
            if needed > int(width) + 40:
                page.set_viewport_size({"width": needed, "height": 800})
                clip = page.evaluate(FRAME_JS, FRAME_PAD)
            return page.screenshot(type="png", clip=clip, full_page=True, animations="disabled")
        except PlaywrightError as exc:
            raise PngUnavailable(f"Chromium could not draw the PNG: {exc}") from exc
        finally:
            with contextlib.suppress(PlaywrightError):
                context.close()


def _script_text(text: str) -> str:
    """JS that is safe inside an inline <script> element."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.I).replace("<!--", "<\\!--")


def local_asset(request: Request, url: str) -> Path | None:
    """The file the app serves at a /static/... or /vendor/... URL, if it serves one.

    Looks through the app's own static mounts (and plain routes answering a file, such as a
    script served from a wheel), so whatever a view asks for is found the way the server finds it.
    """
    if not url.startswith(("/static/", "/vendor/")):
        return None
    for route in request.app.routes:
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles) and route.app.directory:
            prefix = route.path.rstrip("/") + "/"
            if url.startswith(prefix):
                base = Path(route.app.directory).resolve()
                path = (base / url[len(prefix) :]).resolve()
                if path.is_file() and base in path.parents:
                    return path
        elif (
            isinstance(route, APIRoute)
            and route.path == url
            and "GET" in (route.methods or ())
            and not route.dependant.path_params
            and not route.dependant.query_params
        ):
            answer = route.endpoint()
            if isinstance(answer, FileResponse):
                return Path(answer.path)
    return None


def inline_assets(request: Request, html: str) -> str:
    """Replace every local <script src> and stylesheet <link> with the file's contents."""

    def script(m: re.Match[str]) -> str:
        path = local_asset(request, m.group(2))
        if path is None:
            return ""
        return f"<script>{_script_text(path.read_text(encoding='utf-8'))}</script>"

    def style(m: re.Match[str]) -> str:
        path = local_asset(request, m.group(1))
        return f"<style>{path.read_text(encoding='utf-8')}</style>" if path else ""

    return _LOCAL_STYLE.sub(style, _LOCAL_SCRIPT.sub(script, html))


def offline_bytes(source: Source, trace: Trace[Any, Any], samples: int = 5) -> int:
    """About the bytes of the offline HTML of ``trace``: its steps × the mean size of a few
    steps' pictures (spread over the run), plus their words and the scripts (~1.5 MB)."""
    count = len(trace.frames)
    if not count:
        return 0
    picks = sorted({round(i * (count - 1) / max(1, samples - 1)) for i in range(samples)})
    drawn = [len(source.plugin.web.picture(trace, trace.frames[i])) for i in picks]
    per_step = sum(drawn) / len(drawn) + 1_500  # narration, notes, the transcript line
    return int(count * per_step) + 1_500_000


def offline_document(
    request: Request,
    source: Source,
    trace: Trace[Any, Any],
    *,
    step: int | None,
    theme: str,
    controls: str = "full",
    extra_css: str = "",
    one_step: bool = False,
    charge: Callable[[], None] | None = None,
) -> str:
    """The whole player for ``source`` as one self-contained HTML document (``one_step``: with
    only that step's picture, for a PNG). Over :data:`MAX_OFFLINE_BYTES`: :class:`OfflineTooLarge`,
    before drawing every step when its estimate is already over. ``charge`` is called (it may
    refuse) before a file estimated to take over a second is built."""
    if one_step:
        ctx = player_context(source, trace, step=step, glossary=reader_glossary(request))
        ctx["frames"] = [ctx["current"]] if ctx["current"] is not None else []
    else:
        estimate = offline_bytes(source, trace)
        if estimate > MAX_OFFLINE_BYTES:
            raise OfflineTooLarge(estimate)
        if charge is not None and estimate > OFFLINE_BYTES_PER_SECOND:
            charge()
        # offline: every frame inside, nothing to fetch
        ctx = player_context(
            source, trace, step=step, all_frames=True, glossary=reader_glossary(request)
        )
    ctx.update(embed=True, controls=controls, autoplay=False, theme=theme, offline=True)
    online = str(request.base_url).rstrip("/") + source.page_path
    page = render(
        request,
        "export/offline.html",
        {
            **ctx,
            "player_html": Markup(render_block(request, "pages/player.html", "content", ctx)),
            "online_url": online,
            "exported_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "extra_css": Markup(extra_css),
        },
    )
    html = inline_assets(request, bytes(page.body).decode("utf-8"))
    if len(html) > MAX_OFFLINE_BYTES:  # the hard cap, whatever the estimate said
        raise OfflineTooLarge(len(html))
    return html
