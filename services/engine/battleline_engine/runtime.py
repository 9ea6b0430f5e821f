"""What the servicers of one process share: settings, storage, domain, limits, fan-out."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from .auth import AiKey, Callers, Seats
from .errors import Kind, Refusal, invalid
from .matches import Matches
from .model import ClockKind
from .ratelimit import Rate, RateLimiter
from .seating import Seating
from .status import end_with
from .storage import STORE_UNAVAILABLE, Storage, check_id, store_full, store_unwritable


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Tunables of the game services (flags and env vars of `battleline serve`)."""

    default_clock: ClockKind = ClockKind.PER_MOVE
    default_clock_ms: int = 5 * 60 * 1000
    create_rate: Rate = field(default_factory=lambda: Rate(per_s=2.0, burst=20))
    action_rate: Rate = field(default_factory=lambda: Rate(per_s=20.0, burst=60))
    streams_per_seat: int = 4  # open Watch streams per seat (and per spectator address)
    streams_per_client: int = 256  # open Watch streams per client address, all matches
    sweep_interval_s: float = 0.5
    # How often the event hub looks whether the watched matches are still stored, to end
    # the Watch streams of those that expired without an event: one pipelined EXISTS per
    # watched match, 1,000 a round trip (10,000 cost about 0.1 s of the engine's CPU).
    watch_gone_check_s: float = 30.0
    list_rate: Rate = field(default_factory=lambda: Rate(per_s=5.0, burst=20))  # per address
    # GetRecord per address: a long series' record costs tens of milliseconds to build.
    record_rate: Rate = field(default_factory=lambda: Rate(per_s=5.0, burst=20))
    # Reviews to be made per address (one already made is read from Redis, unlimited): each
    # costs the AI service about half a second of search, in the queue hints wait in.
    review_rate: Rate = field(default_factory=lambda: Rate(per_s=0.1, burst=5))
    # Seconds of hint search per second per address: one client holding many seats (LOCAL
    # matches are cheap) may not keep the AI service's queue to itself.
    hint_rate: Rate = field(default_factory=lambda: Rate(per_s=0.5, burst=10))
    # Seat-token lookups per address that find no seat (a wrong token, a guessed AI key):
    # each lookup is charged while it runs and given back if it finds one, so the burst
    # also bounds the first uses of real tokens in flight at once from one address (a load
    # test's after an engine restart; tokens an engine hands out are cached, no lookup).
    token_guess_rate: Rate = field(default_factory=lambda: Rate(per_s=10.0, burst=1000))
    # Calls of every kind per address, the hosted AI's excepted: those no other limit
    # counts (GetView, Watch opens) each take the event loop's time, and one address
    # asking 1,800 GetViews a second made every other client's 30 times slower.
    call_rate: Rate = field(default_factory=lambda: Rate(per_s=100.0, burst=400))
    open_matches_per_client: int = 5  # unjoined OPEN matches one client may hold at once
    lobby_ttl_s: int = 15 * 60  # an OPEN match nobody joined expires after this
    # Proxies whose x-forwarded-for is believed (`--trusted-proxy`); see auth.Callers.
    trusted_proxies: tuple[str, ...] = ()
    # The secret the web gateway presents to have its client's address believed.
    gateway_secret: str = field(default="", repr=False)
    # The hosted AI's key (what `battleline ai` holds): it acts for the seats reserved for
    # the AI and authenticates hint requests to AiService. "": no hosted AI here, so AI
    # matches are refused at once. Never printed (repr=False); compared by its hash.
    ai_key: str = field(default="", repr=False)
    ai_address: str = ""  # AiService (`battleline ai --port`) for hints; "": no hints
    ai_matches_per_client: int = 4  # unfinished AI matches one client may hold at once
    ai_idle_ms: int = 15 * 60 * 1000  # the per-move limit of an AI match asked without a clock
    # An AI match no hosted AI took by then is cancelled (every worker full or down): it
    # would otherwise wait for ever and hold one of its creator's AI-match places.
    ai_join_ms: int = 60_000


class Runtime:
    """The shared objects; one per process."""

    def __init__(self, storage: Storage, config: EngineConfig) -> None:
        from .hints import HintClient
        from .hub import Hub

        self.storage = storage
        self.config = config
        self.matches = Matches(storage, lobby_ttl_s=config.lobby_ttl_s,
                               ai_join_ms=config.ai_join_ms)
        self.seating = Seating(self.matches)
        self.ai_key = AiKey(config.ai_key)
        self.callers = Callers(config.trusted_proxies, config.gateway_secret)
        self.seats = Seats(storage, self.callers,
                           RateLimiter(config.token_guess_rate, "unknown seat tokens"), self.ai_key)
        self.create_limit = RateLimiter(config.create_rate, "matches created")
        self.action_limit = RateLimiter(config.action_rate, "actions")
        self.call_limit = RateLimiter(config.call_rate, "calls")
        self.list_limit = RateLimiter(config.list_rate, "lobby listings")
        self.record_limit = RateLimiter(config.record_rate, "records read")
        self.review_limit = RateLimiter(config.review_rate, "new reviews")
        self.hint_limit = RateLimiter(config.hint_rate, "seconds of hints")
        self.hub = Hub(storage, config.watch_gone_check_s)
        self.hints = HintClient(config.ai_address, config.ai_key)


def match_id_of(value: str) -> str:
    """A request's match id, checked before it becomes part of a key."""
    try:
        return check_id(value)
    except ValueError as err:
        raise invalid("bad-match-id", str(err)) from None


STORAGE_FULL_RETRY_S = 30.0  # a full store frees room as matches expire, not at once


def _refusal_of(err: Exception) -> Refusal | None:
    """The refusal a handler's exception stands for, or None for a defect."""
    if isinstance(err, Refusal):
        return err
    if isinstance(err, STORE_UNAVAILABLE):
        return Refusal(Kind.UNAVAILABLE, "storage-unavailable",
                       "the match store is unreachable: retry")
    if store_full(err):
        return Refusal(Kind.EXHAUSTED, "storage-full",
                       "the match store is full (its memory limit): retry later",
                       retry_after_s=STORAGE_FULL_RETRY_S)
    if store_unwritable(err):
        return Refusal(Kind.UNAVAILABLE, "storage-unavailable",
                       "the match store cannot take writes now (a replica, or its disk "
                       "full): retry")
    return None


R = TypeVar("R")


def count_call(runtime: Runtime, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """Charge one call to its caller's address, or refuse it past `call_rate`. The hosted
    AI's calls are not counted: it plays every AI match from one address."""
    if not runtime.seats.is_ai(context):
        runtime.call_limit.take(runtime.callers.key(context))


def unary(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Count a unary handler's call, and turn a Refusal it raises into its rich status."""

    @functools.wraps(method)
    async def wrapped(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> R:
        try:
            count_call(self.rt, context)
            return await method(self, request, context)
        except Exception as err:
            await end_with(context, err, _refusal_of(err), method.__qualname__)

    return wrapped


def streaming(
    method: Callable[..., AsyncIterator[R]],
) -> Callable[..., AsyncIterator[R]]:
    """The same for a server-streaming handler."""

    @functools.wraps(method)
    async def wrapped(
        self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[R]:
        try:
            count_call(self.rt, context)
            async for item in method(self, request, context):
                yield item
        except Exception as err:
            await end_with(context, err, _refusal_of(err), method.__qualname__)

    return wrapped
