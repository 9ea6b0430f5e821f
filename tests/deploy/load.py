"""A retrying bot-vs-bot load driver over the public gRPC API, keeping its own ledger.

Every acknowledged action (a SubmitAction response received) is written to the
ledger with the events the response carried. At the end the ledger is compared
with the stored records (RecordService.GetRecord): an acknowledged event that is
missing or different there is a loss. Calls alternate between engines and are
retried on UNAVAILABLE / ABORTED / DEADLINE_EXCEEDED / RESOURCE_EXHAUSTED with
the *same* action id, which the engine's idempotency record makes safe: that is
what a client of a replicated deployment has to do while a process dies.

Matches listed in `run(ai=...)` are played against the hosted AI (`opponent=AI`,
a per-move clock): the driver's random bot plays its own seat (same ledger), the
engines' AI workers play the other one.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.protobuf.duration_pb2 import Duration

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

RETRIED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED,
                     grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED})
SEATS = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND)
FINISHED = types_pb2.MATCH_PHASE_FINISHED
PLAYING = types_pb2.MATCH_PHASE_PLAYING
# Endings that mean a seat stopped playing (a clock ran out, someone gave up).
BAD_ENDS = frozenset({types_pb2.END_REASON_TIMEOUT, types_pb2.END_REASON_RESIGNATION})
BAD_EVENTS = frozenset({types_pb2.EVENT_KIND_TIMEOUT, types_pb2.EVENT_KIND_RESIGNED})

T = TypeVar("T")
Event = tuple[int, int, str]  # number, version, text


@dataclass
class Stats:
    """What the run did; printed by the tests and the benchmark."""

    matches: int = 0
    ai_matches: int = 0  # of `matches`, played against the hosted AI
    actions: int = 0
    requests: int = 0
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # retried status codes
    watched: int = 0
    resumes: int = 0
    slowest_s: float = 0.0  # the longest call, retries included


class Stubs:
    """The four services over one channel to one engine."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.lobby = lobby_pb2_grpc.LobbyServiceStub(self.channel)
        self.game = game_pb2_grpc.GameServiceStub(self.channel)
        self.watch = watch_pb2_grpc.WatchServiceStub(self.channel)
        self.record = record_pb2_grpc.RecordServiceStub(self.channel)


def _auth(token: str | None) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")] if token else []


