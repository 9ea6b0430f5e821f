"""Watch streams that drop mid-match (the engine is stopped and started again on the same
address) resume from the last event: no event missed, none repeated, sync and asyncio."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from battleline.v1 import types_pb2, watch_pb2
from battleline_client.aio import AsyncClient
from battleline_client.bots import choose, play_local
from battleline_client.client import Client, Seat
from battleline_client.common import is_finished, is_my_turn
from battleline_client.errors import InvalidRequest
from battleline_host.local import LocalService


def _sync_watch(address: str, match_id: str, out: list[watch_pb2.WatchResponse]) -> None:
    with Client(address) as client:
        out.extend(client.watch(match_id))


def _async_watch(address: str, match_id: str, out: list[watch_pb2.WatchResponse]) -> None:
    async def main() -> None:
        async with AsyncClient(address) as client:
            async for message in client.watch(match_id):
                out.append(message)

    asyncio.run(main())


def _play(seats: list[Seat], rng: random.Random, turns: int) -> bool:
    """Up to `turns` requests of random play; True once the match is over."""
    for _ in range(turns):
        views = [seat.view() for seat in seats]
        if is_finished(views[0]):
            return True
        mover = next(i for i, v in enumerate(views) if is_my_turn(v))
        seats[mover].act(*choose(views[mover], rng))
    return is_finished(seats[0].view())


def _wait_for(predicate: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("watch", [_sync_watch, _async_watch], ids=["sync", "asyncio"])
def test_watch_resumes_across_an_engine_restart(
    redis_url: str, port: int, watch: Callable[[str, str, list[watch_pb2.WatchResponse]], None],
) -> None:
    engine = LocalService(redis_url, port=port)
    address = engine.start()
    received: list[watch_pb2.WatchResponse] = []
    with Client(address) as client:
        created = client.create(opponent="local", clock="none", auto_claim=True)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        watcher = threading.Thread(target=watch, args=(address, created.match_id, received),
                                   daemon=True)
        watcher.start()
        rng = random.Random(11)
        assert not _play(seats, rng, 15)
        last = seats[0].view().last_event_number
        _wait_for(lambda: bool(received) and (received[-1].event.number or 0) >= last)
        before = len(received)
        engine.stop()  # every stream and connection drops
        time.sleep(0.5)
        engine = LocalService(redis_url, port=port)
        engine.start()
        try:
            while not _play(seats, rng, 50):
                pass
            watcher.join(60)
            assert not watcher.is_alive(), "the watch did not end with the match"
            record = client.record(created.match_id)
        finally:
            engine.stop()
    assert received[0].HasField("snapshot")
    assert all(m.HasField("event") for m in received[1:])
    numbers = [m.event.number for m in received[1:]]
    first = received[0].snapshot.last_event_number + 1
    assert numbers == list(range(first, record.events[-1].number + 1))
    assert [m.event.kind for m in received[1:]] == [e.kind for e in record.events[first - 1:]]
    assert 1 < before < len(received), "the stream must have dropped mid-match"


def test_resume_after_a_given_event_and_after_the_end(client: Client) -> None:
    done = play_local(client, random.Random(3))
    last = client.record(done.match_id).events[-1].number
    tail = list(client.watch(done.match_id, resume_after=last - 4))
    assert [m.event.number for m in tail] == list(range(last - 3, last + 1))
    # The engine alone would keep this stream open forever; the client knows it is over.
    assert list(client.watch(done.match_id, resume_after=last)) == []
    # Past the last event: refused as the engine refuses it (it ended without a word).
    with pytest.raises(InvalidRequest) as refused:
        list(client.watch(done.match_id, resume_after=last + 1))
    assert refused.value.reason == "bad-resume"

    async def resumed_past_the_end() -> None:
        async with AsyncClient(client.target) as aio:
            async for _ in aio.watch(done.match_id, resume_after=10_000):
                pass
    with pytest.raises(InvalidRequest):
        asyncio.run(resumed_past_the_end())


class _DropOnce(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Cancels the first Watch call after `after` messages, as a dropped connection would."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.dropped = 0
        self.resumed_after: list[int] = []  # resume_after of each later call

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        call = continuation(details, request)
        if self.dropped:
            self.resumed_after.append(request.resume_after)
            return call
        self.dropped += 1
        interceptor = self

        class Dropping:
            def __iter__(self) -> Any:
                for n, item in enumerate(call, 1):
                    yield item
                    if n == interceptor.after:
                        call.cancel()  # the next read raises CANCELLED

            def cancel(self) -> bool:
                return bool(call.cancel())

        return Dropping()


def test_watch_resumes_after_the_call_is_cancelled(service: LocalService) -> None:
    dropper = _DropOnce(after=6)
    channel = grpc.intercept_channel(grpc.insecure_channel(service.address), dropper)
    with Client(service.address) as client, Client(service.address, channel=channel) as watcher:
        created = client.create(opponent="local", clock="none", auto_claim=True)
        assert created.other is not None
        seats = [client.seat(created.seat), client.seat(created.other)]
        received: list[watch_pb2.WatchResponse] = []
        thread = threading.Thread(
            target=lambda: received.extend(watcher.watch(created.match_id)), daemon=True)
        thread.start()
        rng = random.Random(4)
        while not _play(seats, rng, 50):
            pass
        thread.join(60)
        record = client.record(created.match_id)
    assert dropper.dropped == 1 and not thread.is_alive()
    # Reopened after the last event given before the drop (the snapshot, then 5 events).
    assert dropper.resumed_after[0] == received[5].event.number
    first = received[0].snapshot.last_event_number + 1
    numbers = [m.event.number for m in received[1:]]
    assert numbers == list(range(first, record.events[-1].number + 1))
    assert len(numbers) > 6  # the stream went on after the drop


class _AnswerLost(grpc.RpcError):  # type: ignore[misc]
    """What a client sees when the server applied its call and the answer never came."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "the connection dropped before the answer"

    def trailing_metadata(self) -> tuple[()]:
        return ()


