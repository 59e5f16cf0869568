"""Static files and npm packages, compressed once: plotly.js is over a megabyte, and gzipping it again
for each of 300 students is most of a small server's CPU. This middleware keeps the gzipped body
of every ``/static/`` and ``/vendor/`` file it served (keyed by path and the file's ETag) and lets
browsers and proxies keep them for an hour."""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PREFIXES = ("/static/", "/vendor/")
MAX_AGE = 3600
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")


class StaticGzipCache:
    def __init__(
        self, app: ASGIApp, roots: Mapping[str, Path] | None = None, max_bytes: int = 64 << 20
    ) -> None:
        self.app = app
        self.roots = dict(roots or {})  # URL prefix → folder, to recognise an unchanged file
        self.max_bytes = max_bytes
        self.used = 0
        self._items: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._answers: dict[tuple[str, int, int], tuple[Message, bytes]] = {}
        self._lock = threading.Lock()

    def _file_key(self, path: str) -> tuple[str, int, int] | None:
        """(path, mtime, size) of the file a URL names, or None (then the app answers)."""
        for prefix, folder in self.roots.items():
            if path.startswith(prefix):
                candidate = (folder / path[len(prefix) :]).resolve()
                if folder.resolve() not in candidate.parents:
                    return None
                try:
                    st = candidate.stat()
                except OSError:
                    return None
                return (path, st.st_mtime_ns, st.st_size)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or not scope["path"].startswith(PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        request_headers = Headers(scope=scope)
        gzip_ok = "gzip" in request_headers.get("accept-encoding", "")
        key = self._file_key(scope["path"]) if gzip_ok and scope["method"] == "GET" else None
        if key is not None:
            with self._lock:
                answer = self._answers.get(key)
            if answer is not None:  # this very file, gzipped before: no disk read, no gzip
                cached_start, body = answer
                etag = MutableHeaders(raw=list(cached_start["headers"])).get("etag")
                if etag and etag in request_headers.get("if-none-match", ""):
                    headers = [(k, v) for k, v in cached_start["headers"] if k != b"content-length"]
                    await send({"type": "http.response.start", "status": 304, "headers": headers})
                    await send({"type": "http.response.body", "body": b""})
                    return
                await send(cached_start)
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
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
            await self._finish(start, b"".join(chunks), gzip_ok, scope, send, key)  # file key

        await self.app(scope, receive, capture)

    async def _finish(
        self,
        start: Message | None,
        body: bytes,
        gzip_ok: bool,
        scope: Scope,
        send: Send,
        file_key: tuple[str, int, int] | None = None,
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
            if file_key is not None:
                with self._lock:
                    self._answers[file_key] = ({**start, "headers": list(start["headers"])}, body)
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": False})
