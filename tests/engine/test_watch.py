"""Watch streams: resuming at the end of a finished match, and views attached to events."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import threading
import time
from typing import Any

import grpc
import pytest
import redis

from battleline.v1 import game_pb2, types_pb2, watch_pb2, watch_pb2_grpc
from battleline_engine.hub import Hub
from battleline_engine.ratelimit import Rate

from .harness import OPEN_LIMITS, SEATS, Client, Engine, auth, choose


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


def _live_match_with_events(client: Client, at_least: int) -> tuple[str, str]:
    """A LOCAL match still being played, with at least `at_least` events (random play
    ends some matches sooner: those are set aside for the next seed)."""
    for seed in range(20):
        rng = random.Random(seed)
        created = client.create("standard",
                                seat_options=types_pb2.SeatOptions(auto_claim=False))
        tokens = (created.seat_token, created.other_seat_token)
        view = client.view(created.match_id, tokens[0])
        while view.phase != types_pb2.MATCH_PHASE_FINISHED:
            if view.last_event_number >= at_least:
                return created.match_id, tokens[0]
            seat = SEATS.index(view.current_seat)
            view = client.view(created.match_id, tokens[seat])
            client.submit(created.match_id, tokens[seat], view.version, choose(view, rng, True))
            view = client.view(created.match_id, tokens[0])
    raise AssertionError("no match lasted long enough")


def test_a_resume_far_back_gets_every_event_while_another_viewer_is_ahead(
        client: Client) -> None:
    """Another viewer's stream keeps the hub's cursor at the match's end: a stream resumed
    from the start reads the events before it from Redis, a page (100) at a time, and
    used to wait after the first page for events that would never come to its queue."""
    match_id, token = _live_match_with_events(client, 120)
    last = client.get_record(match_id, token).events[-1].number
    live = client.watch(match_id)  # a spectator following the match
    next(live)  # its snapshot: the hub now follows the match from its last event
    resumed = client.watcher.Watch(watch_pb2.WatchRequest(match_id=match_id, resume_after=0),
                                   timeout=20)
    numbers = []
    for item in resumed:
        numbers.append(item.event.number)
        if item.event.number == last:
            break
    assert numbers == list(range(1, last + 1))
    resumed.cancel()
    live.cancel()


def test_resuming_is_charged_by_the_events_it_replays(redis_url: str) -> None:
    """A resume replays what GetRecord reads (each event projected for the viewer, about
    60 µs apiece): it spends the client's GetRecord budget, a read for every page of 100
    events it replays, so half a page costs half a read and 8 events 8/100 of one.
    (Seventeenth audit: a resume up to a page back was free, and 95 of them a second took
    60% of the engine's core; thirty-third: 16 events back were still free, and 90 a second
    with views took a third of it.)"""
    engine = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, record_rate=Rate(per_s=0.001, burst=3)))
    client = Client.to(engine.address)
    try:
        match_id, token = _live_match_with_events(client, 120)
        last = client.view(match_id, token).last_event_number

        def first(resume_after: int) -> grpc.StatusCode:
            stream = client.watcher.Watch(watch_pb2.WatchRequest(
                match_id=match_id, resume_after=resume_after), timeout=10)
            try:
                next(stream)
                return grpc.StatusCode.OK
            except grpc.RpcError as err:
                return err.code()  # type: ignore[attr-defined, no-any-return]
            finally:
                stream.cancel()

        assert [first(last - 50) for _ in range(5)] == [grpc.StatusCode.OK] * 5
        # Half a read is left: six resumes of 8 events spend 0.48 of it, the seventh is
        # refused, and so is a resume from the start.
        assert [first(last - 8) for _ in range(7)] == [grpc.StatusCode.OK] * 6 + [
            grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert first(0) == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        client.channel.close()
        engine.close()


def test_a_lagging_stream_whose_events_are_gone_waits_instead_of_reading_redis(
        engine: Engine, client: Client, redis_url: str) -> None:
    """A stream behind the hub's cursor reads the events it lacks from Redis, page by page;
    if they are gone (the match expired while it lagged) a page brings nothing, and the
    loop used to ask Redis again at once, tens of thousands of times a second."""
    match_id, _ = _live_match_with_events(client, 120)
    live = client.watch(match_id)
    next(live)  # the hub follows the match from its last event
    small_window = grpc.insecure_channel(engine.address, options=[
        ("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)])
    lagging = watch_pb2_grpc.WatchServiceStub(small_window).Watch(
        watch_pb2.WatchRequest(match_id=match_id, resume_after=0), timeout=30)
    next(lagging)  # the engine holds the rest of its first page, blocked on the window
    time.sleep(0.5)
    store = redis.Redis.from_url(redis_url)
    store.delete(*store.keys(f"*{match_id}*"))  # as the match's expiry would
    got: list[int] = []

    def drain() -> None:
        with contextlib.suppress(grpc.RpcError):
            for item in lagging:
                got.append(item.event.number)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    time.sleep(0.5)  # the rest of the page arrives
    before = int(store.info("stats")["total_commands_processed"])
    time.sleep(2)
    commands = int(store.info("stats")["total_commands_processed"]) - before
    lagging.cancel()
    live.cancel()
    small_window.close()
    assert got, "the page already read still arrives"
    assert commands < 500, f"{commands} Redis commands in 2 s for nothing"


def test_a_draw_reads_its_card_to_its_drawer_and_a_placeholder_to_everyone_else(
        client: Client) -> None:
    """API.md: an opponent's draw reads `draw troop ?troop`. It read `draw troop` (the
    rules core's "nothing drawn" was the troop placeholder's number), so a client
    parsing the third word failed on troop draws only; a play still reads no card."""
    created = client.create("standard", seed=11)
    mover = created.seat_token
    view = client.view(created.match_id, mover)
    play = next(a for a in view.legal_actions if a.startswith("play "))
    client.submit(created.match_id, mover, view.version, [play, "draw troop"])
    drawn = client.view(created.match_id, mover).hand
    for token, reads in ((mover, "known"), (created.other_seat_token, "?troop"),
                         (None, "?troop")):
        events = [e.text for e in client.get_record(created.match_id, token).events
                  if e.kind == types_pb2.EVENT_KIND_ACTION]
        assert events[0] == play, events  # a play names no drawn card
        assert events[1].split()[:2] == ["draw", "troop"] and len(events[1].split()) == 3, events
        card = events[1].split()[2]
        assert card in drawn if reads == "known" else card == reads, (token, events)
    for stream_token in (created.other_seat_token, None):
        got: list[object] = []
        _drain(client.watcher.Watch(
            watch_pb2.WatchRequest(match_id=created.match_id, resume_after=0),
            metadata=[("authorization", f"Bearer {stream_token}")] if stream_token else [],
            timeout=3), got)
        texts = [item.event.text for item in got
                 if isinstance(item, watch_pb2.WatchResponse) and item.HasField("event")]
        assert "draw troop ?troop" in texts, texts


def test_a_watch_of_an_open_match_that_expires_unjoined_ends_with_not_found(
        redis_url: str) -> None:
    """An OPEN match nobody joined expires without an event (as an abandoned one does):
    its creator's stream waited for a joiner for ever, holding one of its streams."""
    engine = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, lobby_ttl_s=2, watch_gone_check_s=0.3))
    client = Client.to(engine.address)
    try:
        created = client.create("standard", kind=types_pb2.OPPONENT_KIND_OPEN)
        got: list[object] = []
        started = time.monotonic()
        _drain(client.watcher.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                    metadata=auth(created.seat_token), timeout=15), got)
        assert isinstance(got[0], watch_pb2.WatchResponse) and got[0].HasField("snapshot")
        ended = got[-1]
        assert isinstance(ended, grpc.RpcError), got
        assert ended.code() == grpc.StatusCode.NOT_FOUND, ended
        assert time.monotonic() - started < 8, "ended soon after the expiry, not at a deadline"
    finally:
        client.channel.close()
        engine.close()

