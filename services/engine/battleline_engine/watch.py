"""WatchService: a snapshot, then every event projected for the viewer, resumable."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import grpc

from battleline.v1 import watch_pb2, watch_pb2_grpc
from battleline_rules import SPECTATOR

from . import views
from .errors import Kind, Refusal
from .hub import PAGE, Subscription
from .metrics import SUBSCRIBERS
from .ratelimit import OpenCounts
from .runtime import Runtime, match_id_of, streaming
from .storage import StoredEvent, now_ms


class WatchServicer(watch_pb2_grpc.WatchServiceServicer):
    """battleline.v1.WatchService."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.open = OpenCounts()

    @streaming
    async def Watch(self, request: watch_pb2.WatchRequest,
                    context: grpc.aio.ServicerContext[Any, Any],
                    ) -> AsyncIterator[watch_pb2.WatchResponse]:
        match_id = match_id_of(request.match_id)
        seat = await self.rt.seats.optional(context, match_id)
        viewer = SPECTATOR if seat is None else seat
        client = self.rt.callers.key(context)
        holder = seat if seat is not None else client
        # A seat's (or a spectator's) streams on this match, and the client's on all. The
        # hosted AI (its key) holds one stream per match it plays, from an address that
        # proves nothing (loopback under `battleline serve`): counted per seat only, or
        # whoever held its address's streams would stop it moving in every match.
        caps = [(f"{match_id}/{holder}", self.rt.config.streams_per_seat,
                 "per seat" if seat is not None else "per spectator address on a match")]
        if not self.rt.seats.is_ai(context):
            caps.append((f"client/{client}", self.rt.config.streams_per_client, "per client"))
        for key, cap, whose in caps:
            if self.open.full(key, cap):
                raise Refusal(Kind.EXHAUSTED, "too-many-streams",
                              f"at most {cap} open streams {whose}", retry_after_s=1.0)
        keys = [key for key, _, _ in caps]
        self.open.take(*keys)
        try:
            async with contextlib.aclosing(
                    self._stream(request, match_id, viewer, client)) as items:
                async for item in items:
                    yield item
        finally:
            self.open.release(*keys)

    async def _stream(self, request: watch_pb2.WatchRequest, match_id: str,
                      viewer: int, client: str) -> AsyncGenerator[watch_pb2.WatchResponse]:
        """The stream of one counted Watch: snapshot (or backlog), then live events.

        Resuming replays what GetRecord reads (the match's events, each projected for the
        viewer: about 60 µs apiece), so it is charged to the client's GetRecord budget, a
        read of the record for every page it replays (at most a full bucket), a reconnect
        that missed a few events a few hundredths of one. (Sixteen events were free: 90
        such resumes a second, with views, took a third of the engine's core.)"""
        match = await self.rt.matches.read(match_id)
        resume = request.resume_after if request.HasField("resume_after") else None
        if resume is not None and match.record.last_event > resume:
            limit = self.rt.record_limit
            limit.take(client, min((match.record.last_event - resume) / PAGE, limit.rate.burst))
        subscription = await Subscription.open(self.rt.hub, match, resume)
        SUBSCRIBERS.inc()
        try:
            if subscription.needs_snapshot:
                snapshot = watch_pb2.WatchResponse()
                views.write_view(snapshot.snapshot, match, viewer, now_ms(),
                                 request.include_position)
                yield snapshot
                if match.finished:
                    return
            async with contextlib.aclosing(subscription.batches()) as batches:
                async for batch in batches:
                    for event in batch:
                        item = watch_pb2.WatchResponse(event=views.event_message(event, viewer))
                        if request.include_views and event is batch[-1]:
                            await self._attach_view(item, match_id, event, viewer,
                                                    request.include_position)
                        yield item
        finally:
            SUBSCRIBERS.dec()

    async def _attach_view(self, item: watch_pb2.WatchResponse, match_id: str,
                           event: StoredEvent, viewer: int, position: bool) -> None:
        """Attach the view after `event`, only if the match is still exactly there.

        A stream lagging behind the match would otherwise attach a newer position to an
        older event, and a client acting on "the view after this event" would act on
        something else. Left out now, a view comes with a later event once caught up.
        """
        now = await self.rt.matches.read(match_id)
        if now.version != int(event.fields["v"]) or now.record.last_event != event.number:
            return
        views.write_view(item.view, now, viewer, now_ms(), position)

