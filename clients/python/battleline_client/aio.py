"""asyncio Battle Line client: the same API as `client.py`, with `await`.

    async with AsyncClient("127.0.0.1:50051") as client:
        created = await client.create(opponent="local")
        seat = client.seat(created.seat)
        view = await seat.view()
        await seat.act(view.legal_actions[0])
        async for message in seat.watch():
            ...

Requests, retry and resume decisions come from `common.py`, shared with the
sync client; only the awaiting differs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import grpc.aio
from google.protobuf.message import Message

from battleline.v1 import (
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    record_pb2,
    record_pb2_grpc,
    types_pb2,
    watch_pb2,
    watch_pb2_grpc,
)

from . import common
from .client import CHANNEL_OPTIONS
from .common import CallObserver, Created, SeatHandle, SeatMemory, WatchCursor
from .errors import BattleLineError, StaleVersion, from_rpc_error
from .printable import printable

R = TypeVar("R", bound=Message)  # a response


class AsyncClient:
    """One asyncio channel to an engine. Create it inside a running event loop."""

    def __init__(self, target: str = common.DEFAULT_TARGET, *,
                 credentials: grpc.ChannelCredentials | None = None,
                 timeout: float = common.DEFAULT_TIMEOUT_S,
                 observer: CallObserver | None = None,
                 channel: grpc.aio.Channel | None = None,
                 interceptors: tuple[grpc.aio.ClientInterceptor, ...] = ()) -> None:
        """`channel`, if given, is used as it is (for custom options); else `target` must
        name an address as gRPC reads it (`common.checked_target`: a port out of range or
        missing after its colon raises ValueError), and `interceptors` see every call."""
        self.target = target if channel else common.checked_target(target)
        self.timeout = timeout
        self.observer = observer
        if channel is None:
            chosen = list(interceptors) or None
            channel = (grpc.aio.secure_channel(target, credentials, CHANNEL_OPTIONS,
                                               interceptors=chosen) if credentials
                       else grpc.aio.insecure_channel(target, CHANNEL_OPTIONS,
                                                      interceptors=chosen))
        self.channel = channel
        self._lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self._game = game_pb2_grpc.GameServiceStub(self.channel)
        self._watch = watch_pb2_grpc.WatchServiceStub(self.channel)
        self._record = record_pb2_grpc.RecordServiceStub(self.channel)

    async def close(self) -> None:
        """Close the channel (open Watch streams end)."""
        await self.channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _unary(self, name: str, method: Callable[..., Awaitable[R]], request: Any,
                     token: str | None = None, *, resend: bool = True) -> R:
        """Call, time it for the observer, and turn a failure into a typed error; some
        failures are waited out and the call sent again (`common.Retries`), unless
        `resend` is False."""
        retries = common.Retries()
        while True:
            start = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                response = await method(request, metadata=common.metadata(token),
                                        timeout=self.timeout)
                printable(response)
                return response
            except grpc.RpcError as err:
                code = err.code()
                error = from_rpc_error(err)
                wait = retries.wait(error) if resend else None
                if wait is None:
                    raise error from None
            finally:
                if self.observer is not None:
                    self.observer(name, time.perf_counter() - start, code)
            await asyncio.sleep(wait)

    # -- lobby ------------------------------------------------------------------------

    async def create(self, **options: Any) -> Created:
        """Create a match; keyword options as in `common.create_request`. Sent again
        after a lost answer, it answers the same match."""
        response = await self._unary("CreateMatch", self._lobby.CreateMatch,
                                     common.create_request(**options))
        return common.created_from(response)

    async def join(self, *, match_id: str = "", invite_code: str = "", name: str = "",
                   auto_claim: bool = False, token: str | None = None,
                   seat_secret: str | None = None) -> SeatHandle:
        """Take the open seat of a match, by id or invite code. `token`: sent as the
        caller's credential (the hosted AI's key, which gets no seat token back).
        `seat_secret`: the seat token's random part (a fresh one by default); the same
        join sent again with it answers the same seat (after a Timeout, say)."""
        request = common.join_request(match_id=match_id, invite_code=invite_code, name=name,
                                      auto_claim=auto_claim, seat_secret=seat_secret)
        response = await self._unary("JoinMatch", self._lobby.JoinMatch, request, token)
        return SeatHandle(response.match_id, response.seat_token, response.seat)

    async def list_open(self, ruleset: str = "", page_size: int = 0,
                        page_token: str = "") -> lobby_pb2.ListOpenMatchesResponse:
        """Public matches waiting for a second player, newest first."""
        request = lobby_pb2.ListOpenMatchesRequest(ruleset=ruleset, page_size=page_size,
                                                   page_token=page_token)
        return await self._unary("ListOpenMatches", self._lobby.ListOpenMatches, request)

    # -- game -------------------------------------------------------------------------

    async def view(self, match_id: str, token: str | None = None, *,
                   resend: bool = True) -> types_pb2.MatchView:
        """The match as a seat (with its token) or a spectator (without) sees it.
        `resend`: False sends it once (a token offered to an engine checked just before)."""
        response = await self._unary("GetView", self._game.GetView,
                                     game_pb2.GetViewRequest(
                                         match_id=match_id, include_position=common.POSITIONS),
                                     token, resend=resend)
        return response.view

    async def submit(self, handle: SeatHandle, version: int, actions: list[str],
                     action_id: str | None = None) -> game_pb2.SubmitActionResponse:
        """One SubmitAction, no retry: prefer `AsyncSeat.act`."""
        request = common.submit_request(handle.match_id, version, actions,
                                        action_id or common.new_action_id())
        return await self._unary("SubmitAction", self._game.SubmitAction, request, handle.token)

    async def resign(self, handle: SeatHandle, action_id: str | None = None,
                     cancel_only: bool = False) -> types_pb2.MatchView:
        """Resign the match for this seat (see `Client.resign`); the seat's final view."""
        request = common.resign_request(handle, action_id, cancel_only)
        response = await self._unary("Resign", self._game.Resign, request, handle.token)
        return response.view

    async def hint(self, handle: SeatHandle, budget_ms: int = 0) -> game_pb2.GetHintResponse:
        """The hosted AI's suggestion for this seat's move (where the match allows hints);
        `budget_ms` of search, 0 for the server's default."""
        request = game_pb2.GetHintRequest(match_id=handle.match_id, budget_ms=budget_ms)
        return await self._unary("GetHint", self._game.GetHint, request, handle.token)

    async def record(self, match_id: str,
                     token: str | None = None) -> record_pb2.GetRecordResponse:
        """The move list, as the caller may see it."""
        return await self._unary("GetRecord", self._record.GetRecord,
                                 record_pb2.GetRecordRequest(match_id=match_id), token)

    async def review(self, match_id: str) -> record_pb2.GetReviewResponse:
        """The hosted AI's review of a finished match (see `Client.review`)."""
        return await self._unary("GetReview", self._record.GetReview,
                                 record_pb2.GetReviewRequest(match_id=match_id))

    # -- watching ---------------------------------------------------------------------

    async def watch(self, match_id: str, token: str | None = None, *,
                    include_views: bool = False, resume_after: int | None = None,
                    max_reconnects: int = 10) -> AsyncIterator[watch_pb2.WatchResponse]:
        """Every message of the Watch stream, each event once, across reconnects
        (see `Client.watch`)."""
        cursor = WatchCursor(match_id, include_views, resume_after)
        delays, failures = common.backoff(), 0
        while True:
            call = None
            try:
                if cursor.last is not None and cursor.over_at(await self.view(match_id, token)):
                    return
                call = self._watch.Watch(cursor.request(), metadata=common.metadata(token))
                async for response in call:
                    printable(response)
                    newest = cursor.newest
                    if not cursor.accept(response):
                        continue
                    if failures and cursor.newest != newest:  # progress, not a replay
                        delays, failures = common.backoff(), 0
                    yield response
                return  # the server ends the stream once the match is over
            except (grpc.RpcError, BattleLineError) as err:
                error = err if isinstance(err, BattleLineError) else from_rpc_error(err)
                if cursor.finished:
                    return
                if not cursor.should_reconnect(error) or failures >= max_reconnects:
                    raise error from None
                failures += 1
                await asyncio.sleep(next(delays))
            finally:
                if call is not None:
                    call.cancel()

    def seat(self, handle: SeatHandle) -> AsyncSeat:
        """An AsyncSeat bound to this client."""
        return AsyncSeat(self, handle)


