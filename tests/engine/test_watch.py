"""Watch streams: resuming at the end of a finished match, and views attached to events."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import pytest

from battleline.v1 import game_pb2, watch_pb2

from .harness import Client, Engine


@pytest.fixture
def engine(redis_url: str) -> Iterator[Engine]:
    running = Engine(redis_url)
    yield running
    running.close()


@pytest.fixture
def client(engine: Engine) -> Iterator[Client]:
    c = Client.to(engine.address)
    yield c
    c.channel.close()


def _resign(client: Client, match_id: str, token: str) -> game_pb2.ResignResponse:
    return client.game.Resign(game_pb2.ResignRequest(match_id=match_id, action_id="r"),
                              metadata=[("authorization", f"Bearer {token}")], timeout=10)


def _drain(stream: object, into: list[object]) -> None:
    try:
        for item in stream:  # type: ignore[attr-defined]
            into.append(item)
    except grpc.RpcError as err:  # a deadline: the stream did not end by itself
        into.append(err)


def test_resuming_after_the_last_event_of_a_finished_match_ends_the_stream(
        client: Client) -> None:
    created = client.create("standard")
    _resign(client, created.match_id, created.seat_token)
    last = client.get_record(created.match_id).events[-1].number
    for token in (created.seat_token, None):
        stream = client.watcher.Watch(
            watch_pb2.WatchRequest(match_id=created.match_id, resume_after=last),
            metadata=[("authorization", f"Bearer {token}")] if token else [], timeout=5)
        got: list[object] = []
        reader = threading.Thread(target=_drain, args=(stream, got))
        reader.start()
        reader.join(10)
        assert got == [], "nothing follows the event that finished the match"


def test_resuming_before_the_end_of_a_finished_match_sends_the_rest_and_ends(
        client: Client) -> None:
    created = client.create("standard")
    _resign(client, created.match_id, created.seat_token)
    events = client.get_record(created.match_id, created.seat_token).events
    got: list[object] = []
    _drain(client.watch(created.match_id, created.seat_token,
                        resume_after=events[-3].number), got)
    assert [item.event.number for item in got] == [  # type: ignore[attr-defined]
        e.number for e in events[-2:]]
