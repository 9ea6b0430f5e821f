"""RecordService.GetReview: the hosted AI's review of a finished match, made once and kept.

Why the engine asks the AI service (AiService.Review) instead of judging the
moves itself: the evaluator is the AI's (battleline_ai, which the engine does
not import) and its CPU belongs in the AI's search pool, like a hint's. The
engine checks that the match is over, rebuilds its last game's record from the
match's own events (the deal's seed and every action) and keeps the answer in
Redis with the match: a finished game's review never changes.

Who may: anyone who may read the record, which reveals every card once the
match is over. Limits: a client may have a few reviews made at once and then
one per `EngineConfig.review_rate` (reading one already made is free), so that
throwaway matches cannot fill the queue players' hints wait in; one review per
match at a time in this process (a second caller waits for the first's answer)
and the AI service's own (one per match, and the asking client's places in its
queue, as for hints): RESOURCE_EXHAUSTED when it is full.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from battleline.v1 import ai_pb2, record_pb2

from .errors import precondition
from .model import CANCELLED, Match
from .runtime import Runtime
from .storage import StoredEvent

# The AI judges a game in about half a second of CPU; this covers a queue of a few.
REVIEW_TIMEOUT_S = 60.0
MAX_EVENTS = 100_000  # as GetRecord reads


def last_game_actions(events: Sequence[StoredEvent]) -> list[str]:
    """The actions of the match's last game, in the rules-core notation: a series
    starts each game with a `game_started` event."""
    actions: list[str] = []
    for event in events:
        kind = event.fields.get("k")
        if kind == "game_started":
            actions = []
        elif kind == "action":
            actions.append(event.fields["a"])
    return actions


class Reviews:
    """GetReview's answers: from Redis once made, else from the AI service (one
    request per match in flight from this process)."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self._making: dict[str, asyncio.Future[bytes]] = {}

    async def get(self, match_id: str, caller: str) -> record_pb2.GetReviewResponse:
        """The review of `match_id`, asked by the client `caller` (its address)."""
        match = await self.rt.matches.read(match_id)  # NOT_FOUND for an unknown match
        if not match.finished:
            raise precondition("match-not-over",
                               "a match is reviewed once it is over: ask again after its end")
        if match.end == CANCELLED:  # reviewed, an empty game 1 (thirty-first audit)
            raise precondition("cancelled", "this match was cancelled before its first game: "
                               "it has no moves to review")
        stored = await self.rt.storage.reviews.get(match_id)
        if stored is None:
            page = await self.rt.storage.events.events_after(match_id, 0, MAX_EVENTS)
            actions = last_game_actions(page.events)
            if not actions:  # reviewed, and charged, as an empty game (thirty-first audit)
                raise precondition("no-moves", f"game {match.game} of this match ended "
                                   "before any move: it has nothing to review")
            making = self._making.get(match_id)
            if making is None:
                self.rt.review_limit.take(caller)
                making = self._making[match_id] = asyncio.ensure_future(
                    self._make(match, actions, caller))
                making.add_done_callback(self._done)
            # A caller that gives up does not cancel the review others wait for.
            stored = await asyncio.shield(making)
        return record_pb2.GetReviewResponse.FromString(stored)

    def _done(self, making: asyncio.Future[bytes]) -> None:
        """Forget a finished request (its error was given to every caller still waiting)."""
        for match_id, future in list(self._making.items()):
            if future is making:
                del self._making[match_id]
        if not making.cancelled():
            making.exception()  # read: no "never retrieved" warning when all callers left

    async def _make(self, match: Match, actions: list[str], caller: str) -> bytes:
        state = match.state
        if state.seed is None:  # a full state always has its deal's seed
            raise precondition("no-seed", "this match's deal cannot be replayed")
        reply = await self.rt.hints.review(
            ai_pb2.ReviewRequest(
                ruleset=state.ruleset.name, options=state.options.text(),
                seed=state.seed, actions=actions,
                match_id=match.match_id, game=match.game),
            timeout_s=REVIEW_TIMEOUT_S, owner=caller,
            on_busy=lambda: self.rt.review_limit.refund(caller))
        data = record_pb2.GetReviewResponse(review=reply.review).SerializeToString()
        await self.rt.storage.reviews.put(match.match_id, data)
        return data