class _LoseFirstAnswer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Lets the first call of `method` reach the engine and be applied, then loses its
    answer."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.sent: list[Any] = []  # each request of `method` sent

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        call = continuation(details, request)
        if not details.method.endswith(f"/{self.method}"):
            return call
        self.sent.append(request)
        if len(self.sent) > 1:
            return call
        call.result()  # applied by the engine
        return _NeverAnswered()


class _NeverAnswered:
    """The outcome of a call whose answer was lost, as the intercepted channel reads it."""

    def result(self, timeout: float | None = None) -> Any:
        raise _AnswerLost()


def test_a_join_whose_answer_was_lost_is_sent_again_and_gets_its_seat(
        service: LocalService) -> None:
    """Nineteenth audit: a join applied whose answer was lost left the joiner no way back
    (its retry was match-full, the seat held by nobody). The library sends every join
    with a secret of its own and sends it again: the same seat comes back."""
    loser = _LoseFirstAnswer("JoinMatch")
    channel = grpc.intercept_channel(grpc.insecure_channel(service.address), loser)
    with Client(service.address) as creator, Client(service.address, channel=channel) as joiner:
        created = creator.create(opponent="open")
        handle = joiner.join(match_id=created.match_id)
        view = joiner.seat(handle).view()
    assert len(loser.sent) == 2
    assert loser.sent[0].seat_secret == loser.sent[1].seat_secret != ""
    assert view.viewer == handle.seat != created.seat.seat
    assert view.phase == types_pb2.MATCH_PHASE_PLAYING and view.version == 2  # joined once


def test_a_create_whose_answer_was_lost_is_sent_again_and_gets_its_match(
        service: LocalService) -> None:
    """A create applied whose answer was lost left a match its creator never heard of,
    listed in the lobby and held against it until it expired. The library sends every
    create with a secret of its own and sends it again: the same match comes back, and
    the lobby lists it once."""
    loser = _LoseFirstAnswer("CreateMatch")
    channel = grpc.intercept_channel(grpc.insecure_channel(service.address), loser)
    with Client(service.address, channel=channel) as creator:
        created = creator.create(opponent="open", seat="random")
        view = creator.seat(created.seat).view()
        listed = [m.match_id for m in creator.list_open().matches]
    assert len(loser.sent) == 2
    assert loser.sent[0].seat_secret == loser.sent[1].seat_secret != ""
    assert view.viewer == created.seat.seat and view.phase == types_pb2.MATCH_PHASE_WAITING
    assert listed.count(created.match_id) == 1 and len(listed) == len(set(listed))
    assert created.invite_code


def test_a_join_sent_again_with_the_callers_own_secret_gets_the_same_seat(
        service: LocalService) -> None:
    """After a Timeout the library does not resend a join itself: the caller that gave
    its own `seat_secret` sends the same join again and gets the same seat."""
    secret = "the-callers-own-secret-0123456789"
    with Client(service.address) as client:
        created = client.create(opponent="open")
        first, again = (client.join(match_id=created.match_id, seat_secret=secret)
                        for _ in range(2))
    assert first == again and first.token.endswith(f".{secret}")


class _CtrlCWhileCancelling(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """A Watch call whose cancel is where a Ctrl-C lands (it cancels, then raises)."""

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        call = continuation(details, request)

        class Interrupted:
            def __iter__(self) -> Any:
                return iter(call)

            def cancel(self) -> bool:
                call.cancel()
                raise KeyboardInterrupt

        return Interrupted()


def test_a_ctrl_c_while_a_seats_watch_is_closed_reaches_the_caller(
        service: LocalService) -> None:
    """An audit of `battleline play`: a Ctrl-C that landed as a hot seat's stream was
    closed (its call cancelled by the collector, in a finalizer) was printed as
    "Exception ignored" and dropped, and the game went on at the move prompt."""
    channel = grpc.intercept_channel(grpc.insecure_channel(service.address),
                                     _CtrlCWhileCancelling())
    with Client(service.address) as client, Client(service.address, channel=channel) as other:
        created = client.create(opponent="local", clock="none")
        stream = Seat(other, created.seat).watch()
        assert next(stream).HasField("snapshot")
        with pytest.raises(KeyboardInterrupt):
            stream.close()
