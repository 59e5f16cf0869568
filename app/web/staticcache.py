"""Static files and npm packages, compressed once: plotly.js is over a megabyte, and gzipping it again
for each of 300 students is most of a small server's CPU. This middleware keeps the gzipped body
of every ``/static/`` and ``/vendor/`` file it served (keyed by path and the file's ETag) and lets
browsers and proxies keep them for an hour."""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIXES = ("/static/", "/vendor/")
MAX_AGE = 3600
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")


class StaticGzipCache:
    def __init__(self, app: ASGIApp, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or not scope["path"].startswith(PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        gzip_ok = "gzip" in Headers(scope=scope).get("accept-encoding", "")
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            await self._finish(start, b"".join(chunks), gzip_ok, scope, send)

        await self.app(scope, receive, capture)

    async def _finish(
        self, start: Message | None, body: bytes, gzip_ok: bool, scope: Scope, send: Send
    ) -> None:
        if start is None:  # pragma: no cover - an app always starts its response
            return
        headers = MutableHeaders(scope=start)
        if start["status"] == 200:
            headers["Cache-Control"] = f"public, max-age={MAX_AGE}"
            headers.append("Vary", "Accept-Encoding")
        kind = headers.get("content-type", "")
        if (
            start["status"] == 200
            and gzip_ok
            and kind.startswith(COMPRESSIBLE)
            and "content-encoding" not in headers
            and len(body) > 1024
            and scope["method"] == "GET"
        ):
            key = (scope["path"], headers.get("etag", ""))
            with self._lock:
                packed = self._items.get(key)
            if packed is None:
                packed = gzip.compress(body, compresslevel=6)
                with self._lock:
                    if key not in self._items and len(packed) < self.max_bytes // 4:
                        self._items[key] = packed
                        self.used += len(packed)
                        while self.used > self.max_bytes:
                            _, old = self._items.popitem(last=False)
                            self.used -= len(old)
            body = packed
            headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(len(body))
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": False})
