"""Rendered pages, frame chunks and exports of immutable scenarios, cached and revalidated.

A preset, a shared scenario and a custom params link always show the same thing for a given
simulation version, so what the server rendered for one visitor serves the next: the body is kept
(plain and gzipped) under the request's host, path and query, and answered with an ``ETag`` and
``Cache-Control: public`` so a browser revalidates with ``If-None-Match`` (304, no body) and a
reverse proxy or CDN can serve a lecture hall without reaching the app. A visitor with a session
gets the same page unless it would show them "continue at step N" (then a fresh, ``private``
one); frame chunks are the same for everyone.

:class:`PageFront` (pure ASGI, in front of routing, sessions and languages) answers a request
whose page is already kept straight from memory, with the same headers, ``ETag`` and 304 as the
app would send: about a tenth of the CPU of going through FastAPI (``bench/load.py --scenario
cost``). It works out the reader's language as :class:`~app.web.i18n.LanguageMiddleware` does,
and leaves to the app every request it cannot answer exactly like it (a session cookie on a
personal page, a ``?lang=`` to remember, a page not kept yet).
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.web import i18n
from app.web.asgi import header_values
from app.web.deps import visitor_id
from app.web.templating import language_context

# Where a kept player page has room for a visitor's "continue at step N" link
# (templates/partials/player_actions.html).
RESUME_MARK = b"<!--resume-->"
MAX_AGE = 3600  # seconds a shared cache (proxy, CDN) may reuse a page before revalidating
STALE = 86_400  # and serve it stale while it revalidates
# Headers of the rendered response worth keeping (the rest are per-request).
KEPT = ("content-type", "content-disposition", "content-language", "vary")


Key = tuple[str, ...]
RawHeaders = list[tuple[bytes, bytes]]


def cache_control() -> str:
    return f"public, max-age=0, s-maxage={MAX_AGE}, stale-while-revalidate={STALE}"


def answer_headers(etag: str, kept: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The headers of a kept page's answer (before Content-Encoding and Content-Length)."""
    headers = dict(kept)
    headers["ETag"] = etag
    headers["Cache-Control"] = cache_control()
    # A shared cache must not hand one language's page to a reader of the other.
    vary = [v.strip() for v in (headers.get("vary") or "").split(",") if v.strip()]
    for name in ("Accept-Encoding", "Accept-Language", "Cookie"):
        if name not in vary:
            vary.append(name)
    headers["Vary"] = ", ".join(vary)
    headers.pop("vary", None)
    return headers


def page_key(scope: Scope, lang: str) -> Key:
    """What a kept page is filed under: host, path, query, htmx or not, and language."""
    found = header_values(scope, b"host", b"hx-request")
    host, hx = found.get(b"host", ""), found.get(b"hx-request", "")
    return (host, scope["path"], scope.get("query_string", b"").decode("latin-1"), hx, lang)


@dataclass(frozen=True, slots=True)
class Entry:
    """A kept answer, gzipped only: player pages are about 1 MB of HTML and 10–20 times smaller
    gzipped, and nearly every client accepts gzip; the rare one that does not gets the body
    decompressed for it. (Kept twice, plain and gzipped, the preset pages alone outgrew the
    cache, and its evictions cost renders again.)"""

    gz: bytes
    etag: str
    headers: tuple[tuple[str, str], ...]
    status: int
    shared: bool = False  # the same for visitors with a session (frame chunks)
    resume_marks: int = 0  # places for a "continue at step N" link (RESUME_MARK)
    # the answers PageFront sends, header lists ready: identity, gzip, 304
    raw: tuple[RawHeaders, RawHeaders, RawHeaders] = field(default=([], [], []), compare=False)

    @property
    def body(self) -> bytes:
        return gzip.decompress(self.gz)

    @property
    def size(self) -> int:
        return len(self.gz) + 400


def _raw(headers: dict[str, str]) -> RawHeaders:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def make_entry(body: bytes, kept: tuple[tuple[str, str], ...], shared: bool) -> Entry:
    gz = gzip.compress(body, compresslevel=6)
    etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
    base = answer_headers(etag, kept)
    plain = _raw({**base, "Content-Length": str(len(body))})
    packed = _raw({**base, "Content-Encoding": "gzip", "Content-Length": str(len(gz))})
    raw = (plain, packed, _raw(base))
    return Entry(gz, etag, kept, 200, shared, body.count(RESUME_MARK), raw)


