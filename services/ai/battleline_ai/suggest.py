"""battleline.v1.AiService: the hosted AI's decision as an RPC (hints, outside harnesses),
and its review of a finished game (`review.py`, for RecordService.GetReview).

Why a service of its own rather than a function the engine imports: the
search is CPU-heavy and runs in this service's process pool, so engines stay
responsive and hints scale with AI capacity, not engine capacity.

Who may call: holders of the AI's key (the engines asking for hints, operators'
harnesses), sent as `authorization: Bearer <key>`; players get hints through the
engine's GetHint, which checks their seat. Capacity is shared: one search per
seat (a view's match and viewer) at a time, at most `PER_OWNER` searches running or
waiting for one client (the engine names it in `AI_OWNER`) and `QUEUE_PER_PROCESS`
per search process; past that the call is refused at once (RESOURCE_EXHAUSTED)
instead of timing out behind others, unless another client holds more places: then that
client's newest waiting call gives way. A process that comes free goes to the client
served least recently (`processes.DeadlinePool`), so a few clients asking all the
time do not crowd out the others. A review takes one such place, and one review per
match runs at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from battleline.v1 import ai_pb2, ai_pb2_grpc, review_pb2, types_pb2
from battleline_engine.auth import AI_OWNER, AiKey, Callers, bearer
from battleline_engine.errors import Kind, Refusal, invalid
from battleline_engine.health import CappedHealthServicer
from battleline_engine.listening import listen
from battleline_engine.metrics import MetricsInterceptor
from battleline_engine.ratelimit import Rate, RateLimiter
from battleline_engine.status import end_with
from battleline_rules import MAX_REPEAT

from .decide import decide, level_spec
from .processes import DeadlinePool, on_loop
from .review import EVALUATOR, MAX_ACTIONS, GameReview, review_record
from .searchers import search_processes

log = logging.getLogger("battleline.ai")
T = TypeVar("T")

DEFAULT_BUDGET_MS = 2000
MAX_BUDGET_MS = 30_000
MAX_ITERATIONS = 100_000
# Deep enough that filling it takes 64 client addresses per process (each held to one
# place by `_make_room`); a waiting call costs a request and a future, and one that
# cannot start before its deadline is dropped, so depth never makes a call late.
QUEUE_PER_PROCESS = 64
PER_OWNER = 2  # one search running and one waiting
REVIEW_SECONDS = 1.0  # what a review takes of a process at most (about 0.3-0.5 s)
DEFAULT_WAIT_S = 15.0  # how long a call without a deadline may wait for a process
# A whole position is under 1,000 characters; no deck holds more than 60 cards of a kind.
MAX_POSITION_CHARS = 4096
_REPEAT = re.compile(r"\*(\d+)")


def check_position_size(text: str) -> None:
    """Refuse a position no game can have before anything is built from it: the
    notation's `card*N` makes N cards, so a short text could ask for millions."""
    if len(text) > MAX_POSITION_CHARS:
        raise invalid("position-too-large",
                      f"position: at most {MAX_POSITION_CHARS} characters, not {len(text)}")
    for count in _REPEAT.findall(text):
        if len(count) > 3 or int(count) > MAX_REPEAT:
            raise invalid("position-too-large",
                          f"position: a card repeated at most {MAX_REPEAT} times")


def request_spec(request: ai_pb2.SuggestRequest) -> str:
    """The bot spec a request asks for, with its iteration budget."""
    spec = request.bot.strip() or level_spec(5)
    if request.iterations:
        if not spec.startswith("ismcts"):
            raise ValueError("iterations apply to ismcts bots only")
        spec += f"{',' if ':' in spec else ':'}iterations={request.iterations}"
    return spec


_SEATS = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND)


def review_message(review: GameReview, game: int) -> review_pb2.GameReview:
    """A review as the API sends it: moves and costliest moves numbered from 1."""
    return review_pb2.GameReview(
        moves=[review_pb2.MoveReview(
            number=m.index + 1, seat=_SEATS[m.seat], action=m.action,
            estimate_before=m.before, estimate_after=m.after,
            preferred_action=m.preferred, loss=m.loss) for m in review.moves],
        costliest=[i + 1 for i in review.costliest], game=game, evaluator=EVALUATOR)


