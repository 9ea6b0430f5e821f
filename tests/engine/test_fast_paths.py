"""The shortcuts on every action's path: the pipelined Redis connection, and a submit at a
version the engine already knows (no read before the commit), with several replicas."""

from __future__ import annotations

import asyncio
import socket
import time

import grpc
import pytest
import redis
import redis.exceptions

from battleline.v1 import types_pb2
from battleline_engine.fastredis import FastRedis
from battleline_engine.storage import CommitStatus, Storage
from battleline_engine.storage.matches import match_key

from .harness import SEATS, Client, Engine


@pytest.mark.parametrize("lean", [True, False])
def test_per_action_commands_on_either_connection(redis_url: str, lean: bool) -> None:
    """The same answers on the pipelined connection (the default) and on redis-py's pool
    (`battleline serve --redis-client redis-py`)."""
    async def body() -> None:
        storage = Storage.from_url(redis_url, lean=lean)
        try:
            assert (storage.connection.fast is not None) is lean
            await storage.matches.create("m1", "S0", status="playing", events=[{"k": "x"}])
            # Many concurrent commands on one connection: each gets its own reply.
            records = await asyncio.gather(*(storage.matches.load("m1") for _ in range(200)))
            assert all(r is not None and r.state == "S0" for r in records)
            assert await storage.matches.load("missing") is None
            result = await storage.matches.commit("m1", expected_version=1, state="S1",
                                          action_key="a:0:k", response=b"\x00ok\xff")
            assert result.status is CommitStatus.OK
            assert (await storage.matches.commit("m1", expected_version=1, state="S9",
                                         action_key="a:0:k")).response == b"\x00ok\xff"
            assert (await storage.matches.commit("m1", expected_version=1, state="S9")).status \
                is CommitStatus.CONFLICT
            assert await storage.matches.load_for_action("m1", "a:0:k") == (None, b"\x00ok\xff")
        finally:
            await storage.close()

    asyncio.run(body())


async def _counting_writes(fast: FastRedis) -> list[bytes]:
    """Connect `fast`; the list its connection's writes are appended to from now on."""
    await fast.execute("PING")
    protocol = fast._protocol
    assert protocol is not None and protocol.transport is not None
    transport, writes = protocol.transport, []
    write = transport.write

    def counted(data: bytes) -> None:  # the real write, counted
        writes.append(data)
        write(data)

    transport.write = counted  # type: ignore[method-assign,assignment]
    return writes


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_a_command_sent_while_none_is_in_flight_leaves_at_once(redis_url: str) -> None:
    """No latency price at low load: with nothing in flight a command leaves at the end
    of its turn of the event loop, however long the batch interval."""
    async def body() -> None:
        fast = FastRedis(redis_url, batch_interval_s=10.0)
        try:
            writes = await _counting_writes(fast)
            reply = asyncio.ensure_future(fast.execute("SET", "idle", "1"))
            await _turns(3)  # the task's first step, then the flush it scheduled
            assert len(writes) == 1
            assert await reply == b"OK"
        finally:
            await fast.close()

    asyncio.run(body())


@pytest.mark.parametrize("interval", [0.0, 5.0])
def test_commands_sent_while_others_are_in_flight_wait_for_them_in_one_batch(
        redis_url: str, interval: float) -> None:
    """Under load (commands in flight) the next commands wait for the replies in flight and
    then leave in one write, each still getting the reply to its own command; with a batch
    interval of 0 (the unbatched path) each turn's commands leave at the end of the turn."""
    async def body() -> None:
        fast = FastRedis(redis_url, batch_interval_s=interval)
        try:
            writes = await _counting_writes(fast)
            started = time.monotonic()
            blocked = asyncio.ensure_future(fast.execute("BLPOP", "nothing", "0.3"))
            await _turns(3)
            assert len(writes) == 1  # in flight for 0.3 s
            calls = []
            for i in range(20):  # one arrival per turn of the event loop
                calls.append(asyncio.ensure_future(fast.execute("SET", f"b:{i}", f"v{i}")))
                await _turns(1)
            assert await asyncio.gather(*calls) == [b"OK"] * 20
            assert await blocked is None
            if interval:
                assert len(writes) == 2  # all 20 in one write, once the BLPOP answered
                assert time.monotonic() - started < interval
            else:
                assert len(writes) > 2
            got = await asyncio.gather(*(fast.execute("GET", f"b:{i}") for i in range(20)))
            assert got == [f"v{i}".encode() for i in range(20)]
        finally:
            await fast.close()

    asyncio.run(body())


def test_pipelined_connection_survives_a_killed_connection_and_a_script_flush(
        redis_url: str) -> None:
    admin = redis.Redis.from_url(redis_url)

    async def body() -> None:
        storage = Storage.from_url(redis_url)
        try:
            await storage.matches.create("m1", "S0", status="playing")
            assert (await storage.matches.commit("m1", expected_version=1, state="S1")).status \
                is CommitStatus.OK
            admin.script_flush()  # as after a Redis restart: EVALSHA answers NOSCRIPT
            admin.client_kill_filter(_type="normal", skipme=True)  # every client connection
            assert (await storage.matches.commit("m1", expected_version=2, state="S2")).status \
                is CommitStatus.OK
            record = await storage.matches.load("m1")
            assert record is not None and (record.state, record.version) == ("S2", 3)
        finally:
            await storage.close()

    try:
        asyncio.run(body())
    finally:
        admin.close()


