"""What the pure ASGI middlewares share: reading a few request headers, and acting on HTTP
requests while everything else (the lifespan messages, websockets) goes straight through to the
app."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


def header_values(scope: Scope, *names: bytes) -> dict[bytes, str]:
    """The value of each of the (lower-case) header ``names`` the request carries, decoded as
    latin-1 (the last one where a header is repeated)."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in names:
            found[name] = value.decode("latin-1")
    return found


class HttpMiddleware:
    """A pure ASGI middleware whose :meth:`http` sees each HTTP request; other scopes go on to
    the app untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
