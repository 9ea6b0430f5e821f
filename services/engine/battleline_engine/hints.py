"""GameService.GetHint: the hosted AI's suggestion for the caller's own seat.

Why here and not in the client: a hint must come from the seat's view only
and only where the match allows it, so the engine (which knows the token's
seat and the match's options) decides whether to ask and builds the view; the
search itself runs on the AI service (`AiService.Suggest`, `battleline ai
--port`), never in the engine's event loop.

Who may: the holder of the seat's token, for that seat, while it has
something to do. Where: matches against the hosted AI and LOCAL (hot-seat)
matches; never between two people (OPEN), where a hint would be an outside
engine helping one player. How much: one search per seat at a time (the AI
service's rule), and per client address a budget of search seconds
(`EngineConfig.hint_rate`), since one client may hold many seats; a hint is charged
its budget, and never less than what the smallest hint costs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import grpc.aio

from battleline.v1 import ai_pb2, ai_pb2_grpc, game_pb2
from battleline.v1 import types_pb2 as pb
from battleline_client.port_owner import AsyncOwnerCheck

from . import views
from .auth import AI_OWNER
from .errors import Kind, Refusal, precondition
from .matches import require_playing
from .model import Opponent
from .runtime import Runtime, match_id_of
from .storage import now_ms

DEFAULT_BUDGET_MS = 1000
MAX_BUDGET_MS = 5000
# What the smallest hint costs the AI service whatever budget it asks (a search process's
# turn, the position decoded, a search of 50 ms at least): the least a hint is charged.
MIN_CHARGE_MS = 100
# How long a hint may wait for a search process: the AI service runs one search per
# seat at a time and refuses at once past a short queue, so this covers a few searches.
QUEUE_WAIT_S = 3 * MAX_BUDGET_MS / 1000
HINT_BOT = "ismcts:level=5"
_OPPONENTS_WITH_HINTS = frozenset({Opponent.AI, Opponent.LOCAL})


class HintClient:
    """A lazily opened channel to the AI service (EngineConfig.ai_address), called with
    the AI's key: AiService answers no one else. Hints and post-game reviews."""

    def __init__(self, address: str, key: str) -> None:
        self.address = address
        self._metadata = (("authorization", f"Bearer {key}"),)
        self._stub: ai_pb2_grpc.AiServiceAsyncStub | None = None

    async def suggest(self, request: ai_pb2.SuggestRequest, timeout_s: float,
                      owner: str, on_busy: Callable[[], None]) -> ai_pb2.SuggestResponse:
        """A hint for `owner` (the asking client's limiter key), whose searches the AI
        service shares fairly with other clients'. `on_busy` gives back what the hint
        was charged when the AI had no room: it searched nothing."""
        with self._refusals("hint", on_busy):
            response: ai_pb2.SuggestResponse = await self._ai().Suggest(
                request, timeout=timeout_s, metadata=(*self._metadata, (AI_OWNER, owner)))
        return response

    async def review(self, request: ai_pb2.ReviewRequest, timeout_s: float,
                     owner: str, on_busy: Callable[[], None]) -> ai_pb2.ReviewResponse:
        """A review asked by `owner`: its places in the AI's queue are that client's own,
        so one client's reviews cannot keep another's (or its hints) waiting. `on_busy`
        as for `suggest`."""
        with self._refusals("review", on_busy):
            response: ai_pb2.ReviewResponse = await self._ai().Review(
                request, timeout=timeout_s, metadata=(*self._metadata, (AI_OWNER, owner)))
        return response

    def _ai(self) -> ai_pb2_grpc.AiServiceAsyncStub:
        if not self.address:
            raise Refusal(Kind.UNAVAILABLE, "no-ai-service",
                          "hints and reviews need the AI service: start the engine with "
                          "--ai-address")
        if self._stub is None:
            # Each call carries the AI's key and a seat's view, hand included: none to
            # another user's process on the AI's port (twenty-ninth audit).
            self._stub = ai_pb2_grpc.AiServiceStub(grpc.aio.insecure_channel(
                self.address, interceptors=[AsyncOwnerCheck(self.address, strict=True)]))
        return self._stub

    @staticmethod
    @contextlib.contextmanager
    def _refusals(what: str, on_busy: Callable[[], None]) -> Iterator[None]:
        """The AI service's failures as our refusals: busy stays RESOURCE_EXHAUSTED."""
        try:
            yield
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                on_busy()
                raise Refusal(Kind.EXHAUSTED, f"{what}-busy",
                              f"the AI is busy: {err.details()}", retry_after_s=1.0) from None
            raise Refusal(Kind.UNAVAILABLE, "ai-service-failed",
                          f"the AI service did not answer: {err.code().name}") from None


async def get_hint(runtime: Runtime, request: game_pb2.GetHintRequest,
                   context: grpc.aio.ServicerContext[Any, Any]) -> game_pb2.GetHintResponse:
    """Check who asks and where, then ask the AI service about the seat's view."""
    match_id = match_id_of(request.match_id)
    seat = await runtime.seats.require(context, match_id)  # the seat's owner, no spectator
    runtime.action_limit.take(f"{match_id}/{seat}")
    match = await runtime.matches.read(match_id)
    if match.meta.opponent not in _OPPONENTS_WITH_HINTS:
        raise Refusal(Kind.FORBIDDEN, "hints-off",
                      "hints are off in matches between two people")
    require_playing(match)
    view = pb.MatchView()
    views.write_view(view, match, seat, now_ms(), True)  # with the position: the AI reads it
    if not view.legal_actions:
        raise precondition("not-your-turn", "a hint is for a seat that has something to do")
    budget_ms = min(request.budget_ms or DEFAULT_BUDGET_MS, MAX_BUDGET_MS)
    client = runtime.callers.key(context)
    charge_s = max(budget_ms, MIN_CHARGE_MS) / 1000
    runtime.hint_limit.take(client, charge_s)
    suggestion = await runtime.hints.suggest(
        ai_pb2.SuggestRequest(view=view, bot=HINT_BOT, budget_ms=budget_ms),
        timeout_s=budget_ms / 1000 + QUEUE_WAIT_S, owner=client,
        on_busy=lambda: runtime.hint_limit.refund(client, charge_s))
    return game_pb2.GetHintResponse(version=view.version, suggestion=suggestion)


async def servicer_get_hint(servicer: Any, request: game_pb2.GetHintRequest,
                            context: grpc.aio.ServicerContext[Any, Any],
                            ) -> game_pb2.GetHintResponse:
    """GameServicer.GetHint (wired in game.py with `unary`)."""
    return await get_hint(servicer.rt, request, context)
