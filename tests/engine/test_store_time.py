"""Match clocks by the thirty-fifth audit: every engine of one store keeps the store's
time (an engine whose machine's wall clock was a minute behind the others' gave a player
a minute, one ahead timed moves out early, and so did a wall clock stepped on one
machine: each engine now reads Redis's TIME and counts from it on its own monotonic
clock, `StoreClock`), and a crowd of clocks running out at once ends at once."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
import redis
import redis.asyncio as aioredis
from google.protobuf import duration_pb2

from battleline.v1 import types_pb2
from battleline_engine.clocks import ClockState, advance, left_ms
from battleline_engine.matches import Matches
from battleline_engine.model import ClockKind, Meta, Status
from battleline_engine.storage import Storage, connection
from battleline_engine.storage.connection import StoreClock
from battleline_engine.sweeper import Sweeper
from battleline_rules import new_game

from .harness import OPEN_LIMITS, Client, Engine

BUDGET_MS = 30_000


class _WallShifted:
    """The `time` module as the store's code sees it on a machine whose wall clock is
    `shift_s` off (grpc's own deadlines stay on the real one)."""

    def __init__(self, shift_s: float) -> None:
        self.shift_s = shift_s

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    def time(self) -> float:
        return time.time() + self.shift_s


def _store_ms(redis_url: str) -> int:
    store = redis.Redis.from_url(redis_url)
    try:
        seconds, micros = store.time()
    finally:
        store.close()
    return seconds * 1000 + micros // 1000


@pytest.mark.parametrize("shift_s", [-60.0, 60.0], ids=["a-minute-behind", "a-minute-ahead"])
def test_an_engine_whose_wall_clock_is_off_keeps_the_stores_time(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, shift_s: float) -> None:
    """A move on an engine whose wall clock went a minute off (a step, or a replica's
    skew): the mover is charged the second it took, not a minute more or less, and the
    other seat's clock starts full (a minute behind, it gained 59 s; ahead, the move
    was refused as out of time)."""
    client = Client.to(engine.address)
    created = client.create("basic", time_control=types_pb2.TimeControl(
        kind=types_pb2.TIME_CONTROL_KIND_PER_GAME,
        limit=duration_pb2.Duration(seconds=BUDGET_MS // 1000)))
    view = client.view(created.match_id, created.seat_token)
    monkeypatch.setattr(connection, "time", _WallShifted(shift_s))
    response = client.submit(created.match_id, created.seat_token, view.version,
                             [next(a for a in view.legal_actions if a.startswith("play")),
                              "draw troop"])
    first, second = response.view.clocks
    assert response.view.phase == types_pb2.MATCH_PHASE_PLAYING
    assert not first.running and BUDGET_MS - 1000 < first.remaining.ToMilliseconds() <= BUDGET_MS
    assert second.running and BUDGET_MS - 1000 < second.remaining.ToMilliseconds() <= BUDGET_MS
    client.channel.close()


def test_the_store_clock_is_the_stores_whatever_the_wall_clock_does(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "time", _WallShifted(86_400))  # a day ahead
    clock = StoreClock()
    assert clock.now_ms() - _store_ms(redis_url) > 86_000_000  # the wall's, until a sync

    async def sync() -> None:
        store = aioredis.Redis.from_url(redis_url)
        try:
            await clock.sync(store)
        finally:
            await store.aclose()

    asyncio.run(sync())
    assert abs(clock.now_ms() - _store_ms(redis_url)) < 1000
    monkeypatch.setattr(connection, "time", _WallShifted(-3600))  # stepped back an hour
    assert abs(clock.now_ms() - _store_ms(redis_url)) < 1000


def test_a_clock_that_went_back_gives_no_time_and_shows_no_more_than_the_budget() -> None:
    """What an engine computes from a start time later than its now (written by an
    engine ahead of it, or before a step back): nothing charged, no more than the
    budget shown."""
    meta = Meta("basic", clock=ClockKind.PER_GAME, clock_ms=BUDGET_MS)
    running = ClockState(seat=0, ply=0, start_ms=100_000, remaining_ms=(BUDGET_MS, BUDGET_MS))
    earlier = 40_000  # a minute before the turn began
    assert left_ms(meta, running, 0, earlier) == BUDGET_MS
    stopped = advance(meta, running, new_game("basic", None, 1), False, earlier)
    assert stopped.remaining_ms == (BUDGET_MS, BUDGET_MS)


def test_one_sweep_ends_a_crowd_of_clocks_that_ran_out_together(redis_url: str) -> None:
    """300 clocks that ran out at once: 100 a sweep, one after another, left 2,000 such
    clocks ending up to 17 s late (thirty-fifth audit); one sweep ends them all."""
    engine = Engine(redis_url, replace(OPEN_LIMITS, sweep_interval_s=3600))  # not its own
    client = Client.to(engine.address)
    one_second = types_pb2.TimeControl(kind=types_pb2.TIME_CONTROL_KIND_PER_MOVE,
                                       limit=duration_pb2.Duration(seconds=1))
    try:
        ids = [client.create("basic", time_control=one_second).match_id for _ in range(300)]
        time.sleep(1.2)

        async def sweep() -> tuple[int, list[str]]:
            storage = Storage.from_url(redis_url)
            try:
                handled = await Sweeper(storage, Matches(storage), 3600).sweep_once()
                records = [await storage.matches.load(match_id) for match_id in ids]
                return handled, [r.status for r in records if r is not None]
            finally:
                await storage.close()

        handled, statuses = asyncio.run(sweep())
        assert handled == 300 and statuses == [Status.FINISHED] * 300
    finally:
        client.channel.close()
        engine.close()
