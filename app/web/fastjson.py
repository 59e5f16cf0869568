"""JSON answers written by orjson, for the large ones: a run's trace through the API.

Starlette's ``JSONResponse`` writes with the standard library's ``json.dumps``; a large run's
answer is tens of megabytes of JSON, and writing it took longer than the simulation
(``bench/api_speed.py``). :class:`FastJSONResponse` writes the same JSON with orjson (compact,
UTF-8, as Starlette's; numbers in their shortest form, which parse to the same values), and puts
parts an explainer wrote itself (:class:`~app.sim.core.EncodedJSON`, see
``Explainer.public_json_parts``) into the answer as they are.

What orjson refuses (an integer beyond 64 bits) is written as before, by the standard library
(each part an explainer wrote parsed back first). An answer written whole already (an
:class:`~app.sim.core.EncodedJSON` as the content: a run's answer built in its simulation
process, see ``app.web.routes.api.answer_bytes``) is sent as it is.

A client that accepts gzip (browsers, httpx and requests do by default) gets an answer over
:data:`GZIP_AT` compressed here at :data:`GZIP_LEVEL` rather than by the app's GZip middleware at
6 (which passes an answer already encoded as it is): on an 86 MB answer (4,096 requests), level 4
takes 0.50 s of CPU for 3.1 MB, level 6 0.91 s for 2.8 MB (``bench/api_speed.py --gzip``, loaded).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

import orjson
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask

from app.sim.core import EncodedJSON

OPTIONS = orjson.OPT_NON_STR_KEYS  # keys that are numbers become strings, as json.dumps does
GZIP_AT = 1 << 20  # bytes of JSON from which an answer is compressed here
GZIP_LEVEL = 4


def _fragments(content: Any) -> Any:
    """``content`` with each top-level :class:`EncodedJSON` as an orjson fragment."""
    if isinstance(content, Mapping) and any(isinstance(v, EncodedJSON) for v in content.values()):
        return {
            k: orjson.Fragment(v.data) if isinstance(v, EncodedJSON) else v
            for k, v in content.items()
        }
    return content


def _plain(content: Any) -> Any:
    """``content`` with each top-level :class:`EncodedJSON` parsed back to its value."""
    if isinstance(content, Mapping):
        return {
            k: json.loads(v.data) if isinstance(v, EncodedJSON) else v for k, v in content.items()
        }
    return content


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip (as the GZip middleware reads it)."""
    return "gzip" in (accept_encoding or "")


def render_json(content: Any) -> bytes:
    """``content`` as JSON bytes: orjson, with the parts an explainer wrote as they are; what
    orjson refuses, by the standard library (as Starlette's ``JSONResponse`` writes it)."""
    try:
        return orjson.dumps(_fragments(content), option=OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is one: an integer past 64 bits
        return json.dumps(
            _plain(content), ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        ).encode("utf-8")


def render_pieces(content: Mapping[str, Any]) -> list[bytes]:
    """:func:`render_json` of an object, as pieces that joined are its bytes: each part an
    explainer wrote (:class:`EncodedJSON`) is a piece as it is, not copied into the rest."""
    pieces: list[bytes] = []
    for key, value in content.items():
        pieces.append(b"{" if not pieces else b",")
        pieces.append(render_json(key) + b":")
        pieces.append(value.data if isinstance(value, EncodedJSON) else render_json(value))
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
        super().__init__(content, status_code, headers, media_type, background)
        if self.gzipped:
            self.headers["Content-Encoding"] = "gzip"
            self.headers.add_vary_header("Accept-Encoding")

    def render(self, content: Any) -> bytes:
        body = content.data if isinstance(content, EncodedJSON) else render_json(content)
        if self.gzip and len(body) >= GZIP_AT:
            packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            body = packer.compress(body) + packer.flush()
            self.gzipped = True
        return body
