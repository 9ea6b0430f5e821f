"""Synchronous Battle Line client.

    with Client("127.0.0.1:50051") as client:
        created = client.create(opponent="local")
        first, second = client.seat(created.seat), client.seat(created.other)
        view = first.view()
        first.act(view.legal_actions[0])

`Seat.act` picks the action id and the expected version itself and retries
once if the match moved on (ABORTED) and the action is still legal; `watch`
reopens a dropped stream from the last event it delivered. Every refusal is a
typed exception from `battleline_client.errors`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import grpc
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
from .common import CallObserver, Created, SeatHandle, SeatMemory, WatchCursor
from .errors import BattleLineError, StaleVersion, from_rpc_error
from .printable import printable

R = TypeVar("R", bound=Message)  # a response

# Reconnect fast after a server restart: gRPC's default first backoff is 1 s.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 2000)]


class Client:
    """One channel to an engine, with the lobby, game, watch and record calls."""

    def __init__(self, target: str = common.DEFAULT_TARGET, *,
                 credentials: grpc.ChannelCredentials | None = None,
                 timeout: float = common.DEFAULT_TIMEOUT_S,
                 observer: CallObserver | None = None,
                 channel: grpc.Channel | None = None,
                 interceptors: tuple[grpc.UnaryUnaryClientInterceptor
                                     | grpc.UnaryStreamClientInterceptor, ...] = ()) -> None:
        """`channel`, if given, is used as it is (for custom options); else `target` must
        name an address as gRPC reads it (`common.checked_target`: a port out of range or
        missing after its colon raises ValueError). `interceptors` see every call."""
        self.target = target if channel else common.checked_target(target)
        self.timeout = timeout
        self.observer = observer
        if channel is None:
            channel = (grpc.secure_channel(target, credentials, CHANNEL_OPTIONS) if credentials
                       else grpc.insecure_channel(target, CHANNEL_OPTIONS))
        self.channel = grpc.intercept_channel(channel, *interceptors) if interceptors else channel
        self._lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self._game = game_pb2_grpc.GameServiceStub(self.channel)
        self._watch = watch_pb2_grpc.WatchServiceStub(self.channel)
        self._record = record_pb2_grpc.RecordServiceStub(self.channel)

    def close(self) -> None:
        """Close the channel (open Watch streams end)."""
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unary(self, name: str, method: Callable[..., R], request: Any,
               token: str | None = None, *, resend: bool = True) -> R:
        """Call, time it for the observer, and turn a failure into a typed error; some
        failures are waited out and the call sent again (`common.Retries`), unless
        `resend` is False."""
        retries = common.Retries()
        while True:
            start = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                response = method(request, metadata=common.metadata(token), timeout=self.timeout)
                printable(response)
                return response
            except (grpc.RpcError, BattleLineError) as err:  # the latter an interceptor's
                error = err if isinstance(err, BattleLineError) else from_rpc_error(err)
                code = error.code
                wait = retries.wait(error) if resend else None
                if wait is None:
                    raise error from None
            finally:
                if self.observer is not None:
                    self.observer(name, time.perf_counter() - start, code)
            time.sleep(wait)

    # -- lobby ------------------------------------------------------------------------

    def create(self, **options: Any) -> Created:
        """Create a match; keyword options as in `common.create_request`
        (opponent="local"|"open"|"ai", ai_level, ruleset, seat, name, auto_claim, seed,
        seat_secret...). Sent again after a lost answer, it answers the same match."""
        response = self._unary("CreateMatch", self._lobby.CreateMatch,
                               common.create_request(**options))
        return common.created_from(response)

    def join(self, *, match_id: str = "", invite_code: str = "", name: str = "",
             auto_claim: bool = False, token: str | None = None,
             seat_secret: str | None = None) -> SeatHandle:
        """Take the open seat of a match, by id or invite code. `token`: sent as the
        caller's credential (the hosted AI's key, which gets no seat token back).
        `seat_secret`: the seat token's random part (a fresh one by default); the same
        join sent again with it answers the same seat (after a Timeout, say)."""
        request = common.join_request(match_id=match_id, invite_code=invite_code, name=name,
                                      auto_claim=auto_claim, seat_secret=seat_secret)
        response = self._unary("JoinMatch", self._lobby.JoinMatch, request, token)
        return SeatHandle(response.match_id, response.seat_token, response.seat)

    def list_open(self, ruleset: str = "", page_size: int = 0,
                  page_token: str = "") -> lobby_pb2.ListOpenMatchesResponse:
        """Public matches waiting for a second player, newest first."""
        request = lobby_pb2.ListOpenMatchesRequest(ruleset=ruleset, page_size=page_size,
                                                   page_token=page_token)
        return self._unary("ListOpenMatches", self._lobby.ListOpenMatches, request)

    # -- game -------------------------------------------------------------------------

    def view(self, match_id: str, token: str | None = None, *,
             resend: bool = True) -> types_pb2.MatchView:
        """The match as a seat (with its token) or a spectator (without) sees it.
        `resend`: False sends it once (a token offered to an engine checked just before)."""
        response = self._unary("GetView", self._game.GetView,
                               game_pb2.GetViewRequest(match_id=match_id,
                                                       include_position=common.POSITIONS),
                               token, resend=resend)
        return response.view

    def submit(self, handle: SeatHandle, version: int, actions: list[str],
               action_id: str | None = None) -> game_pb2.SubmitActionResponse:
        """One SubmitAction, no retry: prefer `Seat.act`."""
        request = common.submit_request(handle.match_id, version, actions,
                                        action_id or common.new_action_id())
        return self._unary("SubmitAction", self._game.SubmitAction, request, handle.token)

    def resign(self, handle: SeatHandle, action_id: str | None = None,
               cancel_only: bool = False) -> types_pb2.MatchView:
        """Resign the match for this seat; returns the seat's final view. A match still
        waiting for its other seat is cancelled instead (no winner); `cancel_only` does
        only that, and raises IllegalAction ("joined") once the game has begun."""
        request = common.resign_request(handle, action_id, cancel_only)
        return self._unary("Resign", self._game.Resign, request, handle.token).view

    def hint(self, handle: SeatHandle, budget_ms: int = 0) -> game_pb2.GetHintResponse:
        """The hosted AI's suggestion for this seat's move (where the match allows hints);
        `budget_ms` of search, 0 for the server's default."""
        request = game_pb2.GetHintRequest(match_id=handle.match_id, budget_ms=budget_ms)
        return self._unary("GetHint", self._game.GetHint, request, handle.token)

    def record(self, match_id: str, token: str | None = None) -> record_pb2.GetRecordResponse:
        """The move list, as the caller may see it (every card once the match is over)."""
        return self._unary("GetRecord", self._record.GetRecord,
                           record_pb2.GetRecordRequest(match_id=match_id), token)

    def review(self, match_id: str) -> record_pb2.GetReviewResponse:
        """The hosted AI's review of a finished match: made on the first ask (about a
        second), then kept with the match."""
        return self._unary("GetReview", self._record.GetReview,
                           record_pb2.GetReviewRequest(match_id=match_id))

    # -- watching ---------------------------------------------------------------------

    def watch(self, match_id: str, token: str | None = None, *, include_views: bool = False,
              resume_after: int | None = None,
              max_reconnects: int = 10) -> Generator[watch_pb2.WatchResponse]:
        """Every message of the match's Watch stream, surviving dropped connections.

        A dropped stream is reopened with `resume_after` = the last event given,
        and anything already given is skipped, so each event is yielded exactly
        once (if the server no longer keeps the missing events, a fresh snapshot
        is yielded instead). Gives up with a typed error after `max_reconnects`
        failures with no event newer than any before between them (a snapshot sent
        again is none, nor an event sent again after one: a server that did so and
        failed, each time, was reconnected to without end), or at once on a code
        that retrying cannot fix.
        """
        cursor = WatchCursor(match_id, include_views, resume_after)
        delays, failures = common.backoff(), 0
        while True:
            call = None
            try:
                if cursor.last is not None and cursor.over_at(self.view(match_id, token)):
                    return
                call = self._watch.Watch(cursor.request(), metadata=common.metadata(token))
                for response in call:
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
                time.sleep(next(delays))
            finally:
                if call is not None:
                    call.cancel()

    def seat(self, handle: SeatHandle) -> Seat:
        """A Seat bound to this client: view, act, resign and watch as that seat."""
        return Seat(self, handle)


