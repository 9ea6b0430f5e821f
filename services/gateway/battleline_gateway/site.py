"""The whole web app: the bridge under `/battleline.v1.*`, the built page everywhere else."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from battleline_engine.errors import Refusal
from battleline_engine.listening import host_name

from .bridge import EngineBridge, method_path, public_methods
from .rate import RequestRate

# The page built from clients/web (`npm run build` writes here); shipped in the package.
SITE_DIR = Path(__file__).parent / "site"
RPC_PREFIX = "/battleline.v1."
RPC_PATHS = frozenset(method_path(method) for method in public_methods())
# On every answer (tenth audit): no other site may frame the page (a lured click on
# Resign), the page loads nothing but its own files, nothing is sniffed, no referrer.
# Inline styles: the page sets `style` attributes.
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
     b"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    # A page of another site that opened this one keeps no handle on it: it could set the
    # window's hash to an invitation and swap the match in play (fifteenth audit).
    (b"cross-origin-opener-policy", b"same-origin"),
]
# And on the RPCs' answers, which carry seat tokens: kept by no cache.
RPC_HEADERS = [*SECURITY_HEADERS, (b"cache-control", b"no-store")]


class WebApp:
    """ASGI app: RPC paths go to the bridge, the rest to the static page. Both count
    against the client's request rate: the bridge in its protocol, the page here."""

    def __init__(self, bridge: EngineBridge, rate: RequestRate, site_dir: Path = SITE_DIR,
                 only_hosts: frozenset[str] | None = None) -> None:
        self.bridge = bridge
        self.rate = rate
        self.only_hosts = only_hosts  # the Host names answered; None: any
        # Inside a Starlette app so a missing file is a 404 response, not an exception.
        self.page = Starlette(routes=[Mount("/", StaticFiles(directory=site_dir, html=True))])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.page(scope, receive, send)
            return
        rpc = scope["path"].startswith(RPC_PREFIX)
        send = _adding(send, RPC_HEADERS if rpc else SECURITY_HEADERS)
        if self.only_hosts is not None and _host_name(scope) not in self.only_hosts:
            await _misdirected(send, self.only_hosts)
        elif rpc:
            native = _native_grpc(scope)
            # What the bridge answers without running its interceptors (native gRPC, an
            # unknown method, a verb it does not serve) is counted here instead, or a
            # client could send those without limit.
            counted_here = (native or scope["path"] not in RPC_PATHS
                            or scope["method"] not in ("POST", "GET"))
            if counted_here and (refusal := self.rate.over(_host(scope))) is not None:
                await _too_many(send, refusal)
            elif native:
                await _refuse_native_grpc(send)
            else:
                await self.bridge(scope, receive, send)
        elif (refusal := self.rate.over(_host(scope))) is not None:
            await _too_many(send, refusal)
        else:
            await self.page(scope, receive, send)


def _adding(send: Send, headers: list[tuple[bytes, bytes]]) -> Send:
    """`send`, with `headers` added to the response's start."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *headers]}
        await send(message)

    return sending


def _host(scope: Scope) -> str | None:
    """The client's address: the peer's, or behind a trusted proxy the one uvicorn read
    from x-forwarded-for (the bridge's ctx.client_address comes from the same)."""
    client = scope.get("client")
    return client[0] if client else None


def _host_name(scope: Scope) -> str:
    """The Host header's name, without its port, in lower case ("" when absent)."""
    for name, value in scope["headers"]:
        if name == b"host":
            return host_name(value.decode("latin-1"))
    return ""


async def _misdirected(send: Send, names: frozenset[str]) -> None:
    """421: this server does not answer to the name the request was sent to."""
    message = f"this server answers only to {', '.join(sorted(names))}".encode()
    await send({"type": "http.response.start", "status": 421,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": message})


def _native_grpc(scope: Scope) -> bool:
    """A native gRPC call (not gRPC-Web): it needs HTTP/2 trailers, which this server
    cannot send, and the bridge would answer it with an internal error."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.startswith(b"application/grpc") and not value.startswith(
                b"application/grpc-web")
    return False


async def _refuse_native_grpc(send: Send) -> None:
    """415, as the gRPC protocol answers a content type it cannot serve, saying where to go."""
    message = b"native gRPC needs HTTP/2: call the engine's gRPC port, or use gRPC-Web here"
    await send({"type": "http.response.start", "status": 415, "headers": [
        (b"content-type", b"text/plain"), (b"grpc-status", b"12"),
        (b"grpc-message", quote(message).encode())]})
    await send({"type": "http.response.body", "body": message})


async def _too_many(send: Send, refusal: Refusal) -> None:
    """429 with Retry-After, for a page file past the client's request rate."""
    wait_s = math.ceil(refusal.retry_after_s or 1)
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"text/plain"), (b"retry-after", str(wait_s).encode())]})
    await send({"type": "http.response.body", "body": refusal.message.encode()})