class Driver:
    """Plays LOCAL matches (both seats) and hosted-AI matches (one seat) across engines
    and keeps the ledger."""

    def __init__(self, addresses: list[str], *, ruleset: str = "basic", seed: int = 1,
                 give_up_s: float = 60.0, ai_level: int = 3, ai_clock_s: int = 30) -> None:
        self.engines = [Stubs(a) for a in addresses]
        self.ruleset = ruleset
        self.rng = random.Random(seed)
        self.give_up_s = give_up_s
        self.stats = Stats()
        self.ai_level = ai_level
        self.ai_clock_s = ai_clock_s
        self.ledger: dict[str, list[Event]] = {}
        self.ai_ids: list[str] = []  # the hosted-AI matches
        self.end_reasons: dict[str, int] = {}  # match id -> EndReason of its final view
        self.watch_logs: dict[str, list[int]] = {}
        self._turn = itertools.count()
        self.report: dict[str, Any] = {}  # filled by the caller from audit()

    async def close(self) -> None:
        for stubs in self.engines:
            await stubs.channel.close()

    async def call(self, rpc: Callable[[Stubs], Callable[..., Awaitable[T]]], request: Any,
                   token: str | None = None) -> T:
        """One RPC, on the next engine in turn; retried (on the other engines too) with the
        same request until it is answered."""
        started = time.monotonic()
        deadline = started + self.give_up_s
        delay = 0.05
        while True:
            stubs = self.engines[next(self._turn) % len(self.engines)]
            self.stats.requests += 1
            try:
                reply = await rpc(stubs)(request, metadata=_auth(token), timeout=5)
                self.stats.slowest_s = max(self.stats.slowest_s, time.monotonic() - started)
                return reply
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRIED or time.monotonic() > deadline:
                    raise
                name = err.code().name
                self.stats.errors[name] = self.stats.errors.get(name, 0) + 1
                self.stats.retries += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def play(self, *, watch: bool = False) -> str:
        """Create one LOCAL match and play it to the end; returns its id."""
        created: lobby_pb2.CreateMatchResponse = await self.call(
            lambda s: s.lobby.CreateMatch,
            lobby_pb2.CreateMatchRequest(
                options=types_pb2.MatchOptions(ruleset=self.ruleset),
                seat=types_pb2.SEAT_CHOICE_FIRST,
                opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL),
                seat_options=types_pb2.SeatOptions(auto_claim=True)))
        match_id = created.match_id
        tokens = (created.seat_token, created.other_seat_token)
        self.ledger[match_id] = []
        watcher = asyncio.create_task(self.watch(match_id)) if watch else None
        views = [await self.view(match_id, t) for t in tokens]
        while views[0].phase != FINISHED:
            seat = SEATS.index(views[0].current_seat)
            view = views[seat]
            request = game_pb2.SubmitActionRequest(
                match_id=match_id, expected_version=view.version, action_id=uuid.uuid4().hex,
                actions=choose(view, self.rng))
            response: game_pb2.SubmitActionResponse = await self.call(
                lambda s: s.game.SubmitAction, request, tokens[seat])
            # Acknowledged: from here on the engine owes us these events.
            self.ledger[match_id] += [(e.number, e.version, e.text) for e in response.events]
            self.stats.actions += 1
            views[seat] = response.view
            if response.view.current_seat != SEATS[seat] or response.view.phase == FINISHED:
                views[1 - seat] = await self.view(match_id, tokens[1 - seat])
        self.end_reasons[match_id] = views[0].end_reason
        if watcher is not None:
            await asyncio.wait_for(watcher, 60)
        self.stats.matches += 1
        return match_id

    async def play_ai(self, *, watch: bool = False) -> str:
        """Create one match against the hosted AI (per-move clock) and play our seat to the
        end; the AI's moves are picked up by polling GetView."""
        created: lobby_pb2.CreateMatchResponse = await self.call(
            lambda s: s.lobby.CreateMatch,
            lobby_pb2.CreateMatchRequest(
                options=types_pb2.MatchOptions(
                    ruleset=self.ruleset,
                    time_control=types_pb2.TimeControl(
                        kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE,
                        limit=Duration(seconds=self.ai_clock_s))),
                seat=types_pb2.SEAT_CHOICE_FIRST,
                opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI,
                                            ai_level=self.ai_level),
                seat_options=types_pb2.SeatOptions(auto_claim=True)))
        match_id, token, seat = created.match_id, created.seat_token, created.seat
        self.ledger[match_id] = []
        self.ai_ids.append(match_id)
        watcher = asyncio.create_task(self.watch(match_id)) if watch else None
        view = await self.view(match_id, token)
        while view.phase != FINISHED:
            if view.phase != PLAYING or view.current_seat != seat or not view.legal_actions:
                await asyncio.sleep(0.1)  # the AI joins / thinks
                view = await self.view(match_id, token)
                continue
            request = game_pb2.SubmitActionRequest(
                match_id=match_id, expected_version=view.version, action_id=uuid.uuid4().hex,
                actions=choose(view, self.rng))
            response: game_pb2.SubmitActionResponse = await self.call(
                lambda s: s.game.SubmitAction, request, token)
            self.ledger[match_id] += [(e.number, e.version, e.text) for e in response.events]
            self.stats.actions += 1
            view = response.view
        self.end_reasons[match_id] = view.end_reason
        if watcher is not None:
            await asyncio.wait_for(watcher, 60)
        self.stats.matches += 1
        self.stats.ai_matches += 1
        return match_id

    async def view(self, match_id: str, token: str) -> types_pb2.MatchView:
        response: game_pb2.GetViewResponse = await self.call(
            lambda s: s.game.GetView, game_pb2.GetViewRequest(match_id=match_id), token)
        return response.view

    async def watch(self, match_id: str) -> None:
        """Spectate a match to its end, resuming on another engine after every break."""
        numbers: list[int] = []
        self.watch_logs[match_id] = numbers
        self.stats.watched += 1
        last: int | None = None
        deadline = time.monotonic() + self.give_up_s * 4
        while True:
            request = watch_pb2.WatchRequest(match_id=match_id)
            if last is not None:
                request.resume_after = last
                self.stats.resumes += 1
            # The first engine first (the fault tests kill that one), then the others in turn.
            stubs = self.engines[0 if last is None else next(self._turn) % len(self.engines)]
            try:
                async for item in stubs.watch.Watch(request, timeout=120):
                    if item.HasField("snapshot"):
                        if last is not None and item.snapshot.last_event_number != last:
                            numbers.append(-1)  # a snapshot instead of the missing events: a gap
                        last = item.snapshot.last_event_number
                        if not numbers:
                            numbers.append(last)  # events must follow on from here
                        continue
                    numbers.append(item.event.number)
                    last = item.event.number
                    if item.event.kind == types_pb2.EVENT_KIND_GAME_OVER:
                        return
                return  # the server ended the stream: the match is over
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRIED or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)

    async def run(self, matches: int, concurrency: int, watch_every: int = 0,
                  on_progress: Callable[[int], Awaitable[None]] | None = None,
                  ai: Container[int] = ()) -> None:
        """Play `matches` matches, `concurrency` at a time; every `watch_every`-th is watched;
        the n-th match (from 0, in start order) is played against the hosted AI if n in `ai`.
        `on_progress(done)` runs after each finished match (the tests kill processes there)."""
        started = itertools.count()
        done = 0

        async def worker() -> None:
            nonlocal done
            while (n := next(started)) < matches:
                watch = bool(watch_every) and n % watch_every == 0
                await (self.play_ai(watch=watch) if n in ai else self.play(watch=watch))
                done += 1
                if on_progress is not None:
                    await on_progress(done)

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    async def audit(self) -> dict[str, Any]:
        """Compare the ledger and the watch logs with the stored records."""
        losses = 0
        unfinished = 0
        gaps = 0
        bad_ends = 0  # ended by a timeout or a resignation
        for match_id, acked in self.ledger.items():
            record: record_pb2.GetRecordResponse = await self.call(
                lambda s: s.record.GetRecord, record_pb2.GetRecordRequest(match_id=match_id))
            stored = {e.number: (e.number, e.version, e.text) for e in record.events}
            numbers = [e.number for e in record.events]
            if numbers != list(range(1, len(numbers) + 1)):
                gaps += 1
            if not record.complete or record.events[-1].kind != types_pb2.EVENT_KIND_GAME_OVER:
                unfinished += 1
            losses += sum(1 for event in acked if stored.get(event[0]) != event)
            if (self.end_reasons.get(match_id) in BAD_ENDS
                    or any(e.kind in BAD_EVENTS for e in record.events)):
                bad_ends += 1
            seen = self.watch_logs.get(match_id)
            if seen is not None and (not seen or seen != list(range(seen[0], seen[-1] + 1))
                                     or seen[-1] != numbers[-1]):
                gaps += 1
        return {"acked_events": sum(len(v) for v in self.ledger.values()), "losses": losses,
                "unfinished": unfinished, "gaps": gaps, "bad_ends": bad_ends}