def test_unreachable_redis_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there

    async def body() -> None:
        storage = Storage.from_url(f"redis://127.0.0.1:{port}/0")
        try:
            with pytest.raises(redis.exceptions.ConnectionError):
                await storage.matches.load("m1")
        finally:
            await storage.close()

    asyncio.run(body())


def test_pipelined_connection_authenticates_and_selects_the_database(redis_url: str) -> None:
    admin = redis.Redis.from_url(redis_url)
    admin.config_set("requirepass", "s3cret")
    host_port = redis_url.split("//", 1)[1].split("/", 1)[0]

    async def body() -> None:
        storage = Storage.from_url(f"redis://:s3cret@{host_port}/3")
        try:
            await storage.matches.create("m1", "S0", status="playing")
            record = await storage.matches.load("m1")
            assert record is not None and record.state == "S0"
        finally:
            await storage.close()
        wrong = Storage.from_url(f"redis://:nope@{host_port}/3")
        try:
            with pytest.raises(redis.exceptions.AuthenticationError):
                await wrong.matches.load("m1")
        finally:
            await wrong.close()

    authed = redis.Redis.from_url(f"redis://:s3cret@{host_port}/3")
    try:
        asyncio.run(body())
        assert authed.exists(match_key("m1", "m")) == 1
    finally:
        authed.config_set("requirepass", "")  # the session's server is shared by every test
        authed.close()
        admin.close()


def test_submit_on_a_replica_with_a_stale_copy_is_refused_then_replayed(
        engine: Engine, redis_url: str) -> None:
    other = Engine(redis_url)
    try:
        a, b = Client.to(engine.address), Client.to(other.address)
        created = a.create("standard", seed=5)
        tokens = (created.seat_token, created.other_seat_token)
        view = b.view(created.match_id, tokens[0])  # replica B now knows this version
        assert SEATS.index(view.current_seat) == 0
        plays = [x for x in view.legal_actions if x.startswith("play")]
        done = a.submit(created.match_id, tokens[0], view.version, [plays[0], "draw troop"],
                        action_id="first")
        assert done.version == view.version + 1
        # B still holds the old version: its shortcut commit must lose, and say so exactly.
        with pytest.raises(grpc.RpcError) as refused:
            b.submit(created.match_id, tokens[0], view.version, [plays[1], "draw troop"])
        assert refused.value.code() == grpc.StatusCode.ABORTED
        assert f"at version {done.version}, not {view.version}" in (refused.value.details()
                                                                    or "")
        # A retry of A's action through B is the stored answer, not a second action.
        again = b.submit(created.match_id, tokens[0], view.version, [plays[0], "draw troop"],
                         action_id="first")
        assert again == done
        now = b.view(created.match_id, tokens[1])
        assert now.version == done.version and now.current_seat == SEATS[1]
        # And B, now current, commits through its shortcut.
        nxt = b.submit(created.match_id, tokens[1], now.version,
                       [next(x for x in now.legal_actions if x.startswith("play")), "draw troop"])
        assert nxt.version == now.version + 1
        assert a.view(created.match_id, tokens[0]).version == nxt.version
    finally:
        other.close()


def test_rejected_action_on_the_shortcut_keeps_its_precise_reason(engine: Engine) -> None:
    client = Client.to(engine.address)
    created = client.create("standard", seed=9)
    view = client.view(created.match_id, created.seat_token)
    with pytest.raises(grpc.RpcError) as refused:
        client.submit(created.match_id, created.other_seat_token, view.version, ["draw troop"])
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED  # not-your-turn
    with pytest.raises(grpc.RpcError) as refused:
        client.submit(created.match_id, created.seat_token, view.version, ["draw troop"])
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finished = client.view(created.match_id, created.seat_token)
    assert finished.version == view.version and finished.phase == types_pb2.MATCH_PHASE_PLAYING


def test_the_match_kept_after_a_commit_is_exactly_what_a_read_finds(redis_url: str) -> None:
    """A read that finds the version this process holds returns the held match, so the
    held match must equal a fresh read field for field (state text, fields, times)."""
    import random

    from battleline_engine.game import SUBMITTED
    from battleline_engine.matches import Matches, parse_actions
    from battleline_engine.model import ClockKind, Meta, Opponent
    from battleline_engine.seating import Seating
    from battleline_rules import format_action

    async def body() -> None:
        storage = Storage.from_url(redis_url)
        try:
            for clock in ("none", "per_move"):
                matches = Matches(storage)
                meta = Meta(ruleset="standard", clock=ClockKind(clock), clock_ms=600_000,
                            opponent=Opponent.LOCAL, auto_claim=(True, False), names=("a", "b"))
                created = await Seating(matches).create(meta, 0)
                match_id = created.match.match_id
                rng = random.Random(4)
                for n in range(60):
                    match = await matches.read(match_id)
                    if match.finished:
                        break
                    state = match.state
                    seat = state.current_player
                    action = rng.choice(state.legal_actions())
                    await matches.submit(match_id, seat, match.version, f"k{n}",
                                         parse_actions([format_action(action)]),
                                         SUBMITTED[False])
                    held = matches.cache.latest(match_id)
                    fresh = await storage.matches.load(match_id)
                    assert held is not None and fresh is not None
                    assert held.record == fresh, n
                    assert await storage.matches.load(match_id, held.record) is held.record
        finally:
            await storage.close()

    asyncio.run(body())
