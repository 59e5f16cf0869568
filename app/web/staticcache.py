"""Static files and npm packages, answered from memory: a chart library an explainer declares
(``WebView.packages``) can be over a megabyte, and reading and gzipping it again for each of 300
students was most of a small server's CPU (31 ms a request, measured with
``bench/load.py --scenario cost``; from memory it is a fraction of one).

:class:`StaticFront` (pure ASGI) sits in front of the app's routing, sessions and language
middleware. The first GET of a file under one of its ``mounts`` reads it once and keeps its
bytes, its gzipped bytes (text types over 1 KB) and the full header lists of both answers; later
GETs and HEADs are answered from that, after one ``stat`` to notice a changed file. The headers
are the ones Starlette's ``StaticFiles`` sends (same ``ETag``, ``Last-Modified``), plus an hour of
caching and ``Vary: Accept-Encoding``; ``If-None-Match`` gets a 304. Anything it is not sure about
(a missing file, a folder, a ``Range`` request, a path leaving its folder) goes on to the app.

Under ``/vendor/`` (npm packages) only an allow-list is served, whichever layer would answer:
:data:`VENDOR_FILES` names, per package, the dist files the app uses; a package mounted but
not named there (declared since) serves only its script, style, font and image files. Anything
else (``package.json``, READMEs, source maps, type declarations, a package's HTML pages) is a
404 here, before any mount sees it.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import mimetypes
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import formatdate
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.asgi import header_values

MAX_AGE = 3600
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
MAX_FILE = 8 << 20  # larger files are left to the app (streamed from disk)
Headers = list[tuple[bytes, bytes]]

VENDOR_PREFIX = "/vendor/"
# npm package → the files under it the app serves (globs; ``*`` stays within one folder).
VENDOR_FILES: dict[str, tuple[str, ...]] = {
    "htmx.org": ("dist/htmx.min.js",),
    "idiomorph": ("dist/idiomorph.min.js",),
    # the example deck, and decks that embed Stepscope (any theme, any plugin)
    "reveal.js": (
        "dist/reset.css",
        "dist/reveal.css",
        "dist/reveal.js",
        "dist/theme/*.css",
        "dist/plugin/*.js",
        "dist/plugin/highlight/*.css",
    ),
    "swagger-ui-dist": ("swagger-ui.css", "swagger-ui-bundle.js"),  # /docs
}
# What a mounted package missing from VENDOR_FILES may serve (by file name ending).
ASSET_SUFFIXES = (
    ".js",
    ".mjs",
    ".css",
    ".woff",
    ".woff2",
    ".ttf",
    ".otf",
    ".png",
    ".svg",
    ".gif",
    ".webp",
)


def _glob_matches(pattern: str, parts: tuple[str, ...]) -> bool:
    want = pattern.split("/")
    return len(want) == len(parts) and all(map(fnmatchcase, parts, want))


def vendor_allowed(path: str, mounted: tuple[str, ...] = ()) -> bool:
    """Whether ``/vendor/...`` ``path`` is on the allow-list: a file :data:`VENDOR_FILES` names,
    or a script/style/font/image inside one of the ``mounted`` folders (URL prefixes ending in
    "/") of a package it does not name."""
    rest = path[len(VENDOR_PREFIX) :]
    parts = tuple(rest.split("/"))
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
        return False
    for package, files in VENDOR_FILES.items():
        depth = package.count("/") + 1
        if "/".join(parts[:depth]) == package:
            return any(_glob_matches(f, parts[depth:]) for f in files)
    name = PurePosixPath(rest).name.lower()
    return path.startswith(mounted) and name.endswith(ASSET_SUFFIXES) and ".d." not in name


async def not_found(send: Send) -> None:
    body = b"Not Found"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"9")]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True, slots=True)
class Answer:
    mtime_ns: int
    size: int
    etag: str
    plain: Headers  # headers of the identity answer
    packed: Headers | None  # headers of the gzipped answer, when there is one
    body: bytes
    gz: bytes

    @property
    def weight(self) -> int:
        return len(self.body) + len(self.gz) + 1024


def file_etag(st: os.stat_result) -> str:
    """The ETag Starlette's FileResponse gives a file (so a 304 holds across both)."""
    base = f"{st.st_mtime}-{st.st_size}"
    return '"' + hashlib.md5(base.encode(), usedforsecurity=False).hexdigest() + '"'


