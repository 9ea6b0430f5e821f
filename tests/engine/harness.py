"""Test helpers: an engine (real gRPC server, real Redis) on a thread, and random bots."""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import message as pb_message

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
from battleline_client.bots import choose
from battleline_engine.ratelimit import Rate
from battleline_engine.runtime import EngineConfig
from battleline_engine.server import EngineServer, ServerConfig, start_server
from battleline_engine.storage import Storage
from battleline_engine.wiring import default_services

FAST_SERVER = ServerConfig(port=0, drain_s=0.05, grace_s=1.0, health_interval_s=0.2)
AI_KEY = "tests-engine-ai-key-0123456789"  # the hosted AI's key (tests act as the AI with it)
OPEN_LIMITS = EngineConfig(create_rate=Rate(10_000, 10_000), action_rate=Rate(10_000, 10_000),
                           list_rate=Rate(10_000, 10_000), record_rate=Rate(10_000, 10_000),
                           token_guess_rate=Rate(10_000, 10_000), call_rate=Rate(10_000, 10_000),
                           open_matches_per_client=10_000, streams_per_client=10_000,
                           sweep_interval_s=0.1, ai_key=AI_KEY, ai_matches_per_client=10_000)
SEATS = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND)


class LoopThread:
    """An event loop on a thread of its own, for servers driven from sync test code."""

    call_timeout_s = 60.0

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Any) -> Any:
        """Run `coro` on the loop and wait for its result."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(self.call_timeout_s)

    def end(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Engine(LoopThread):
    """An engine server on its own event loop thread."""

    def __init__(self, redis_url: str, config: EngineConfig = OPEN_LIMITS,
                 server: ServerConfig = FAST_SERVER) -> None:
        super().__init__()
        self.storage: Storage = self.call(self._storage(redis_url))
        self.server: EngineServer = self.call(
            start_server(server, self.storage, default_services(self.storage, config)))
        self.address = self.server.address

    async def _storage(self, url: str) -> Storage:
        return Storage.from_url(url)

    def close(self) -> None:
        self.call(self.server.stop(0))
        self.call(asyncio.sleep(0.1))  # let cancelled streams finish before the loop stops
        self.call(self.storage.close())
        self.end()


def secret_create(kind: int, secret: str, ruleset: str = "standard",
                  private: bool = False) -> lobby_pb2.CreateMatchRequest:
    """A CreateMatch under a seat secret, the seat drawn at random (an AI at level 3)."""
    return lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset=ruleset), seat=types_pb2.SEAT_CHOICE_RANDOM,
        opponent=types_pb2.Opponent(kind=kind, ai_level=3, private=private),
        seat_secret=secret)


def auth(token: str | None) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")] if token else []


def view_status(client: Client, match_id: str, token: str | None,
                address: str) -> grpc.StatusCode:
    """GetView's status for `token` (None: a spectator), asked through a proxy for
    `address` (the engine must trust loopback as a proxy)."""
    try:
        client.game.GetView(game_pb2.GetViewRequest(match_id=match_id),
                            metadata=[*auth(token), ("x-forwarded-for", address)], timeout=10)
        return grpc.StatusCode.OK
    except grpc.RpcError as error:
        return error.code()  # type: ignore[attr-defined, no-any-return]


@dataclass
class Client:
    """Stubs over one channel; every response is also handed to `sink`."""

    channel: grpc.Channel
    sink: Callable[[str | None, pb_message.Message], None] | None = None

    def __post_init__(self) -> None:
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.game = game_pb2_grpc.GameServiceStub(self.channel)
        self.watcher = watch_pb2_grpc.WatchServiceStub(self.channel)
        self.record = record_pb2_grpc.RecordServiceStub(self.channel)

    @classmethod
    def to(cls, address: str, **kw: Any) -> Client:
        return cls(grpc.insecure_channel(address), **kw)

    def _seen(self, token: str | None, msg: pb_message.Message) -> pb_message.Message:
        if self.sink is not None:
            self.sink(token, msg)
        return msg

    def create(self, ruleset: str = "standard", kind: int = types_pb2.OPPONENT_KIND_LOCAL,
               **options: Any) -> lobby_pb2.CreateMatchResponse:
        seat_options = options.pop("seat_options", None)
        seed = options.pop("seed", None)
        seat = options.pop("seat", types_pb2.SEAT_CHOICE_FIRST)
        request = lobby_pb2.CreateMatchRequest(
            options=types_pb2.MatchOptions(ruleset=ruleset, **options), seat=seat,
            opponent=types_pb2.Opponent(kind=kind), seat_options=seat_options)
        if seed is not None:
            request.seed = seed
        return self.lobby.CreateMatch(request, timeout=10)

    def view(self, match_id: str, token: str | None,
             position: bool = True) -> types_pb2.MatchView:
        response = self.game.GetView(game_pb2.GetViewRequest(match_id=match_id,
                                                             include_position=position),
                                     metadata=auth(token), timeout=10)
        self._seen(token, response)
        return response.view

    def submit(self, match_id: str, token: str, version: int, actions: list[str],
               action_id: str | None = None) -> game_pb2.SubmitActionResponse:
        response = self.game.SubmitAction(game_pb2.SubmitActionRequest(
            match_id=match_id, expected_version=version, action_id=action_id or uuid.uuid4().hex,
            actions=actions, include_position=True), metadata=auth(token), timeout=10)
        self._seen(token, response)
        return response

    def get_record(self, match_id: str, token: str | None = None) -> record_pb2.GetRecordResponse:
        response = self.record.GetRecord(record_pb2.GetRecordRequest(match_id=match_id),
                                         metadata=auth(token), timeout=10)
        self._seen(token, response)
        return response

    def watch(self, match_id: str, token: str | None = None, resume_after: int | None = None,
              include_views: bool = False) -> Any:
        request = watch_pb2.WatchRequest(match_id=match_id, include_views=include_views,
                                         include_position=True)
        if resume_after is not None:
            request.resume_after = resume_after
        return self.watcher.Watch(request, metadata=auth(token), timeout=120)




@dataclass
class Played:
    """A finished match as the bots saw it."""

    match_id: str
    tokens: tuple[str, str]
    requests: int = 0
    final: types_pb2.MatchView | None = None
    versions: list[int] = field(default_factory=list)


def play_local(client: Client, ruleset: str, rng: random.Random, *, batch: bool = True,
               auto_claim: bool = True, max_requests: int = 3000,
               on_create: Callable[[lobby_pb2.CreateMatchResponse], None] | None = None,
               on_step: Callable[[Played], None] | None = None,
               **options: Any) -> Played:
    """Create a LOCAL match and play it to the end with random legal actions from the view."""
    created = client.create(ruleset, seat_options=types_pb2.SeatOptions(auto_claim=auto_claim),
                            **options)
    if on_create is not None:
        on_create(created)
    tokens = (created.seat_token, created.other_seat_token)
    played = Played(created.match_id, tokens)
    views = [client.view(created.match_id, tokens[0]), client.view(created.match_id, tokens[1])]
    while views[0].phase != types_pb2.MATCH_PHASE_FINISHED:
        seat = SEATS.index(views[0].current_seat)
        view = views[seat]
        assert view.legal_actions, view
        response = client.submit(created.match_id, tokens[seat], view.version,
                                 choose(view, rng, batch))
        played.requests += 1
        played.versions.append(response.version)
        if on_step is not None:
            on_step(played)
        views[seat] = response.view
        if response.view.current_seat != SEATS[seat] or response.view.phase == 3:
            views[1 - seat] = client.view(created.match_id, tokens[1 - seat])
        assert played.requests < max_requests, "match does not end"
    played.final = views[0]
    return played
