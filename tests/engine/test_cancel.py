"""Matches that end before their first game: the creator cancels one nobody has joined
(Resign while waiting), and an AI match no hosted AI takes in time is cancelled by the
engine. Either way the match ends with no winner, its viewers are told, and it no
longer holds one of its creator's places (before, a waiting match could not be resigned,
so an AI match no worker took held its place for days)."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest
import redis

from battleline.v1 import game_pb2, lobby_pb2, types_pb2, watch_pb2
from battleline_engine.storage.matches import match_key

from .harness import AI_KEY, OPEN_LIMITS, Client, Engine
from .test_errors import reason

AI_JOIN_MS = 1500


@pytest.fixture
def capped(redis_url: str) -> Iterator[Engine]:
    """One AI match and one open match per client; the AI gets 1.5 s to take its seat."""
    running = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, ai_matches_per_client=1, open_matches_per_client=1, ai_join_ms=AI_JOIN_MS))
    yield running
    running.close()


def _create(client: Client, kind: types_pb2.OpponentKind.ValueType,
            ) -> lobby_pb2.CreateMatchResponse:
    return client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="standard"),
        opponent=types_pb2.Opponent(kind=kind, ai_level=3)), timeout=10)


def _resign(client: Client, created: lobby_pb2.CreateMatchResponse, action_id: str,
            ) -> game_pb2.ResignResponse:
    return client.game.Resign(  # type: ignore[no-any-return]
        game_pb2.ResignRequest(match_id=created.match_id, action_id=action_id),
        metadata=[("authorization", f"Bearer {created.seat_token}")], timeout=10)


def _assert_cancelled(view: types_pb2.MatchView) -> None:
    assert view.phase == types_pb2.MATCH_PHASE_FINISHED
    assert view.end_reason == types_pb2.END_REASON_CANCELLED
    assert view.winner == types_pb2.SEAT_UNSPECIFIED


@pytest.mark.parametrize("kind", [types_pb2.OPPONENT_KIND_OPEN, types_pb2.OPPONENT_KIND_AI])
def test_the_creator_cancels_a_match_nobody_joined(
        capped: Engine, kind: types_pb2.OpponentKind.ValueType) -> None:
    client = Client.to(capped.address)
    created = _create(client, kind)
    with pytest.raises(grpc.RpcError) as full:
        _create(client, kind)  # the creator's one place of this kind is held
    assert full.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    action_id = str(uuid.uuid4())
    answer = _resign(client, created, action_id)
    _assert_cancelled(answer.view)
    assert _resign(client, created, action_id) == answer  # a retry gets the same answer
    with pytest.raises(grpc.RpcError) as again:
        _resign(client, created, str(uuid.uuid4()))
    assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    _assert_cancelled(client.view(created.match_id, None))
    events = list(client.watcher.Watch(watch_pb2.WatchRequest(
        match_id=created.match_id, resume_after=0), timeout=10))  # every event; then it ends
    last = [e.event for e in events if e.HasField("event")][-1]
    assert (last.kind, last.seat) == (types_pb2.EVENT_KIND_CANCELLED, created.seat)

    _create(client, kind)  # the cancelled match holds no place
    client.channel.close()


def test_a_cancelled_match_cannot_be_joined(capped: Engine) -> None:
    creator, joiner = Client.to(capped.address), Client.to(capped.address)
    created = _create(creator, types_pb2.OPPONENT_KIND_OPEN)
    _resign(creator, created, "cancel")
    assert created.match_id not in [
        m.match_id for m in joiner.lobby.ListOpenMatches(
            lobby_pb2.ListOpenMatchesRequest(), timeout=10).matches]
    for target in ({"match_id": created.match_id}, {"invite_code": created.invite_code}):
        with pytest.raises(grpc.RpcError) as refused:
            joiner.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(**target), timeout=10)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    creator.channel.close()
    joiner.channel.close()


def test_an_ai_match_no_ai_takes_is_cancelled_at_its_deadline(capped: Engine) -> None:
    client = Client.to(capped.address)
    created = _create(client, types_pb2.OPPONENT_KIND_AI)
    started = time.monotonic()
    stream = client.watcher.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                metadata=[("authorization", f"Bearer {created.seat_token}")],
                                timeout=20)
    kinds = [m.event.kind for m in stream if m.HasField("event")]  # ends with the match
    waited = time.monotonic() - started
    assert kinds[-1] == types_pb2.EVENT_KIND_CANCELLED
    assert AI_JOIN_MS / 1000 - 0.5 < waited < AI_JOIN_MS / 1000 + 5
    _assert_cancelled(client.view(created.match_id, None))
    with pytest.raises(grpc.RpcError) as late:  # a worker that comes now is told
        client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                               metadata=[("authorization", f"Bearer {AI_KEY}")], timeout=10)
    assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason(late.value) == "cancelled"
    _create(client, types_pb2.OPPONENT_KIND_AI)  # its place is free again
    client.channel.close()


def test_an_ai_match_the_ai_took_plays_on_past_the_join_deadline(capped: Engine) -> None:
    client = Client.to(capped.address)
    created = _create(client, types_pb2.OPPONENT_KIND_AI)
    client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                           metadata=[("authorization", f"Bearer {AI_KEY}")], timeout=10)
    time.sleep(AI_JOIN_MS / 1000 + 0.5)  # the sweeper runs every 0.1 s
    view = client.view(created.match_id, None)
    assert view.phase == types_pb2.MATCH_PHASE_PLAYING
    assert view.end_reason == types_pb2.END_REASON_UNSPECIFIED
    client.channel.close()


def test_a_waiting_creator_sees_no_hand_and_the_game_is_dealt_at_join(
        capped: Engine, redis_url: str) -> None:
    """The seventh audit re-dealt for free: create, look at the hand, cancel, again (40
    deals in 10 s) until an opening wedge came, then wait for a stranger. Now nothing of a
    hand shows while waiting, and the game played is dealt when the seat is taken."""
    creator, joiner = Client.to(capped.address), Client.to(capped.address)
    created = _create(creator, types_pb2.OPPONENT_KIND_OPEN)
    waiting = creator.view(created.match_id, created.seat_token)
    assert waiting.phase == types_pb2.MATCH_PHASE_WAITING
    assert not waiting.hand and not waiting.legal_actions
    hands = [line.split(":", 1)[1].split() for line in waiting.position.splitlines()
             if line.startswith("hand ")]
    assert len(hands) == 2 and all(card.startswith("?") for hand in hands for card in hand)
    store = redis.Redis.from_url(redis_url)
    dealt_at_creation = store.hget(match_key(created.match_id, "m"), "state")
    joiner.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id), timeout=10)
    playing = creator.view(created.match_id, created.seat_token)
    assert playing.phase == types_pb2.MATCH_PHASE_PLAYING and len(playing.hand) == 7
    assert store.hget(match_key(created.match_id, "m"), "state") != dealt_at_creation
    store.close()
    creator.channel.close()
    joiner.channel.close()


def test_a_cancel_only_resign_leaves_a_game_that_has_begun(capped: Engine) -> None:
    """A cancel button pressed as a stranger takes the seat must not lose that game
    (the seventh audit saw 2 of 15 such races end in a resignation)."""
    creator, joiner = Client.to(capped.address), Client.to(capped.address)
    created = _create(creator, types_pb2.OPPONENT_KIND_OPEN)
    joiner.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id), timeout=10)
    with pytest.raises(grpc.RpcError) as refused:
        creator.game.Resign(game_pb2.ResignRequest(
            match_id=created.match_id, action_id="cancel", cancel_only=True),
            metadata=[("authorization", f"Bearer {created.seat_token}")], timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason(refused.value) == "joined"
    assert creator.view(created.match_id, None).phase == types_pb2.MATCH_PHASE_PLAYING
    creator.channel.close()
    joiner.channel.close()
