"""A hosted-AI worker parks a match whose human thinks long (it lets go of its place and
its stream); the engine that commits the human's move asks for the AI again, exactly
once, with the parked request's fields."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator

import pytest
import redis

from battleline.v1 import game_pb2, lobby_pb2, types_pb2
from battleline_client.bots import choose
from battleline_engine.storage.ai import PARKED_KEY, REQUESTS_KEY

from .harness import AI_KEY, Client, Engine, auth


@pytest.fixture
def store(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def _ai_match(client: Client) -> lobby_pb2.CreateMatchResponse:
    """An AI match the test's AI has joined, its human (the first seat: it starts game 1)
    to act."""
    created = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI, ai_level=4),
        options=types_pb2.MatchOptions(ruleset="standard"),
        seat=types_pb2.SEAT_CHOICE_FIRST), timeout=10)
    client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                           metadata=auth(AI_KEY), timeout=10)
    assert client.view(created.match_id, created.seat_token).current_seat == created.seat
    return created


def _requests(store: redis.Redis, match_id: str) -> list[dict[str, str]]:
    return [fields for _id, fields in store.xrange(REQUESTS_KEY) if fields["match"] == match_id]


def _human_turn(client: Client, created: lobby_pb2.CreateMatchResponse) -> None:
    """The human plays and draws: the turn passes to the AI."""
    rng = random.Random(1)
    view = client.view(created.match_id, created.seat_token)
    while view.current_seat == created.seat:
        client.submit(created.match_id, created.seat_token, view.version, choose(view, rng))
        view = client.view(created.match_id, created.seat_token)


def test_the_humans_move_wakes_a_parked_ai_once(engine: Engine, client: Client,
                                                 store: redis.Redis) -> None:
    created = _ai_match(client)
    asked = _requests(store, created.match_id)
    assert len(asked) == 1  # at creation
    engine.call(engine.storage.ai.park(asked[0]))
    _human_turn(client, created)
    again = _requests(store, created.match_id)
    assert again == [asked[0], asked[0]]  # asked once more, with the same fields
    assert engine.call(engine.storage.ai.unpark(created.match_id)) is None  # taken
    assert asked[0]["seat"] == "1"  # the AI's


def test_a_match_not_parked_asks_for_nothing_more(engine: Engine, client: Client,
                                                  store: redis.Redis) -> None:
    created = _ai_match(client)
    _human_turn(client, created)
    assert len(_requests(store, created.match_id)) == 1


def test_one_of_two_racing_unparks_gets_the_request(engine: Engine) -> None:
    fields = {"match": "m" * 24, "seat": "1", "level": "5", "owner": "LOOPBACK"}

    async def race() -> list[dict[str, str] | None]:
        await engine.storage.ai.park(fields)
        return list(await asyncio.gather(*(engine.storage.ai.unpark(fields["match"])
                                           for _ in range(8))))

    taken = engine.call(race())
    assert [t for t in taken if t is not None] == [fields]


def test_the_sweeper_makes_a_wake_its_engine_never_finished(engine: Engine, client: Client,
                                                            store: redis.Redis) -> None:
    """The eighth audit cancelled the human's turn-ending call (a 1-3 ms deadline) while
    the engine was waking the AI: the move was written, the AI stayed parked and lost on
    time. Whatever stops a wake (an engine that dies mid-call too), the sweeper looks at
    parked matches in turn and wakes one whose AI is to act."""
    created = _ai_match(client)
    asked = _requests(store, created.match_id)
    _human_turn(client, created)  # the AI is to act; nothing was parked, nothing woken
    engine.call(engine.storage.ai.park(asked[0]))  # as if the wake had been lost
    deadline = time.monotonic() + 10
    while len(_requests(store, created.match_id)) < 2:
        assert time.monotonic() < deadline, "the sweeper never woke the parked AI"
        time.sleep(0.1)
    assert engine.call(engine.storage.ai.unpark(created.match_id)) is None
    assert store.zscore(PARKED_KEY, created.match_id) is None


def test_the_sweeper_forgets_parked_matches_that_are_over(engine: Engine, client: Client,
                                                          store: redis.Redis) -> None:
    created = _ai_match(client)
    engine.call(engine.storage.ai.park(_requests(store, created.match_id)[0]))
    client.game.Resign(game_pb2.ResignRequest(match_id=created.match_id, action_id="r"),
                       metadata=auth(created.seat_token), timeout=10)
    deadline = time.monotonic() + 10
    while store.zscore(PARKED_KEY, created.match_id) is not None:
        assert time.monotonic() < deadline, "a finished match stayed parked"
        time.sleep(0.1)
    assert engine.call(engine.storage.ai.unpark(created.match_id)) is None


def test_requests_older_than_a_week_are_trimmed(engine: Engine, client: Client,
                                                store: redis.Redis) -> None:
    for n in range(1, 151):  # a week and more ago (ids are milliseconds)
        store.xadd(REQUESTS_KEY, {"match": "old", "seat": "1", "level": "1"}, id=f"1-{n}")
    _ai_match(client)
    assert store.xlen(REQUESTS_KEY) < 100  # whole stream nodes of old entries went
