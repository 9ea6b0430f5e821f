"""Input hygiene and races found by the outside report of issue #14: a private match
needs its invite code, the Watch limit holds under concurrent opens, bad input is
INVALID_ARGUMENT without echoing itself back, and a client's cancel is no error."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from battleline.v1 import lobby_pb2, types_pb2, watch_pb2, watch_pb2_grpc
from battleline_engine.health import STREAMS_PER_ADDRESS
from battleline_engine.metrics import REGISTRY
from battleline_engine.ratelimit import Rate
from battleline_engine.status import DEFECT
from battleline_engine.storage.matches import match_key

from .harness import AI_KEY, OPEN_LIMITS, Client, Engine, auth
from .test_errors import reason


def test_a_private_match_is_joined_only_by_its_invite_code(client: Client) -> None:
    created = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="standard"),
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_OPEN, private=True)),
        timeout=10)
    with pytest.raises(grpc.RpcError) as refused:
        client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id), timeout=10)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert reason(refused.value) == "invite-required"
    joined = client.lobby.JoinMatch(
        lobby_pb2.JoinMatchRequest(invite_code=created.invite_code), timeout=10)
    assert joined.match_id == created.match_id


def test_a_public_match_is_still_joined_by_its_id(client: Client) -> None:
    created = client.create(kind=types_pb2.OPPONENT_KIND_OPEN)
    joined = client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=created.match_id),
                                    timeout=10)
    assert joined.seat_token


@pytest.fixture
def four_streams(redis_url: str) -> Engine:
    running = Engine(redis_url, config=dataclasses.replace(OPEN_LIMITS, streams_per_seat=4))
    yield running  # type: ignore[misc]
    running.close()


async def _accepted(calls: list[grpc.aio.UnaryStreamCall],  # type: ignore[type-arg]
                    meanwhile: Callable[[], Awaitable[None]] | None = None,
                    ) -> tuple[int, int]:
    """Of streams opened at once, how many sent a first message and how many were refused
    RESOURCE_EXHAUSTED (nothing else may happen); `meanwhile` runs while the accepted
    ones are open, then every one is cancelled."""

    async def first(call: grpc.aio.UnaryStreamCall) -> bool:  # type: ignore[type-arg]
        try:
            await call.read()
            return True
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            return False

    results = await asyncio.gather(*(first(c) for c in calls))
    if meanwhile is not None:
        await meanwhile()
    for call in calls:
        call.cancel()
    return sum(results), len(calls) - sum(results)


async def _open_watches(address: str, match_ids: list[str], n: int) -> tuple[int, int]:
    """Open `n` spectator streams at once, over the matches in turn; (accepted, refused)."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = watch_pb2_grpc.WatchServiceStub(channel)
        return await _accepted([
            stub.Watch(watch_pb2.WatchRequest(match_id=match_ids[i % len(match_ids)]))
            for i in range(n)])


def test_concurrent_watch_opens_respect_the_stream_limit(four_streams: Engine) -> None:
    client = Client.to(four_streams.address)
    created = client.create()

    async def rounds() -> list[tuple[int, int]]:
        out = []
        for _ in range(5):
            out.append(await _open_watches(four_streams.address, [created.match_id], 60))
            await asyncio.sleep(0.3)  # the cancelled streams close
        return out

    # On the engine's own loop: gRPC's asyncio stack serves one event loop per process.
    assert four_streams.call(rounds()) == [(4, 56)] * 5
    client.channel.close()


def test_a_spectator_over_its_cap_is_told_whose_cap_it_is(four_streams: Engine) -> None:
    """A client walkthrough: a spectator's fifth stream on a match was refused "at most 4
    open streams per seat", and a spectator has no seat."""
    client = Client.to(four_streams.address)
    created = client.create()
    stub = watch_pb2_grpc.WatchServiceStub(client.channel)
    streams = [stub.Watch(watch_pb2.WatchRequest(match_id=created.match_id))
               for _ in range(4)]
    assert all(next(stream).HasField("snapshot") for stream in streams)
    with pytest.raises(grpc.RpcError) as refused:
        next(stub.Watch(watch_pb2.WatchRequest(match_id=created.match_id)))
    assert reason(refused.value) == "too-many-streams"
    assert refused.value.details() == "at most 4 open streams per spectator address on a match"
    for stream in streams:
        stream.cancel()
    client.channel.close()