class AsyncSeat(SeatMemory["AsyncClient"]):
    """One seat of a match: remembers its last view so actions carry the right version."""

    async def view(self) -> types_pb2.MatchView:
        """Fetch (and remember) this seat's view."""
        return self.remember(await self.client.view(self.handle.match_id, self.handle.token))

    async def act(self, *actions: str,
                  action_id: str | None = None) -> game_pb2.SubmitActionResponse:
        """Submit actions decided on the last view; one retry on ABORTED if still legal
        (see `Seat.act`)."""
        todo = list(actions)
        view = self.last_view or await self.view()
        action_id = action_id or common.new_action_id()
        try:
            response = await self.client.submit(self.handle, view.version, todo, action_id)
        except StaleVersion:
            view = await self.view()
            if not common.can_retry_stale(view, todo):
                raise
            response = await self.client.submit(self.handle, view.version, todo, action_id)
        self.remember(response.view)
        return response

    async def resign(self) -> types_pb2.MatchView:
        """Resign the match (cancel it while nobody has taken the other seat)."""
        return self.remember(await self.client.resign(self.handle))

    async def cancel(self) -> types_pb2.MatchView:
        """Cancel the match while nobody has taken the other seat (see `Seat.cancel`)."""
        return self.remember(await self.client.resign(self.handle, cancel_only=True))

    async def hint(self, budget_ms: int = 0) -> game_pb2.GetHintResponse:
        """The hosted AI's suggestion for this seat's move (see `AsyncClient.hint`)."""
        return await self.client.hint(self.handle, budget_ms)

    async def watch(self, **kwargs: Any) -> AsyncIterator[watch_pb2.WatchResponse]:
        """This seat's Watch stream (see `AsyncClient.watch`); newer views update
        `last_view`."""
        async for message in self.client.watch(self.handle.match_id, self.handle.token,
                                               **kwargs):
            self.remember_streamed(message)
            yield message

    async def record(self) -> record_pb2.GetRecordResponse:
        """The record as this seat may see it."""
        return await self.client.record(self.handle.match_id, self.handle.token)


__all__ = ["AsyncClient", "AsyncSeat", "Created", "SeatHandle"]