@dataclass
class _Place:
    """One call's hold on the queue: whose it is, the `seconds` its search may take, the
    search once one runs, and when its seat (or match) is free again at the latest (one
    that stops at an iteration count ends sooner), the retry delay of a call refused for
    it."""

    owner: str
    seconds: float
    free_by: float = field(init=False)  # time.monotonic(); a guess until the search starts
    search: Future[Any] | None = None

    def __post_init__(self) -> None:
        self.free_by = time.monotonic() + self.seconds

    def start(self, search: Future[Any]) -> None:
        self.search, self.free_by = search, time.monotonic() + self.seconds


# Wrong keys per caller address: a key of 16 characters or more is out of reach of a few
# a second, and the engine, which holds the key, never spends any.
KEY_GUESSES = Rate(per_s=1.0, burst=30)


class AiServicer(ai_pb2_grpc.AiServiceServicer):
    """Suggest: one search per call, in the process pool; Review: one game's review,
    in the same pool and under the same limits (one per match at a time)."""

    def __init__(self, key: AiKey, processes: int = 1,
                 key_guesses: Rate = KEY_GUESSES) -> None:
        self.processes = processes
        self._start_searchers()
        self.key = key
        self.callers = Callers()
        self.guesses = RateLimiter(key_guesses, "wrong AI keys")
        self.max_searches = QUEUE_PER_PROCESS * processes
        self.searching: dict[str, _Place] = {}  # seats with a search running or waiting
        self.queued: Counter[str] = Counter()  # searches running or waiting, per owner
        # Places taken back from an owner whose waiting call gave way (`_make_room`) before
        # that call has left its slot: the owner's next slot to close does not count down.
        self.given_way: Counter[str] = Counter()

    def _start_searchers(self) -> None:
        self.pool = search_processes(self.processes)
        self.turns = DeadlinePool(self.pool, self.processes)

    async def Suggest(self, request: ai_pb2.SuggestRequest,
                      context: grpc.aio.ServicerContext[Any, Any]) -> ai_pb2.SuggestResponse:
        try:
            return await self._suggest(request, context)
        except Exception as err:
            await end_with(context, err, err if isinstance(err, Refusal) else None, "Suggest")

    async def Review(self, request: ai_pb2.ReviewRequest,
                     context: grpc.aio.ServicerContext[Any, Any]) -> ai_pb2.ReviewResponse:
        try:
            return await self._review(request, context)
        except Exception as err:
            await end_with(context, err, err if isinstance(err, Refusal) else None, "Review")

    async def _review(self, request: ai_pb2.ReviewRequest,
                      context: grpc.aio.ServicerContext[Any, Any]) -> ai_pb2.ReviewResponse:
        self._authenticate(context)
        if len(request.actions) > MAX_ACTIONS or any(len(a) > 64 for a in request.actions):
            raise invalid("record-too-large",
                          f"actions: at most {MAX_ACTIONS}, each under 64 characters")
        key = f"review:{request.match_id}" if request.match_id else ""
        owner = _owner(context)
        async with self._slot(key, owner, "review-running",
                              "a review of this match is running: one at a time",
                              REVIEW_SECONDS) as place:
            try:
                review = await self._run(context, place, review_record, request.ruleset,
                                         request.options, request.seed, list(request.actions))
            except ValueError as err:
                raise invalid("bad-record", str(err)) from None
        return ai_pb2.ReviewResponse(review=review_message(review, request.game or 1))

    async def _run(self, context: grpc.aio.ServicerContext[Any, Any], place: _Place,
                   fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` in a search process for `place`, which must start in time to take
        its seconds before the call's deadline (else RESOURCE_EXHAUSTED `ai-busy`); the job
        is the place's once it runs. A process that died (the OOM killer, a crash in
        compiled code) broke the pool for good: it is replaced, and the call refused
        UNAVAILABLE for its caller to retry."""
        remaining = context.time_remaining()
        wait_s = remaining if remaining is not None else DEFAULT_WAIT_S
        start_by = time.monotonic() + wait_s - place.seconds
        pool = self.pool
        try:
            done = await self.turns.run(start_by, fn, *args, owner=place.owner,
                                        started=place.start)
        except BrokenProcessPool:
            if self.pool is pool:
                log.error("a search process died: starting new search processes")
                pool.shutdown(wait=False, cancel_futures=True)
                self._start_searchers()
            raise Refusal(Kind.UNAVAILABLE, "ai-restarting",
                          "a search process of the AI service died: retry") from None
        if done is None:
            raise Refusal(Kind.EXHAUSTED, "ai-busy",
                          "no search process came free in time, or this call gave its place "
                          "to a client holding fewer: retry shortly", retry_after_s=1.0)
        return done

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)

    def _authenticate(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        """The caller holds the AI's key. Every try is charged to its address first and
        given back when right, so an address that spent its guesses is refused before
        its key is compared (a right guess then is no answer)."""
        address = self.callers.key(context)
        self.guesses.take(address)
        token = bearer(context)
        if token is not None and self.key.matches(token):
            self.guesses.refund(address)
        else:
            raise Refusal(Kind.UNAUTHENTICATED, "no-ai-key",
                          "AiService answers holders of the AI's key; players ask the "
                          "engine (GameService.GetHint, RecordService.GetReview)")

    @contextlib.asynccontextmanager
    async def _slot(self, key: str, owner: str, reason: str, busy: str,
                    seconds: float) -> AsyncIterator[_Place]:
        """Hold one of the queue's places and one of `owner`'s, and ``key`` (a seat or a
        match; "": none) for a search of `seconds`, while the call runs and until the
        search it started (the place yielded is told) has ended: a caller that cancels
        leaves its search running in its process, and asking again must not queue a
        second beside it. Refused at once (RESOURCE_EXHAUSTED) when any is taken and no
        other client holds more places than `owner` would."""
        holder = self.searching.get(key)
        if holder is not None:
            raise Refusal(Kind.EXHAUSTED, reason, busy,
                          retry_after_s=max(0.1, holder.free_by - time.monotonic()))
        # The messages name no count: a client learns of the others' searches only
        # that every place is taken (twenty-seventh audit: the total was told).
        if self.queued[owner] >= PER_OWNER:
            raise Refusal(Kind.EXHAUSTED, "ai-busy",
                          f"this client has {PER_OWNER} searches running or waiting, the "
                          "most it may: retry when one has ended", retry_after_s=1.0)
        if sum(self.queued.values()) >= self.max_searches and not self._make_room(owner):
            raise Refusal(Kind.EXHAUSTED, "ai-busy",
                          "every search place is taken: retry shortly", retry_after_s=1.0)
        self.queued[owner] += 1
        place = _Place(owner, seconds)
        if key:
            self.searching[key] = place

        def leave() -> None:
            if self.given_way[owner]:
                self.given_way[owner] -= 1
                if not self.given_way[owner]:
                    del self.given_way[owner]
            else:
                self.queued[owner] -= 1
                if not self.queued[owner]:
                    del self.queued[owner]
            self.searching.pop(key, None)

        try:
            yield place
        finally:
            if place.search is not None and not place.search.done():
                place.search.add_done_callback(on_loop(asyncio.get_running_loop(), leave))
            else:
                leave()

    def _make_room(self, owner: str) -> bool:
        """Take a place of the full queue from a client holding more than `owner` will:
        its newest waiting call gives way (refused `ai-busy`). Why: with every client
        held to `PER_OWNER` places, a few addresses could still fill the queue and keep
        every other client out (ninth audit: 8 addresses, 100% of another's hints)."""
        for other, held in self.queued.most_common():
            if held <= self.queued[owner] + 1:
                return False
            if self.turns.give_way(other):
                self.queued[other] -= 1
                self.given_way[other] += 1
                return True
        return False

    async def _suggest(self, request: ai_pb2.SuggestRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> ai_pb2.SuggestResponse:
        self._authenticate(context)
        position = request.view.position if request.HasField("view") else request.position
        if not position:
            raise invalid("no-position", "give view (with its position) or position")
        check_position_size(position)
        budget_ms = request.budget_ms or DEFAULT_BUDGET_MS
        if budget_ms > MAX_BUDGET_MS or request.iterations > MAX_ITERATIONS:
            raise Refusal(Kind.EXHAUSTED, "budget-too-large",
                          f"budget: at most {MAX_BUDGET_MS} ms and {MAX_ITERATIONS} iterations")
        try:
            spec = request_spec(request)
        except ValueError as err:
            raise invalid("bad-bot", str(err)) from None
        seat = f"{request.view.match_id}/{request.view.viewer}" if request.view.match_id else ""
        seed = request.seed or random.SystemRandom().getrandbits(63)
        owner = _owner(context)
        async with self._slot(seat, owner, "seat-busy",
                              "a search for this seat is running: one at a time",
                              budget_ms / 1000) as place:
            try:
                decision = await self._run(context, place, decide, position, spec,
                                           place.seconds, seed)
            except ValueError as err:
                raise invalid("bad-position", str(err)) from None
        return ai_pb2.SuggestResponse(
            action=decision.action, win_estimate=decision.value,
            iterations=decision.iterations, seconds=decision.seconds, bot=spec,
            top_actions=[ai_pb2.ActionStats(action=a, visits=v, value=m)
                         for a, v, m in decision.top],
        )


def _owner(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """Whom the call is for: the client the engine names in `AI_OWNER` (read once the
    key is checked); callers that name none (operators' harnesses) count as one."""
    for key, value in context.invocation_metadata() or ():
        if key == AI_OWNER and isinstance(value, str):
            return value[:128]
    return ""


# The largest request is a review's record (MAX_ACTIONS actions under 64 characters each,
# about 134 KB): anything bigger is refused before it is decoded, however well it
# compresses (gRPC's default allows 4 MB). The engines are its only callers, so a few
# hundred connections are plenty.
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024),
    ("grpc.max_concurrent_streams", 100),
    ("grpc.max_allowed_incoming_connections", 512),
]


class AiServer:
    """AiService on `address` (`HOST:PORT`, port 0: any; or `unix:PATH`, a socket) with
    its own search pool, and gRPC health (SERVING once it listens) for a deployment's
    readiness probe."""

    def __init__(self, address: str, key: str, processes: int = 1,
                 key_guesses: Rate = KEY_GUESSES) -> None:
        self.address, self.processes = address, processes
        self.key = AiKey(key)
        self.key_guesses = key_guesses
        self.server: grpc.aio.Server | None = None
        self.servicer: AiServicer | None = None

    async def start(self) -> str:
        """Start serving; returns the address actually bound (the port chosen for 0)."""
        self.servicer = AiServicer(self.key, self.processes, self.key_guesses)
        # The engine's interceptor decodes requests itself: bytes that are not the message get
        # INVALID_ARGUMENT bad-request, not gRPC's UNKNOWN and a logged traceback.
        self.server = grpc.aio.server(interceptors=[MetricsInterceptor()],
                                      options=SERVER_OPTIONS)
        ai_pb2_grpc.add_AiServiceServicer_to_server(self.servicer, self.server)
        checks = CappedHealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(checks, self.server)
        port = listen(self.server, self.address)
        await self.server.start()
        service = ai_pb2.DESCRIPTOR.services_by_name["AiService"].full_name
        for name in (health.OVERALL_HEALTH, service):
            await checks.set(name, health_pb2.HealthCheckResponse.SERVING)
        if self.address.startswith("unix:"):
            return self.address
        return f"{self.address.rsplit(':', 1)[0]}:{port}"

    async def stop(self, grace: float = 1.0) -> None:
        """Stop serving, then wait for the searches still running (a cancelled call's
        goes on) off the event loop, which stays free for the rest of the process."""
        if self.server is not None:
            await self.server.stop(grace)
        if self.servicer is not None:
            await asyncio.to_thread(self.servicer.close)
