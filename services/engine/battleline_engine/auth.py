"""Who is calling: the seat of a bearer token, and the caller's address for rate limits."""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import grpc

from .errors import Refusal
from .storage import Storage


def bearer(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The token of an `authorization: Bearer <token>` header, if any."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Refusal(grpc.StatusCode.UNAUTHENTICATED, "bad-token",
                              "authorization must be 'Bearer <seat token>'")
            return token.strip()
    return None


FORWARDED_FOR = "x-forwarded-for"


class Callers:
    """The caller's address for per-client limits.

    Normally the connection's peer address (without its port: one client,
    many connections). Behind the web gateway every browser arrives from the
    gateway's address, so when the peer is a trusted proxy, the address it
    forwards in `x-forwarded-for` (the last entry: the one it saw) is used.
    """

    def __init__(self, trusted_proxies: Iterable[str]) -> None:
        self.trusted = tuple(ipaddress.ip_network(net) for net in trusted_proxies)

    def key(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        peer = unquote(context.peer() or "")  # "ipv4:1.2.3.4:5", "ipv6:[::1]:5", "unix:..."
        kind, _, rest = peer.partition(":")
        host = rest.rsplit(":", 1)[0].strip("[]") if kind in ("ipv4", "ipv6") else peer
        if self._trusted(host):
            for name, value in context.invocation_metadata() or ():
                if name == FORWARDED_FOR:
                    text = value.decode() if isinstance(value, bytes) else value
                    return text.rsplit(",", 1)[-1].strip() or host
        return host

    def _trusted(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in net for net in self.trusted)


class Seats:
    """Token -> (match id, seat), with a cache: a token's seat never changes."""

    def __init__(self, storage: Storage, size: int = 50_000) -> None:
        self.storage = storage
        self.size = size
        self._cache: OrderedDict[str, tuple[str, int]] = OrderedDict()

    async def of(self, token: str) -> tuple[str, int] | None:
        found = self._cache.get(token)
        if found is None:
            found = await self.storage.seat_of(token)
            if found is not None:
                self._cache[token] = found
                if len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return found

    async def require(self, context: grpc.aio.ServicerContext[Any, Any], match_id: str) -> int:
        """The caller's seat in `match_id`: UNAUTHENTICATED or PERMISSION_DENIED otherwise."""
        seat = await self.optional(context, match_id)
        if seat is None:
            raise Refusal(grpc.StatusCode.UNAUTHENTICATED, "no-token",
                          "send the seat token as 'authorization: Bearer <token>'")
        return seat

    async def optional(self, context: grpc.aio.ServicerContext[Any, Any],
                       match_id: str) -> int | None:
        """The caller's seat, or None without a token (a spectator)."""
        token = bearer(context)
        if token is None:
            return None
        found = await self.of(token)
        if found is None:
            raise Refusal(grpc.StatusCode.UNAUTHENTICATED, "unknown-token",
                          "unknown seat token (or its match has expired)")
        if found[0] != match_id:
            raise Refusal(grpc.StatusCode.PERMISSION_DENIED, "other-match",
                          "this seat token belongs to another match")
        return found[1]
