"""Request limits and response headers, as pure ASGI middleware (no BaseHTTPMiddleware).

* :class:`BodyLimit` refuses a request body over ``max_body_bytes`` with 413, whether the client
  announces it (Content-Length) or streams it (bytes are counted as they arrive).
* :class:`SecurityHeaders` adds a Content-Security-Policy, ``nosniff``, a referrer policy and
  ``X-Frame-Options`` to every response; ``/embed/`` pages may be framed by any site.
* :class:`PublicOrigin` makes every absolute URL the app builds (``request.base_url``,
  ``url_for``, redirects) use ``public_base_url`` instead of the Host header a client sent.
* Starlette's ``TrustedHostMiddleware`` refuses Host headers outside ``trusted_hosts`` (400).
* :class:`ClientAddress` sets the request's client address (what every per-client quota keys
  on) from ``X-Forwarded-For`` only when the peer is one of ``trusted_proxies``, and then takes
  the right-most hop that is not a trusted proxy: the hops to its left are whatever the client
  wrote, and a client must not pick the address its quotas are counted under.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.settings import Settings
from app.web.asgi import HttpMiddleware

EMBED_PREFIX = "/embed/"
# Paths that take an upload larger than ``max_body_bytes``: a recording or capture of at most
# 5 MB, raw (the API) or in a multipart form (the page; its boundaries and fields on top).
RECORDING_BYTES = 5 * 1024 * 1024
UPLOAD_LIMITS = {"/api/v1/recordings": RECORDING_BYTES, "/recordings": RECORDING_BYTES + 65_536}
_BASE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; form-action 'self'"
)
CSP_PAGE = f"{_BASE_CSP}; frame-ancestors 'self'"
CSP_EMBED = f"{_BASE_CSP}; frame-ancestors *"
COMMON_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
)


_REPLACED = frozenset((b"content-security-policy", b"x-frame-options"))


def is_embed(path: str) -> bool:
    return path.startswith(EMBED_PREFIX)


def security_headers(path: str) -> list[tuple[bytes, bytes]]:
    """The headers every response to ``path`` carries."""
    if is_embed(path):
        return [(b"content-security-policy", CSP_EMBED.encode()), *COMMON_HEADERS]
    return [
        (b"content-security-policy", CSP_PAGE.encode()),
        *COMMON_HEADERS,
        (b"x-frame-options", b"SAMEORIGIN"),
    ]


class SecurityHeaders(HttpMiddleware):
    """Add :func:`security_headers` to each response. The policy is decided here alone: a CSP or
    X-Frame-Options an inner layer set is replaced; other headers the app set are kept."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        extra = security_headers(scope.get("path", ""))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() not in _REPLACED
                ]
                present = {name.lower() for name, _ in headers}
                headers.extend((k, v) for k, v in extra if k not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _mb(limit: int) -> str:
    return f"{limit / 1_048_576:g} MB" if limit >= 1_048_576 else f"{limit} bytes"


async def send_too_large(scope: Scope, send: Send, limit: int) -> None:
    """413: JSON detail for the API, a short HTML page otherwise."""
    text = f"The request body is over the limit of {_mb(limit)} ({limit} bytes)."
    if scope.get("path", "").startswith("/api/"):
        body = json.dumps({"detail": text}).encode()
        kind = b"application/json"
    else:
        body = (
            "<!doctype html><meta charset=utf-8><title>Request too large</title>"
            f"<h1>Request too large</h1><p>{text}</p>"
        ).encode()
        kind = b"text/html; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit(HttpMiddleware):
    """Refuse request bodies over ``limit`` bytes with 413 before the app sees any of it.

    The body (at most ``limit`` bytes) is read first and handed on whole, so the app never
    starts on a request that turns out too big half-way through a stream.
    """

    def __init__(self, app: ASGIApp, limit: int, larger: Mapping[str, int] | None = None) -> None:
        super().__init__(app)
        self.default = limit
        self.larger = dict(larger or {})  # exact paths allowed a larger body (uploads)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.larger.get(scope.get("path", ""), self.default)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    announced = int(value)
                except ValueError:
                    announced = limit + 1
                if announced > limit:
                    await send_too_large(scope, send, limit)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await send_too_large(scope, send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class PublicOrigin:
    """Present every request as addressed to ``base_url`` (scheme, host and port).

    Starlette builds ``request.base_url``, ``url_for`` and redirect targets from the Host
    header; rewriting it here means no absolute URL can carry a host a client made up.
    """

    def __init__(self, app: ASGIApp, base_url: str) -> None:
        self.app = app
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path:
            raise ValueError(
                f"public_base_url must be an http(s) origin without a path, not {base_url[:80]!r}"
            )
        self.scheme = parts.scheme
        self.netloc = parts.netloc.encode("latin-1")
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.host = parts.hostname

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = [(k, v) for k, v in scope.get("headers", []) if k != b"host"]
            headers.append((b"host", self.netloc))
            scope = {
                **scope,
                "scheme": self.scheme if scope["type"] == "http" else scope["scheme"],
                "server": (self.host, self.port),
                "headers": headers,
            }
        await self.app(scope, receive, send)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_HOPS = 32  # X-Forwarded-For hops looked at, from the right (the rest are the client's)


def proxy_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """``trusted_proxies`` as networks (an address is a network of one); ValueError names a
    bad entry, so a typo stops the server at start-up instead of trusting nobody quietly."""
    nets: list[Network] = []
    for entry in entries:
        try:
            nets.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(
                f"trusted_proxies: {entry[:80]!r} is not an address or network"
            ) from exc
    return tuple(nets)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[2001:db8::1]:443"
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # "192.0.2.1:443"
        text = text.split(":", 1)[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def is_trusted(host: str, nets: tuple[Network, ...]) -> bool:
    found = _address(host)
    return found is not None and any(found in net for net in nets)


def forwarded_client(peer: str, forwarded_for: list[bytes], nets: tuple[Network, ...]) -> str:
    """The client address of a request from ``peer`` carrying these ``X-Forwarded-For`` header
    values: the right-most hop that is not a trusted proxy (each proxy appends the address it
    got the request from; everything left of the first proxy's entry is the client's to
    write). ``peer`` itself when it is not a trusted proxy or sent no header."""
    if not forwarded_for or not is_trusted(peer, nets):
        return peer
    joined = b",".join(forwarded_for).decode("latin-1")
    hops = [h.strip() for h in joined.rsplit(",", MAX_HOPS)[-MAX_HOPS:] if h.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop, nets):
            found = _address(hop)
            return str(found) if found is not None else hop[:64]
    return str(_address(hops[0])) if hops else peer  # every hop is a proxy of ours


class ClientAddress:
    """Set ``scope["client"]`` (and the scheme, from ``X-Forwarded-Proto``) from a trusted
    proxy's forwarding headers; from any other peer the headers are ignored."""

    def __init__(self, app: ASGIApp, trusted: Iterable[str]) -> None:
        self.app = app
        self.nets = proxy_networks(trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] in ("http", "websocket") and self.nets and client:
            hops = [v for k, v in scope.get("headers", []) if k == b"x-forwarded-for"]
            if hops and is_trusted(client[0], self.nets):
                scope = {**scope, "client": (forwarded_client(client[0], hops, self.nets), 0)}
                protos = [v for k, v in scope["headers"] if k == b"x-forwarded-proto"]
                proto = protos[-1].split(b",")[-1].strip().lower() if protos else b""
                if scope["type"] == "http" and proto in (b"http", b"https"):
                    scope["scheme"] = proto.decode()
        await self.app(scope, receive, send)


def allowed_hosts(settings: Settings) -> list[str]:
    hosts = list(settings.trusted_hosts)
    if settings.public_base_url:
        host = urlsplit(settings.public_base_url).hostname
        if host and host not in hosts:
            hosts.append(host)
    return hosts


def install(app: FastAPI, settings: Settings) -> None:
    """Add the middleware; call last in ``build_app`` so these wrap everything else.

    Outermost first: headers on every answer (even 400/413), then the Host check, then the
    public origin, then the body limit, then the client address (inside all of these, outside
    every other layer: quotas, page caches and routes see the forwarded address).
    """
    app.add_middleware(ClientAddress, trusted=settings.trusted_proxies)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, larger=UPLOAD_LIMITS)
    if settings.public_base_url:
        app.add_middleware(PublicOrigin, base_url=settings.public_base_url)
    app.add_middleware(
        TrustedHostMiddleware, allowed_hosts=allowed_hosts(settings), www_redirect=False
    )
    app.add_middleware(SecurityHeaders)


def same_site_form(request: Request) -> None:
    """Refuse a form POST that another site's page made the browser send (a page elsewhere
    must not make visitors' browsers run simulations here): browsers say so in
    ``Sec-Fetch-Site``, or with an ``Origin`` whose host is not ours."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise HTTPException(403, "This form can only be sent from Stepscope's own pages.")
    origin = request.headers.get("origin")
    if origin and origin != "null":
        host = urlsplit(origin).netloc
        if host and host != request.headers.get("host") and host != request.url.netloc:
            raise HTTPException(403, "This form can only be sent from Stepscope's own pages.")
