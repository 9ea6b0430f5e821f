"""Who is calling: the seat of a bearer token, and the caller's address for rate limits."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

import grpc

from battleline_client.tcp_table import unmapped

from .errors import Kind, Refusal
from .model import TrustedCache, cache_clock
from .ratelimit import RateLimiter
from .storage import STORE_UNAVAILABLE, Storage, hash_token


def bearer(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The token of an `authorization: Bearer <token>` header, if any."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Refusal(Kind.UNAUTHENTICATED, "bad-token",
                              "authorization must be 'Bearer <seat token>'")
            return token.strip()
    return None


FORWARDED_FOR = "x-forwarded-for"
# Sent by the web gateway: its per-deployment secret, and the address of its client.
GATEWAY_SECRET = "x-battleline-gateway-secret"
GATEWAY_CLIENT = "x-battleline-client"
# Sent by an engine to the AI service with a hint: the client (its limiter key) that
# asked, whose searches share the service's processes fairly with other clients'.
AI_OWNER = "x-battleline-owner"


class Callers:
    """The caller's address for per-client limits.

    The connection's peer address (without its port: one client, many connections),
    except for two callers that speak for someone else:

    - the web gateway, proven by the per-deployment secret it presents: the browser's
      address it sends in `x-battleline-client`. Its address proves nothing, since
      under `battleline serve` the gateway shares loopback with every local user;
    - a configured proxy (`--trusted-proxy CIDR`, e.g. Envoy with
      `use_remote_address`): the last `x-forwarded-for` entry, the peer it saw.

    Nobody else chooses the address they are counted under, and a forwarded value
    that is not an IP address is ignored (it would become a limiter key). The key is
    `address_key` of that address: an IPv6 client counts as its whole /64.
    """

    def __init__(self, trusted_proxies: Iterable[str] = (), gateway_secret: str = "") -> None:
        self.trusted = tuple(ipaddress.ip_network(net) for net in trusted_proxies)
        self.gateway_secret = gateway_secret.encode()

    def key(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """The limiter key of the caller: `address_key` of its address."""
        return address_key(self.address(context))

    def address(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """The caller's own address (see the class), as an IP address where it is one."""
        peer = unquote(context.peer() or "")  # "ipv4:1.2.3.4:5", "ipv6:[::1]:5", "unix:..."
        kind, _, rest = peer.partition(":")
        host = rest.rsplit(":", 1)[0].strip("[]") if kind in ("ipv4", "ipv6") else peer
        headers = {name: value for name, value in context.invocation_metadata() or ()}
        secret = _text(headers.get(GATEWAY_SECRET, ""))
        if self.gateway_secret and hmac.compare_digest(secret.encode(), self.gateway_secret):
            return _address(_text(headers.get(GATEWAY_CLIENT, ""))) or host
        if self.is_trusted_proxy(host):
            forwarded = _text(headers.get(FORWARDED_FOR, ""))
            return _address(forwarded.rsplit(",", 1)[-1]) or host
        return host

    def is_trusted_proxy(self, host: str) -> bool:
        """Whether `host` is in a configured proxy network (not an IP address: no)."""
        address = _address(host)
        return bool(address) and any(ipaddress.ip_address(address) in net
                                     for net in self.trusted)


LOOPBACK = "loopback"  # the key of every loopback address


def address_key(host: str) -> str:
    """The key a per-address limit counts `host` under: an IPv4 address itself (also one
    written as IPv4-mapped IPv6), an IPv6 address's /64 network, every loopback address
    as one (`LOOPBACK`), anything else as given.

    One subscriber is routinely given a whole /64 and may use any of its 2^64 addresses,
    so keying by the full IPv6 address gave each client as many budgets as it liked; any
    local user may likewise send from any of 127.0.0.0/8's 16 million addresses.
    """
    try:
        address = unmapped(ipaddress.ip_address(host))
    except ValueError:
        return host
    if address.is_loopback:
        return LOOPBACK
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _address(text: str) -> str:
    """`text` as a normalised IP address, or "" if it is none."""
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return ""


