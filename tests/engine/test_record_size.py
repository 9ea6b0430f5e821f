"""What a match keeps in Redis: the idempotency record holds each seat's latest answer
only, so a live match and a finished record stay small however long the game."""

from __future__ import annotations

import random

import grpc
import pytest
import redis

from battleline_engine.storage.matches import match_key

from .harness import SEATS, Client, Engine, play_local

RECORD_BUDGET_BYTES = 20_000  # issue #17: at most 20 KB per live match


def _bytes(store: redis.Redis, match_id: str) -> int:
    keys = store.keys(f"bl:{{{match_id}}}:*")
    return sum(int(store.memory_usage(key, samples=0) or 0) for key in keys)


def test_a_finished_record_is_small_and_keeps_the_latest_answers(
        engine: Engine, redis_url: str) -> None:
    client = Client.to(engine.address)
    store = redis.Redis.from_url(redis_url)
    try:
        played = play_local(client, "standard", random.Random(3))
        assert played.requests > 20
        idem = store.hgetall(match_key(played.match_id, "idem"))
        assert len(idem) <= 4, sorted(idem)  # one answer and its pointer per seat, no spent ids
        assert _bytes(store, played.match_id) <= RECORD_BUDGET_BYTES
    finally:
        store.close()
        client.channel.close()


def test_a_retry_of_the_latest_action_is_answered_an_older_one_is_stale(
        engine: Engine) -> None:
    client = Client.to(engine.address)
    try:
        created = client.create("standard", seed=5)
        tokens = (created.seat_token, created.other_seat_token)
        view = client.view(created.match_id, tokens[0])
        assert SEATS.index(view.current_seat) == 0
        plays = [x for x in view.legal_actions if x.startswith("play")]
        first = client.submit(created.match_id, tokens[0], view.version,
                              [plays[0], "draw troop"], action_id="one")
        other = client.view(created.match_id, tokens[1])
        reply = client.submit(created.match_id, tokens[1], other.version,
                              [next(x for x in other.legal_actions if x.startswith("play")),
                               "draw troop"], action_id="two")
        # Seat 0's latest action is still answered from its record...
        assert client.submit(created.match_id, tokens[0], view.version,
                             [plays[0], "draw troop"], action_id="one") == first
        mine = client.view(created.match_id, tokens[0])
        nxt = [x for x in mine.legal_actions if x.startswith("play")]
        client.submit(created.match_id, tokens[0], mine.version, [nxt[0], "draw troop"],
                      action_id="three")
        # ... and once it has sent a later one, the older id is a stale version.
        with pytest.raises(grpc.RpcError) as stale:
            client.submit(created.match_id, tokens[0], view.version, [plays[0], "draw troop"],
                          action_id="one")
        assert stale.value.code() == grpc.StatusCode.ABORTED
        assert reply.version == first.version + 1
    finally:
        client.channel.close()
