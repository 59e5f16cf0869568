"""JSON answers written by orjson, for the large ones: a run's trace through the API.

Starlette's ``JSONResponse`` writes with the standard library's ``json.dumps``; a large run's
answer is tens of megabytes of JSON, and writing it took longer than the simulation
(``bench/api_speed.py``). :class:`FastJSONResponse` writes the same JSON with orjson (compact,
UTF-8, as Starlette's; numbers in their shortest form, which parse to the same values), and puts
parts an explainer wrote itself (:class:`~app.sim.core.EncodedJSON`, see
``Explainer.public_json_parts``) into the answer as they are: the answer is joined once from
the pieces of those parts and of the rest (:func:`render_pieces`), and a gzipped one is
compressed piece by piece, never joined uncompressed.

What orjson refuses (an integer beyond 64 bits) is written as before, by the standard library.
An answer written whole already (an :class:`~app.sim.core.EncodedJSON` as the content: a run's
answer built in its simulation process, see ``app.web.routes.api.answer_pieces``) is sent as it
is; one that is a view of the pages it was written into (``app.web.answers``) is written from
them to the socket, never joined into bytes, and an answer of many pieces (a stored trace's) is
sent a megabyte at a time, each joined as it goes (:data:`STREAM_AT`): joining 85 MB at once
cost 0.06 s of CPU (fresh pages to fault in and clear), a megabyte at a time 0.006 s, and the
worker never holds the whole answer.

A client that accepts gzip (browsers, httpx and requests do by default) gets an answer over
:data:`GZIP_AT` compressed here at :data:`GZIP_LEVEL` rather than by the app's GZip middleware at
6 (which passes an answer already encoded as it is): on an 86 MB answer (4,096 requests), level 4
takes 0.50 s of CPU for 3.1 MB, level 6 0.91 s for 2.8 MB (``bench/api_speed.py --gzip``, loaded).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask
from starlette.types import Receive, Scope, Send

from app.sim.core import EncodedJSON

OPTIONS = orjson.OPT_NON_STR_KEYS  # keys that are numbers become strings, as json.dumps does
GZIP_AT = 1 << 20  # bytes of JSON from which an answer is compressed here
GZIP_LEVEL = 4
# An answer of this many bytes or more (not gzipped here) is sent in several messages: its
# pieces joined CHUNK_BYTES at a time, a piece that large as it is (a view of an answer's pages
# too). The first message is bytes, the first FIRST_BYTES of a view copied: Starlette's GZip
# middleware, for a client that does not take gzip, compares the first body it is given with
# itself, and two memoryviews compare item by item (0.6 s for 86 MB); bytes by identity first.
STREAM_AT = 1 << 20
CHUNK_BYTES = 1 << 20
FIRST_BYTES = 1 << 16


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip (as the GZip middleware reads it)."""
    return "gzip" in (accept_encoding or "")


def render_json(content: Any) -> bytes:
    """``content`` as JSON bytes: orjson (an object with parts an explainer wrote: those parts
    as they are, :func:`render_pieces`); what orjson refuses, by the standard library (as
    Starlette's ``JSONResponse`` writes it)."""
    if isinstance(content, Mapping) and any(isinstance(v, EncodedJSON) for v in content.values()):
        return b"".join(render_pieces(content))
    try:
        return orjson.dumps(content, option=OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is one: an integer past 64 bits
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        ).encode("utf-8")


def render_pieces(content: Mapping[str, Any]) -> list[bytes | bytearray | memoryview]:
    """:func:`render_json` of an object, as pieces that joined are its bytes: the pieces of
    each part an explainer wrote (:class:`EncodedJSON`) as they are, neither joined nor
    copied into the rest."""
    pieces: list[bytes | bytearray | memoryview] = []
    for key, value in content.items():
        pieces.append(b"{" if not pieces else b",")
        pieces.append(render_json(str(key)) + b":")
        if isinstance(value, EncodedJSON):
            pieces.extend(value.pieces)
        else:
            pieces.append(render_json(value))
    pieces.append(b"}" if pieces else b"{}")
    return pieces


class FastJSONResponse(JSONResponse):
    """A ``JSONResponse`` written by orjson (:func:`render_json`; content that is an
    :class:`EncodedJSON` is the answer's bytes already); ``gzip``: the client accepts gzip (a
    large answer is then compressed here, see :data:`GZIP_LEVEL`)."""

    def __init__(
        self,
        content: Any,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
        background: BackgroundTask | None = None,
        *,
        gzip: bool = False,
    ) -> None:
        self.gzip = gzip
        self.gzipped = False
        self.pieces: Sequence[bytes | bytearray | memoryview] = ()  # sent streamed (STREAM_AT)
        super().__init__(content, status_code, headers, media_type, background)
        if self.gzipped:
            self.headers["Content-Encoding"] = "gzip"
            self.headers.add_vary_header("Accept-Encoding")
        if self.pieces:
            self.headers["Content-Length"] = str(sum(map(len, self.pieces)))

    def render(self, content: Any) -> bytes:
        pieces: Sequence[bytes | bytearray | memoryview]
        if isinstance(content, EncodedJSON):
            pieces = content.pieces
        elif isinstance(content, Mapping):
            pieces = render_pieces(content)
        else:
            pieces = (render_json(content),)
        size = sum(map(len, pieces))
        if self.gzip and size >= GZIP_AT:
            packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            zipped = [packer.compress(piece) for piece in pieces]  # not joined first
            zipped.append(packer.flush())
            self.gzipped = True
            return b"".join(zipped)
        if len(pieces) == 1 and isinstance(pieces[0], bytes):
            return pieces[0]
        if size >= STREAM_AT:
            self.pieces = pieces
            return b""
        return b"".join(pieces)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pieces, self.pieces = self.pieces, ()  # an answer's pages go back once they are sent
        if not pieces:
            await super().__call__(scope, receive, send)
            return
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        for body in _chunks(pieces):
            await send({"type": "http.response.body", "body": body, "more_body": True})
        del pieces, body
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.background is not None:
            await self.background()


def _chunks(
    pieces: Sequence[bytes | bytearray | memoryview],
) -> Iterator[bytes | bytearray | memoryview]:
    """``pieces`` as the bodies of messages (:data:`STREAM_AT`): joined up to about
    :data:`CHUNK_BYTES`, one that large on its own; the first is bytes."""
    held: list[bytes | bytearray | memoryview] = []
    size = 0
    first = True
    for piece in pieces:
        if len(piece) >= CHUNK_BYTES:
            if held:
                yield b"".join(held)
                held, size, first = [], 0, False
            if first and not isinstance(piece, bytes):
                yield bytes(piece[:FIRST_BYTES])
                piece = piece[FIRST_BYTES:]
            yield piece
            first = False
            continue
        held.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield b"".join(held)
            held, size, first = [], 0, False
    if held:
        yield b"".join(held)