def test_one_client_holds_a_bounded_number_of_streams_over_all_matches(
        redis_url: str) -> None:
    """Four streams per match would let one client watch every live match four times:
    its streams over all matches are capped too, checked with the same care."""
    engine = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, streams_per_seat=4, streams_per_client=10))
    client = Client.to(engine.address)
    try:
        matches = [client.create().match_id for _ in range(5)]

        async def rounds() -> list[tuple[int, int]]:
            out = []
            for _ in range(3):
                out.append(await _open_watches(engine.address, matches, 20))  # 4 a match
                await asyncio.sleep(0.3)  # the cancelled streams close
            return out

        assert engine.call(rounds()) == [(10, 10)] * 3
    finally:
        client.channel.close()
        engine.close()


def test_the_hosted_ai_watches_whatever_its_address_holds(redis_url: str) -> None:
    """The AI's streams come from an address that proves nothing (loopback under `serve`):
    a local user holding that address's streams used to stop the AI watching, and so
    moving, in every match. Its streams count per seat only."""
    engine = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, streams_per_seat=4, streams_per_client=2))
    client = Client.to(engine.address)
    try:
        local = client.create().match_id
        ai_match = client.lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
            options=types_pb2.MatchOptions(ruleset="standard"),
            opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI, ai_level=3)),
            timeout=10).match_id
        client.lobby.JoinMatch(lobby_pb2.JoinMatchRequest(match_id=ai_match),
                               metadata=auth(AI_KEY), timeout=10)

        async def held_then_ai() -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = watch_pb2_grpc.WatchServiceStub(channel)
                held = [stub.Watch(watch_pb2.WatchRequest(match_id=local)) for _ in range(2)]
                outcome: list[tuple[int, int]] = []

                async def others() -> None:
                    outcome.append(await _accepted([stub.Watch(
                        watch_pb2.WatchRequest(match_id=local))]))
                    outcome.append(await _accepted([stub.Watch(
                        watch_pb2.WatchRequest(match_id=ai_match), metadata=auth(AI_KEY))
                        for _ in range(5)]))

                return await _accepted(held, others), outcome[0], outcome[1]

        held, stranger, ai = engine.call(held_then_ai())
        assert held == (2, 0) and stranger == (0, 1)  # the address is full
        assert ai == (4, 1)  # the AI still watches: up to its seat's cap
    finally:
        client.channel.close()
        engine.close()


def test_a_non_ascii_page_token_is_invalid_argument(client: Client) -> None:
    for token in ("².abc", "١٢.abc", "12.a b"):
        with pytest.raises(grpc.RpcError) as refused:
            client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(page_token=token),
                                         timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, token
        assert reason(refused.value) == "bad-page-token"


def test_a_huge_input_is_refused_without_echoing_it(client: Client) -> None:
    huge = "x" * 5000
    with pytest.raises(grpc.RpcError) as refused:
        client.view(huge + "!", None)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason(refused.value) == "bad-match-id"
    assert len(refused.value.details()) < 200
    with pytest.raises(grpc.RpcError) as refused:
        client.create(ruleset=huge)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(refused.value.details()) < 200


def test_a_message_quotes_at_most_24_characters_of_a_bad_value(client: Client) -> None:
    """docs/API.md promises it; a client developer found the rules core's own explanation
    after the engine's cut quote repeating the whole card or action (50 characters), and
    an unknown match id quoted whole."""
    created = client.create()
    match_id, token = created.match_id, created.seat_token
    version = client.view(match_id, token).version
    values = ["ABCDEFGHIJ" * 5, "attack" * 6 + " 3", "R7@" + "9" * 40, "draw " + "troops" * 8]
    for value in values:
        action = value if " " in value else f"play {value}"
        with pytest.raises(grpc.RpcError) as refused:
            client.submit(match_id, token, version, [action])
        assert reason(refused.value) in ("malformed", "no-such-flag"), action
        _assert_quotes_at_most_24(refused.value.details(), action)
    unknown = "m" * 40
    with pytest.raises(grpc.RpcError) as refused:
        client.view(unknown, token)
    assert reason(refused.value) in ("match-not-found", "other-match")
    with pytest.raises(grpc.RpcError) as refused:
        client.view(unknown, None)
    assert reason(refused.value) == "match-not-found"
    _assert_quotes_at_most_24(refused.value.details(), unknown)


def _assert_quotes_at_most_24(message: str, value: str) -> None:
    longest = max(n for n in range(len(value) + 1)
                  if any(value[i:i + n] in message for i in range(len(value) - n + 1)))
    assert longest <= 24, (longest, message)