def content_type(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "text/plain"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") else kind


def etag_matches(etag: str, if_none_match: str) -> bool:
    """``If-None-Match`` as Starlette's StaticFiles reads it (``*``, lists, weak tags)."""
    if if_none_match.strip() == "*":
        return True
    return etag in [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]


class StaticFront:
    def __init__(
        self, app: ASGIApp, mounts: Mapping[str, Path] | None = None, max_bytes: int = 64 << 20
    ) -> None:
        self.app = app
        # URL prefix (ending in "/") → folder, longest prefix first
        self.mounts = sorted(
            ((prefix, Path(folder)) for prefix, folder in (mounts or {}).items()),
            key=lambda kv: -len(kv[0]),
        )
        self.prefixes = tuple(prefix for prefix, _ in self.mounts)
        self.vendor_mounts = tuple(p for p in self.prefixes if p.startswith(VENDOR_PREFIX))
        self.max_bytes = max_bytes
        self.used = 0
        self._answers: OrderedDict[str, Answer] = OrderedDict()
        self._lock = threading.Lock()

    def _file(self, path: str) -> Path | None:
        """The regular file a URL path names inside its mount's folder, or None."""
        for prefix, folder in self.mounts:
            if path.startswith(prefix):
                rest = path[len(prefix) :]
                if not rest or "\\" in rest or "\0" in rest:
                    return None
                root = folder.resolve()
                try:
                    candidate = (root / rest).resolve()
                    if root not in candidate.parents or not candidate.is_file():
                        return None
                except OSError:  # a name too long for the file system, a loop of links
                    return None
                return candidate
        return None

    def _load(self, path: str) -> Answer | None:
        file = self._file(path)
        if file is None:
            return None
        try:
            st = file.stat()
            if st.st_size > MAX_FILE:
                return None
            body = file.read_bytes()
        except OSError:
            return None
        kind = content_type(file)
        etag = file_etag(st)
        common: Headers = [
            (b"content-type", kind.encode("latin-1")),
            (b"accept-ranges", b"bytes"),
            (b"last-modified", formatdate(st.st_mtime, usegmt=True).encode("latin-1")),
            (b"etag", etag.encode("latin-1")),
            (b"cache-control", f"public, max-age={MAX_AGE}".encode()),
            (b"vary", b"Accept-Encoding"),
        ]
        plain = [*common, (b"content-length", str(len(body)).encode())]
        gz, packed = b"", None
        if kind.startswith(COMPRESSIBLE) and len(body) > 1024:
            gz = gzip.compress(body, compresslevel=9, mtime=0)
            packed = [
                *common,
                (b"content-encoding", b"gzip"),
                (b"content-length", str(len(gz)).encode()),
            ]
        return Answer(st.st_mtime_ns, st.st_size, etag, plain, packed, body, gz)

    def _answer(self, path: str, load: bool = True) -> Answer | None:
        """The kept answer for ``path`` (checked against the file), else (``load``) the file
        read and gzipped now and kept."""
        with self._lock:
            answer = self._answers.get(path)
        if answer is not None:
            try:
                st = os.stat(self._file_of(path, answer))
            except OSError:
                st = None
            if st is not None and (st.st_mtime_ns, st.st_size) == (answer.mtime_ns, answer.size):
                with self._lock:
                    self._answers.move_to_end(path)
                return answer
            with self._lock:  # changed or gone: forget it and look again
                if self._answers.pop(path, None) is not None:
                    self.used -= answer.weight
        if not load:
            return None
        answer = self._load(path)
        if answer is not None and answer.weight <= self.max_bytes // 4:
            with self._lock:
                if path not in self._answers:
                    self._answers[path] = answer
                    self.used += answer.weight
                    while self.used > self.max_bytes:
                        _, old = self._answers.popitem(last=False)
                        self.used -= old.weight
        return answer

    def _file_of(self, path: str, answer: Answer) -> Path:
        for prefix, folder in self.mounts:
            if path.startswith(prefix):
                return folder / path[len(prefix) :]
        raise KeyError(path)  # pragma: no cover - only paths under a mount are kept

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"].startswith(VENDOR_PREFIX)
            and not vendor_allowed(scope["path"], self.vendor_mounts)
        ):
            await not_found(send)
            return
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or not scope["path"].startswith(self.prefixes)
        ):
            await self.app(scope, receive, send)
            return
        found = header_values(scope, b"accept-encoding", b"if-none-match", b"range")
        accept = found.get(b"accept-encoding", "")
        if_none_match = found.get(b"if-none-match", "")
        ranged = b"range" in found
        answer = None if ranged else self._answer(scope["path"], load=False)
        if answer is None and not ranged:
            # read and gzipped (level 9: up to a second for the largest packages) on a thread:
            # on the event loop it held every request of the worker (the soak's loop watch)
            answer = await asyncio.to_thread(self._answer, scope["path"])
        if answer is None:
            await self.app(scope, receive, send)
            return
        if if_none_match and etag_matches(answer.etag, if_none_match):
            headers = [(k, v) for k, v in answer.plain if k in (b"etag", b"cache-control", b"vary")]
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if answer.packed is not None and "gzip" in accept:
            headers, body = answer.packed, answer.gz
        else:
            headers, body = answer.plain, answer.body
        await send({"type": "http.response.start", "status": 200, "headers": list(headers)})
        if scope["method"] == "HEAD":
            body = b""
        await send({"type": "http.response.body", "body": body, "more_body": False})