class AiKey:
    """The hosted AI's key, kept only as its SHA-256 hash and compared in constant time.

    Why one key rather than a token per match: whichever AI worker holds a match
    (after a takeover, after a restart) can act for its seat with nothing stored
    per match, and nothing in Redis (which keeps only this hash, as the seat's
    token hash) lets anyone else act for it.
    """

    def __init__(self, key: str) -> None:
        self.hash = hash_token(key) if key else ""

    def __bool__(self) -> bool:
        return bool(self.hash)

    def __repr__(self) -> str:
        return f"AiKey(set={bool(self)})"

    def matches(self, token: str) -> bool:
        return bool(self.hash) and hmac.compare_digest(hash_token(token), self.hash)


class Seats:
    """Token -> (match id, seat), with a cache: a token's seat never changes. The AI's
    key acts for the seat the hosted AI took in each match (cached too: it never moves).

    A token not in the cache costs a Redis lookup and, if it names no seat, is a guess:
    `guesses` charges each lookup to the caller's address before it starts and gives
    the charge back when the token names a seat or the store cannot answer, so a flood
    of wrong tokens (or of tries at the AI's key) is refused without a lookup, and
    concurrent guesses cannot all pass a check before any is counted."""

    def __init__(self, storage: Storage, callers: Callers, guesses: RateLimiter,
                 ai_key: AiKey | None = None, size: int = 50_000,
                 clock: Callable[[], float] = cache_clock) -> None:
        self.storage = storage
        self.callers = callers
        self.guesses = guesses
        self.ai_key = ai_key or AiKey("")
        self._cache: TrustedCache[str, tuple[str, int]] = TrustedCache(size, clock)
        self._ai_seats: TrustedCache[str, int] = TrustedCache(size, clock)  # by match id

    async def of(self, token: str, caller: str) -> tuple[str, int] | None:
        """The seat `token` names, looked up at `caller`'s charge if not cached."""
        found = self._cache.get(token)
        if found is None:
            self.guesses.take(caller)
            try:
                found = await self.storage.matches.seat_of(token)
            except STORE_UNAVAILABLE:
                self.guesses.refund(caller)  # no answer, so no guess: the caller may retry
                raise
            if found is not None:
                self.guesses.refund(caller)
                self.remember(token, *found)
        return found

    def remember(self, token: str, match_id: str, seat: int) -> None:
        """Cache a token this process handed out or found, so its first use costs no
        lookup (nor a place in `guesses`)."""
        self._cache.put(token, (match_id, seat))

    async def require(self, context: grpc.aio.ServicerContext[Any, Any], match_id: str) -> int:
        """The caller's seat in `match_id`: UNAUTHENTICATED or PERMISSION_DENIED otherwise."""
        seat = await self.optional(context, match_id)
        if seat is None:
            raise Refusal(Kind.UNAUTHENTICATED, "no-token",
                          "send the seat token as 'authorization: Bearer <token>'")
        return seat

    async def optional(self, context: grpc.aio.ServicerContext[Any, Any],
                       match_id: str) -> int | None:
        """The caller's seat, or None without a token (a spectator)."""
        token = bearer(context)
        if token is None:
            return None
        if self.ai_key.matches(token):
            return await self._ai_seat(match_id)
        found = await self.of(token, self.callers.key(context))
        if found is None:
            raise Refusal(Kind.UNAUTHENTICATED, "unknown-token",
                          "unknown seat token (or its match has expired)")
        if found[0] != match_id:
            raise Refusal(Kind.FORBIDDEN, "other-match",
                          "this seat token belongs to another match")
        return found[1]

    def is_ai(self, context: grpc.aio.ServicerContext[Any, Any]) -> bool:
        """Whether the caller presents the hosted AI's key."""
        token = bearer(context)
        return token is not None and self.ai_key.matches(token)

    async def _ai_seat(self, match_id: str) -> int:
        seat = self._ai_seats.get(match_id)
        if seat is None:
            seat = await self.storage.matches.seat_by_hash(match_id, self.ai_key.hash)
            if seat is None:
                raise Refusal(Kind.FORBIDDEN, "not-ai-seat",
                              "the AI key acts only for a seat the hosted AI took in this "
                              "match (JoinMatch with the key first)")
            self._ai_seats.put(match_id, seat)
        return seat
