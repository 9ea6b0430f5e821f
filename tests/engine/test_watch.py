"""Watch streams: resuming at the end of a finished match, and views attached to events."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import grpc
import pytest

from battleline.v1 import game_pb2, types_pb2, watch_pb2
from battleline_engine.hub import Hub

from .harness import SEATS, Client, Engine, choose


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


def _hub(engine: Engine) -> Hub:
    for service in engine.server.services:
        servicer = getattr(service, "servicer", None)
        if servicer is not None and type(servicer).__name__ == "WatchServicer":
            return servicer.rt.hub  # type: ignore[no-any-return]
    raise AssertionError("no WatchService")


class _LateQueue(asyncio.Queue):  # type: ignore[type-arg]
    """Hands out each batch late, as a stream lagging behind the match does."""

    async def get(self) -> Any:
        item = await super().get()
        await asyncio.sleep(0.6)
        return item


def test_a_streamed_view_is_the_view_after_its_own_event(engine: Engine, client: Client,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A lagging stream used to attach the newest view to an older event; a seat acting
    on it acted on a different position than the event said. A view must be the state
    right after its event (same version), or be left out until the stream catches up."""
    hub = _hub(engine)
    subscribe = hub.subscribe

    async def late_subscribe(match_id: str, after: int) -> asyncio.Queue[Any]:
        await subscribe(match_id, after)  # keeps the match in the reader's set
        late: asyncio.Queue[Any] = _LateQueue()
        hub._subscribers.setdefault(match_id, set()).add(late)
        return late

    monkeypatch.setattr(hub, "subscribe", late_subscribe)
    created = client.create("standard", seat_options=types_pb2.SeatOptions(auto_claim=True))
    tokens = (created.seat_token, created.other_seat_token)
    got: list[Any] = []
    stream = client.watch(created.match_id, tokens[0], include_views=True)
    reader = threading.Thread(target=_drain, args=(stream, got))
    reader.start()
    rng = random.Random(3)
    for _ in range(6):  # both seats act quickly: the stream falls behind
        view = client.view(created.match_id, tokens[0])
        seat = SEATS.index(view.current_seat)
        mine = client.view(created.match_id, tokens[seat])
        client.submit(created.match_id, tokens[seat], mine.version,
                      choose(mine, rng, batch=True))
    final = client.view(created.match_id, tokens[0])
    time.sleep(6 * 0.6 + 1.0)
    stream.cancel()
    reader.join(10)
    got = [item for item in got if isinstance(item, watch_pb2.WatchResponse)]
    with_views = [item for item in got if item.HasField("event") and item.HasField("view")]
    assert with_views, "a stream that caught up carries the current view"
    for item in with_views:
        assert item.view.version == item.event.version, (item.event, item.view.version)
    assert with_views[-1].view.version == final.version
    # Nothing is lost: every event came, in order.
    numbers = [item.event.number for item in got if item.HasField("event")]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _watch_servicer(engine: Engine) -> Any:
    for service in engine.server.services:
        servicer = getattr(service, "servicer", None)
        if type(servicer).__name__ == "WatchServicer":
            return servicer
    raise AssertionError("no WatchService")


def test_a_cancelled_stream_is_closed_at_once_and_frees_its_place(engine: Engine,
                                                                  client: Client) -> None:
    """Issue #15: a stream cancelled while its handler waited at a `yield` stayed open
    (and counted against the seat's stream limit) until the garbage collector closed
    it, from another task ("Task was destroyed but it is pending!" at shutdown)."""
    servicer = _watch_servicer(engine)
    created = client.create("standard")
    for _ in range(3 * servicer.rt.config.streams_per_seat):
        stream = client.watch(created.match_id, created.seat_token)
        assert next(stream).HasField("snapshot")
        stream.cancel()
        deadline = time.monotonic() + 2
        while servicer.open and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not servicer.open, "a cancelled stream is still counted as open"
    assert _hub(engine).subscriber_count == 0