@dataclass(frozen=True)
class ResumeAt:
    step: int


class PageCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[tuple[str, ...], Entry] = OrderedDict()
        self._lock = threading.Lock()
        # One render per key at a time: 300 students opening the same link wait for the first
        # render instead of each rendering the page themselves.
        self._rendering: dict[tuple[str, ...], threading.Lock] = {}

    def _get(self, key: tuple[str, ...]) -> Entry | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
            return entry

    def _put(self, key: tuple[str, ...], entry: Entry) -> None:
        with self._lock:
            if key in self._items or entry.size > self.max_bytes // 4:
                return
            self._items[key] = entry
            self.used += entry.size
            while self.used > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self.used -= old.size

    def __len__(self) -> int:
        return len(self._items)

    def lookup(self, key: Key) -> Entry | None:
        return self._get(key)

    def respond(
        self,
        request: Request,
        produce: Callable[[], Response],
        *,
        walkthrough: str | None = None,
        shared: bool = False,
    ) -> Response:
        """The cached answer to this GET, or ``produce()``'s, stored when it is a 200.

        What a visitor with a session sees may be theirs alone: by default they get a fresh,
        private page. ``shared``: the answer is the same for everyone (frame chunks).
        ``walkthrough``: the page is personal only through its "continue at step N" link for this
        walkthrough: a visitor with no step to continue at gets everyone's page, one with a step
        the page kept for that step (answered ``private``)."""
        personal = "" if shared else self._personal(request, walkthrough)
        if request.method not in ("GET", "HEAD") or personal is None:
            response = produce()
            response.headers.setdefault("Cache-Control", "private, no-cache")
            return response
        # The same URL reads differently per language (cookie, Accept-Language, ?lang=).
        key = page_key(request.scope, i18n.language_of(request))
        if personal:
            mine = self._get((*key, personal)) or self._with_resume(request, key, produce, personal)
            if mine is not None:
                return self._answer(request, mine, private=True)
            key = (*key, personal)
        entry = self._get(key)
        if entry is None:
            rendered = self._render_once(request, key, produce, shared, bool(personal))
            if rendered is not None:
                return rendered
            entry = self._get(key)
            if entry is None:  # kept by another thread and already pushed out: render again
                return self._render(request, key, produce, shared, bool(personal))
        return self._answer(request, entry, private=bool(personal))

    def _render_once(
        self,
        request: Request,
        key: Key,
        produce: Callable[[], Response],
        shared: bool,
        private: bool,
    ) -> Response | None:
        """Render and keep the page of ``key`` unless another thread is doing it (then wait for
        that and answer None: it is kept now)."""
        with self._lock:
            gate = self._rendering.setdefault(key, threading.Lock())
        with gate:
            if self._get(key) is not None:
                return None
            try:
                return self._render(request, key, produce, shared, private)
            finally:
                with self._lock:
                    self._rendering.pop(key, None)

    def _with_resume(
        self, request: Request, key: Key, produce: Callable[[], Response], personal: str
    ) -> Entry | None:
        """Everyone's page with this visitor's "continue at step N" link put in its place (at
        :data:`RESUME_MARK`), kept under ``personal``: one render of a page serves every
        visitor, whatever step they left it at (each step a visitor stopped at used to cost a
        render of its own, 0.2–0.6 s of CPU). None when the page has no place
        for the link or is not kept (then it is rendered for the visitor as before)."""
        base = self._get(key)
        if base is None:
            request.state.everyones_page = True  # resume_for answers None: no link, the mark
            try:
                self._render_once(request, key, produce, False, False)
            finally:
                request.state.everyones_page = False
            base = self._get(key)
        if base is None or base.resume_marks != 1:
            return None
        env = request.app.state.site.templates.env
        step = int(personal.removeprefix("resume="))
        link = env.get_template("partials/resume_link.html").render(
            {**language_context(request), "resume": ResumeAt(step), "request": request}
        )
        entry = make_entry(
            base.body.replace(RESUME_MARK, link.strip().encode()), base.headers, False
        )
        self._put((*key, personal), entry)
        return entry

    @staticmethod
    def _personal(request: Request, walkthrough: str | None) -> str | None:
        """What makes this visitor's page theirs: "" nothing (everyone's page), ``resume=N``
        the "continue at step N" link, None unknown (render it for them alone)."""
        if visitor_id(request) is None:
            return ""
        if walkthrough is None:
            return None
        if not walkthrough or "step" in request.query_params:
            return ""  # no "continue at step N" link on this page
        from app.web.sessions import resume_for  # sessions builds on this module's site

        resume = resume_for(request, walkthrough)
        return f"resume={resume.step}" if resume is not None else ""

    def _render(
        self,
        request: Request,
        key: Key,
        produce: Callable[[], Response],
        shared: bool,
        private: bool = False,
    ) -> Response:
        response = produce()
        if response.status_code != 200 or "cache-control" in response.headers:
            return response  # errors, jobs in progress and no-store answers are not kept
        kept = tuple((k, v) for k, v in response.headers.items() if k in KEPT)
        entry = make_entry(bytes(response.body), kept, shared)
        self._put(key, entry)
        return self._answer(request, entry, private)

    @staticmethod
    def _answer(request: Request, entry: Entry, private: bool = False) -> Response:
        headers = answer_headers(entry.etag, entry.headers)
        if private:
            headers["Cache-Control"] = "private, no-cache"
        if entry.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return Response(entry.gz, status_code=entry.status, headers=headers)
        return Response(entry.body, status_code=entry.status, headers=headers)


