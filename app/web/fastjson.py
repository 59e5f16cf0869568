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
them to the socket, never joined into bytes (:data:`VIEW_AT`).

A client that accepts gzip (browsers, httpx and requests do by default) gets an answer over
:data:`GZIP_AT` compressed here at :data:`GZIP_LEVEL` rather than by the app's GZip middleware at
6 (which passes an answer already encoded as it is): on an 86 MB answer (4,096 requests), level 4
takes 0.50 s of CPU for 3.1 MB, level 6 0.91 s for 2.8 MB (``bench/api_speed.py --gzip``, loaded).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask
from starlette.types import Receive, Scope, Send

from app.sim.core import EncodedJSON

OPTIONS = orjson.OPT_NON_STR_KEYS  # keys that are numbers become strings, as json.dumps does
GZIP_AT = 1 << 20  # bytes of JSON from which an answer is compressed here
GZIP_LEVEL = 4
# An answer that is one view of this many bytes or more is sent from it, in two messages: its
# first FIRST_BYTES copied, then the rest of the view. (Starlette's GZip middleware, for a client
# that does not take gzip, compares the first body it is given with itself, and two memoryviews
# compare item by item: 0.6 s for 86 MB. Bytes compare by identity first.)
VIEW_AT = 1 << 20
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
        self.view: memoryview | None = None  # the answer, sent from these pages (VIEW_AT)
        super().__init__(content, status_code, headers, media_type, background)
        if self.gzipped:
            self.headers["Content-Encoding"] = "gzip"
            self.headers.add_vary_header("Accept-Encoding")
        if self.view is not None:
            self.headers["Content-Length"] = str(len(self.view))

    def render(self, content: Any) -> bytes:
        pieces: Sequence[bytes | bytearray | memoryview]
        if isinstance(content, EncodedJSON):
            pieces = content.pieces
            first = pieces[0] if len(pieces) == 1 else None
            if not self.gzip and isinstance(first, memoryview) and len(first) >= VIEW_AT:
                self.view = first
                return b""
        elif isinstance(content, Mapping):
            pieces = render_pieces(content)
        else:
            pieces = (render_json(content),)
        if self.gzip and sum(map(len, pieces)) >= GZIP_AT:
            packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            zipped = [packer.compress(piece) for piece in pieces]  # not joined first
            zipped.append(packer.flush())
            self.gzipped = True
            return b"".join(zipped)
        if len(pieces) == 1 and isinstance(pieces[0], bytes):
            return pieces[0]
        return b"".join(pieces)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        view, self.view = self.view, None  # the pages go back once the socket has written them
        if view is None:
            await super().__call__(scope, receive, send)
            return
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send(
            {"type": "http.response.body", "body": bytes(view[:FIRST_BYTES]), "more_body": True}
        )
        await send({"type": "http.response.body", "body": view[FIRST_BYTES:], "more_body": False})
        del view
        if self.background is not None:
            await self.background()
