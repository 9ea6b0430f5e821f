"""RecordService: the move list, projected while the match is live, revealed once over;
and the hosted AI's review of a finished match (reviews.py)."""

from __future__ import annotations

from typing import Any

import grpc

from battleline.v1 import record_pb2, record_pb2_grpc
from battleline_rules import SPECTATOR

from . import views
from .reviews import Reviews
from .runtime import Runtime, match_id_of, unary

MAX_EVENTS = 100_000


class RecordServicer(record_pb2_grpc.RecordServiceServicer):
    """battleline.v1.RecordService."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.reviews = Reviews(runtime)

    @unary
    async def GetRecord(self, request: record_pb2.GetRecordRequest,
                        context: grpc.aio.ServicerContext[Any, Any],
                        ) -> record_pb2.GetRecordResponse:
        match_id = match_id_of(request.match_id)
        self.rt.record_limit.take(self.rt.callers.key(context))
        seat = await self.rt.seats.optional(context, match_id)
        match = await self.rt.matches.read(match_id)
        page = await self.rt.storage.events.events_after(match_id, 0, MAX_EVENTS)
        viewer = views.record_viewer(match, SPECTATOR if seat is None else seat)
        response = record_pb2.GetRecordResponse(
            options=views.options_message(match.meta),
            # The events up to the match read, not those of a commit made since: one
            # moment (a race audit saw a record end with the game's events yet say it
            # was not complete, its position still playing).
            events=[views.event_message(e, viewer) for e in page.events
                    if e.number <= match.record.last_event],
            complete=match.finished,
            position=views.position_text(match, viewer),
        )
        if match.finished and match.state.seed is not None:
            response.seed = match.state.seed
        return response

    @unary
    async def GetReview(self, request: record_pb2.GetReviewRequest,
                        context: grpc.aio.ServicerContext[Any, Any],
                        ) -> record_pb2.GetReviewResponse:
        return await self.reviews.get(match_id_of(request.match_id),
                                      self.rt.callers.key(context))
