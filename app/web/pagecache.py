"""Rendered pages, frame chunks and exports of immutable scenarios, cached and revalidated.

A preset, a shared scenario and a custom params link always show the same thing for a given
simulation version, so what the server rendered for one visitor serves the next: the body is kept
(plain and gzipped) under the request's host, path and query, and answered with an ``ETag`` and
``Cache-Control: public`` so a browser revalidates with ``If-None-Match`` (304, no body) and a
reverse proxy or CDN can serve a lecture hall without reaching the app. Visitors with a session
(who may see "continue at step N") get a fresh, ``private`` page instead.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response

from app.web import i18n
from app.web.deps import visitor_id

MAX_AGE = 3600  # seconds a shared cache (proxy, CDN) may reuse a page before revalidating
STALE = 86_400  # and serve it stale while it revalidates
# Headers of the rendered response worth keeping (the rest are per-request).
KEPT = ("content-type", "content-disposition", "vary")


@dataclass(frozen=True, slots=True)
class Entry:
    body: bytes
    gz: bytes
    etag: str
    headers: tuple[tuple[str, str], ...]
    status: int

    @property
    def size(self) -> int:
        return len(self.body) + len(self.gz) + 200


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

    def respond(self, request: Request, produce: Callable[[], Response]) -> Response:
        """The cached answer to this GET, or ``produce()``'s, stored when it is a 200."""
        if request.method not in ("GET", "HEAD") or visitor_id(request) is not None:
            response = produce()
            response.headers.setdefault("Cache-Control", "private, no-cache")
            return response
        key = (
            request.headers.get("host", ""),
            request.url.path,
            request.url.query,
            request.headers.get("hx-request", ""),
            # The same URL reads differently per language (cookie, Accept-Language, ?lang=).
            i18n.language_of(request),
        )
        entry = self._get(key)
        if entry is None:
            with self._lock:
                gate = self._rendering.setdefault(key, threading.Lock())
            with gate:
                entry = self._get(key)
                if entry is None:
                    try:
                        return self._render(request, key, produce)
                    finally:
                        with self._lock:
                            self._rendering.pop(key, None)
        return self._answer(request, entry)

    def _render(
        self, request: Request, key: tuple[str, ...], produce: Callable[[], Response]
    ) -> Response:
        response = produce()
        if response.status_code != 200 or "cache-control" in response.headers:
            return response  # errors, jobs in progress and no-store answers are not kept
        body = bytes(response.body)
        entry = Entry(
            body=body,
            gz=gzip.compress(body, compresslevel=6),
            etag='"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"',
            headers=tuple((k, v) for k, v in response.headers.items() if k in KEPT),
            status=response.status_code,
        )
        self._put(key, entry)
        return self._answer(request, entry)

    @staticmethod
    def _answer(request: Request, entry: Entry) -> Response:
        headers = dict(entry.headers)
        headers["ETag"] = entry.etag
        headers["Cache-Control"] = (
            f"public, max-age=0, s-maxage={MAX_AGE}, stale-while-revalidate={STALE}"
        )
        # A shared cache must not hand one language's page to a reader of the other.
        vary = [v.strip() for v in (headers.get("vary") or "").split(",") if v.strip()]
        for name in ("Accept-Encoding", "Accept-Language", "Cookie"):
            if name not in vary:
                vary.append(name)
        headers["Vary"] = ", ".join(vary)
        headers.pop("vary", None)
        if entry.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return Response(entry.gz, status_code=entry.status, headers=headers)
        return Response(entry.body, status_code=entry.status, headers=headers)