class Seat(SeatMemory["Client"]):
    """One seat of a match: remembers its last view so actions carry the right version."""

    def view(self) -> types_pb2.MatchView:
        """Fetch (and remember) this seat's view."""
        return self.remember(self.client.view(self.handle.match_id, self.handle.token))

    def act(self, *actions: str, action_id: str | None = None) -> game_pb2.SubmitActionResponse:
        """Submit actions decided on the last view (fetched if there is none).

        On ABORTED the view is fetched again and, if the first action is still
        legal there, the same request (same action id) is sent once more with
        the new version; otherwise StaleVersion is raised for the caller to
        decide again."""
        todo = list(actions)
        view = self.last_view or self.view()
        action_id = action_id or common.new_action_id()
        try:
            response = self.client.submit(self.handle, view.version, todo, action_id)
        except StaleVersion:
            view = self.view()
            if not common.can_retry_stale(view, todo):
                raise
            response = self.client.submit(self.handle, view.version, todo, action_id)
        self.remember(response.view)
        return response

    def resign(self) -> types_pb2.MatchView:
        """Resign the match (cancel it while nobody has taken the other seat)."""
        return self.remember(self.client.resign(self.handle))

    def cancel(self) -> types_pb2.MatchView:
        """Cancel the match while nobody has taken the other seat; once someone has,
        IllegalAction ("joined") and the game goes on."""
        return self.remember(self.client.resign(self.handle, cancel_only=True))

    def hint(self, budget_ms: int = 0) -> game_pb2.GetHintResponse:
        """The hosted AI's suggestion for this seat's move (see `Client.hint`)."""
        return self.client.hint(self.handle, budget_ms)

    def watch(self, **kwargs: Any) -> Generator[watch_pb2.WatchResponse]:
        """This seat's Watch stream (see `Client.watch`); views on it update `last_view`
        when newer, so `act` after a streamed view sends the right version."""
        # Closed with this generator, not left to the collector: a Ctrl-C while its call
        # is cancelled then reaches the caller (a finalizer's is printed and dropped).
        with contextlib.closing(self.client.watch(self.handle.match_id, self.handle.token,
                                                  **kwargs)) as messages:
            for message in messages:
                self.remember_streamed(message)
                yield message

    def record(self) -> record_pb2.GetRecordResponse:
        """The record as this seat may see it."""
        return self.client.record(self.handle.match_id, self.handle.token)


__all__ = ["Client", "Created", "Seat", "SeatHandle"]