def test_request_bytes_that_are_not_protobuf_are_invalid_argument(engine: Engine) -> None:
    channel = grpc.insecure_channel(engine.address)
    raw = channel.unary_unary("/battleline.v1.LobbyService/ListOpenMatches")
    for garbage in (b"\xff\xff\xff", b"\x0a\x05ab", b"\x08"):
        with pytest.raises(grpc.RpcError) as refused:
            raw(garbage, timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, garbage
        assert reason(refused.value) == "bad-request"
        assert "Traceback" not in refused.value.details()
    channel.close()


def _errors(method: str, code: str) -> float:
    value = REGISTRY.get_sample_value("battleline_rpc_errors_total",
                                      {"method": method, "code": code})
    return value or 0.0


def test_a_cancelled_watch_is_not_counted_as_an_unknown_error(engine: Engine,
                                                             client: Client) -> None:
    created = client.create()
    unknown = _errors("Watch", "UNKNOWN")
    cancelled = _errors("Watch", "CANCELLED")
    assert engine.call(_open_watches(engine.address, [created.match_id], 3)) == (3, 0)
    deadline = time.monotonic() + 10
    while _errors("Watch", "CANCELLED") < cancelled + 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert _errors("Watch", "UNKNOWN") == unknown
    assert _errors("Watch", "CANCELLED") == cancelled + 3


def test_reading_records_is_rate_limited_per_client(redis_url: str) -> None:
    """A record is built from every event of the match (tens of milliseconds for a long
    series): one client may read a few at once, then at the record rate, whoever's match
    it reads and whether or not it holds a seat."""
    limited = Engine(redis_url, config=dataclasses.replace(
        OPEN_LIMITS, record_rate=Rate(per_s=0.01, burst=3)))
    client = Client.to(limited.address)
    try:
        created = [client.create("basic") for _ in range(2)]
        codes = []
        for i in range(5):
            match = created[i % 2]
            try:
                client.get_record(match.match_id, match.seat_token if i % 2 else None)
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as err:
                codes.append(err.code())
                assert "records read" in err.details()
        assert codes == [grpc.StatusCode.OK] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2
    finally:
        client.channel.close()
        limited.close()


def test_health_watches_are_capped_per_address(engine: Engine) -> None:
    """gRPC's health Watch stays open as long as its client likes: one address holds at
    most STREAMS_PER_ADDRESS of them, while Check (what probes call) stays free."""

    async def opens(n: int) -> tuple[int, int]:
        async with grpc.aio.insecure_channel(engine.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            calls = [stub.Watch(health_pb2.HealthCheckRequest()) for _ in range(n)]

            async def check() -> None:
                checked = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert checked.status == health_pb2.HealthCheckResponse.SERVING

            return await _accepted(calls, check)

    n = STREAMS_PER_ADDRESS + 4
    assert engine.call(opens(n)) == (STREAMS_PER_ADDRESS, 4)
    time.sleep(0.3)  # the cancelled streams close, and their places are free again
    assert engine.call(opens(n)) == (STREAMS_PER_ADDRESS, 4)


def test_reflection_streams_are_capped_per_address(engine: Engine) -> None:
    """A reflection stream stays open as long as its client likes (an audit held 2,842
    idle ones): one address holds at most STREAMS_PER_ADDRESS, each still answered."""

    async def ask(call: grpc.aio.StreamStreamCall) -> None:  # type: ignore[type-arg]
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))

    async def opens(n: int) -> tuple[int, int]:
        async with grpc.aio.insecure_channel(engine.address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            calls = [stub.ServerReflectionInfo() for _ in range(n)]
            await asyncio.gather(*(ask(call) for call in calls))  # then each stays open
            return await _accepted(calls)  # type: ignore[arg-type]

    n = STREAMS_PER_ADDRESS + 3
    assert engine.call(opens(n)) == (STREAMS_PER_ADDRESS, 3)
    time.sleep(0.3)
    assert engine.call(opens(n)) == (STREAMS_PER_ADDRESS, 3)


def test_a_defect_is_internal_with_a_fixed_message(engine: Engine, client: Client,
                                                   redis_url: str) -> None:
    """An exception the engine does not expect (here: a match whose stored state cannot
    be read) is a defect: logged, and answered INTERNAL with a fixed message. gRPC's own
    answer was UNKNOWN "Unexpected <class ...>: " with the exception's text (the
    seventeenth audit's full Redis gave a client Redis's error and its script's line)."""
    created = client.create()
    store = redis.Redis.from_url(redis_url)
    store.hset(match_key(created.match_id, "m"), mapping={"state": "not a position"})
    store.hincrby(match_key(created.match_id, "m"), "version", 1)
    store.close()
    for call in (lambda: client.view(created.match_id, created.seat_token),
                 lambda: next(client.watch(created.match_id, created.seat_token))):
        with pytest.raises(grpc.RpcError) as failed:
            call()
        assert failed.value.code() == grpc.StatusCode.INTERNAL
        assert failed.value.details() == DEFECT