NO_LOOKUP = ("/static/", "/vendor/", "/embed/")  # paths the session middleware leaves alone


class PageFront:
    """Answer GETs of kept pages before routing, sessions and languages (see the module doc).

    ``session_cookie`` names the visitor session cookie; ``probe_name`` the "keeps cookies"
    probe that the session middleware adds to an HTML page for a browser that has not sent it
    yet, ``probe_cookie(secure)`` its ``Set-Cookie`` value and ``wants_probe(path)`` whether the
    middleware would add it for this path."""

    def __init__(
        self,
        app: ASGIApp,
        cache: PageCache,
        session_cookie: str,
        probe_name: str,
        probe_cookie: Callable[[bool], bytes],
        wants_probe: Callable[[str], bool],
        secure_cookies: bool = False,
    ) -> None:
        self.app = app
        self.cache = cache
        self.session_cookie = session_cookie
        self.probe_name = probe_name
        self.probe_cookie = probe_cookie
        self.wants_probe = wants_probe
        self.secure_cookies = secure_cookies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        found = header_values(
            scope, b"cookie", b"accept-language", b"accept-encoding", b"if-none-match"
        )
        cookie = found.get(b"cookie", "")
        accept_language = found.get(b"accept-language", "")
        accept_encoding = found.get(b"accept-encoding", "")
        if_none_match = found.get(b"if-none-match", "")
        cookies = i18n.parse_cookies(cookie) if cookie else {}
        query = scope.get("query_string", b"").decode("latin-1")
        choice = i18n.choose(query, cookies, accept_language)
        entry = None if choice.remember else self.cache.lookup(page_key(scope, choice.lang))
        path = scope["path"]
        looked_up = self.session_cookie in cookies and not path.startswith(NO_LOOKUP)
        if entry is None or (looked_up and (not entry.shared or self.probe_name not in cookies)):
            await self.app(scope, receive, send)
            return
        plain, packed, not_modified = entry.raw
        if entry.etag in if_none_match:
            await send({"type": "http.response.start", "status": 304, "headers": not_modified})
            await send({"type": "http.response.body", "body": b""})
            return
        if "gzip" in accept_encoding:
            headers, body = list(packed), entry.gz
        else:
            headers, body = list(plain), entry.body
        if (
            scope["method"] == "GET"
            and self.probe_name not in cookies
            and entry.status < 400
            and dict(entry.headers).get("content-type", "").startswith("text/html")
            and self.wants_probe(path)
        ):
            secure = self.secure_cookies or scope.get("scheme") == "https"
            headers.append((b"set-cookie", self.probe_cookie(secure)))
        await send({"type": "http.response.start", "status": entry.status, "headers": headers})
        if scope["method"] == "HEAD":
            body = b""
        await send({"type": "http.response.body", "body": body, "more_body": False})
