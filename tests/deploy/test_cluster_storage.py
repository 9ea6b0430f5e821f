"""The engine's storage on a real 3-master Redis Cluster, call by call.

The fault test plays whole matches there; these pin down the parts that differ from a
single Redis: one slot per match (so both Lua scripts run), the clock index written
outside the script, same-slot transactions, the event reader over many slots, and the
AI request stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
import redis.asyncio
import redis.exceptions
from redis.crc import key_slot

from battleline_engine import storage as st
from battleline_engine.matches import Matches
from battleline_engine.storage import CommitStatus, Storage
from battleline_engine.storage.connection import Connection
from battleline_engine.storage.matches import match_key
from battleline_engine.sweeper import Sweeper
from tests.processes import free_port

from .load import Driver
from .procs import EngineProcess, RedisCluster

T = TypeVar("T")
PARTS = ("m", "ev", "idem", "seats", "n")


def _run(url: str, body: Callable[[Storage], Awaitable[T]]) -> T:
    async def main() -> T:
        storage = Storage.from_url(url)
        try:
            return await body(storage)
        finally:
            await storage.close()

    return asyncio.run(main())


def test_every_key_of_a_match_is_in_one_slot() -> None:
    for match_id in [st.new_match_id() for _ in range(200)]:
        slots = {key_slot(match_key(match_id, part).encode()) for part in PARTS}
        assert len(slots) == 1


def test_storage_works_unchanged_on_a_cluster(cluster: RedisCluster) -> None:
    ids = [f"match{i}" for i in range(12)]  # spread over many slots, so over all 3 nodes
    assert len({key_slot(match_key(i, "m").encode()) for i in ids}) == len(ids)

    async def body(s: Storage) -> None:
        assert s.connection.cluster
        for match_id in ids:
            created = await s.matches.create(match_id, "S0", status="playing",
                                             events=[{"kind": "created"}], deadline_ms=10**13)
            assert created.status is CommitStatus.OK
        done = await s.matches.commit(ids[0], expected_version=1, state="S1", action_key="0:a",
                                      response=b"r", events=[{"kind": "action"}], deadline_ms=5)
        assert done.status is CommitStatus.OK
        again = await s.matches.commit(ids[0], expected_version=1, state="S1", action_key="0:a")
        assert (again.status, again.response) == (CommitStatus.DUPLICATE, b"r")
        stale = await s.matches.commit(ids[0], expected_version=1, state="S2", action_key="0:b")
        assert stale.status is CommitStatus.CONFLICT
        assert await s.clocks.due(10) == [(ids[0], 5)]  # indexed outside the script
        page = await s.events.events_after(ids[0], 0)  # a same-slot transaction
        assert [e.number for e in page.events] == [1, 2] and page.complete
        # The event reader sees new events of matches in different slots in one call.
        for match_id in ids[1:4]:
            await s.matches.commit(match_id, expected_version=1, state="S1",
                                   events=[{"kind": "action"}])
        got = await s.events.read_new_events({**{i: 1 for i in ids}, ids[0]: 2})
        assert sorted(got) == sorted(ids[1:4])
        assert await s.events.read_new_events({ids[5]: 1}) == {}
        await s.ai.ensure_group()
        await s.ai.request(ids[0], 1, 3)
        assert await s.lobby.hold_place("ai", "10.0.0.1", ids[0], 1)
        assert not await s.lobby.hold_place("ai", "10.0.0.1", ids[1], 1)
        (request,) = await s.ai.read("worker-1", block_ms=100)
        await s.ai.ack(request[0])
        await s.ai.park(request[1])  # a key and an index in different slots
        assert await s.ai.parked_to_look_at(5) == [ids[0]]
        assert await s.ai.unpark(ids[0]) == request[1]
        assert await s.ai.unpark(ids[0]) is None and await s.ai.parked_to_look_at(5) == []
        assert await s.matches.live_count() == len(ids)
        # The event hub's expiry check asks about matches in every slot at once.
        assert await s.matches.existing([*ids, "gone1", "gone2"]) == set(ids)

    _run(cluster.url, body)


async def _node_away(*_: object, **__: object) -> None:
    """A write to the clock index's node, which is away."""
    raise redis.exceptions.ConnectionError("the index's node is away")


def test_a_clock_whose_index_write_failed_after_its_commit_still_wakes_the_sweeper(
        cluster: RedisCluster) -> None:
    """An audit on a real cluster: the index's node away just after a join's commit left a
    running clock out of the index (written after the script, in another slot), and the
    match never ran out of time. An entry written before the commit stands in, early at
    worst, and the sweeper moves it toward the match's deadline (no more than
    EARLY_MOVE_MS ahead, and only if no commit rewrote it meanwhile)."""
    async def body(s: Storage) -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
        now = st.now_ms()
        await s.matches.create("late1", "S0", status="playing", events=[{"kind": "created"}],
                               deadline_ms=now + 100)
        indexed = s.clocks.index
        s.clocks.index = _node_away  # type: ignore[method-assign]
        done = await s.matches.commit("late1", expected_version=1, state="S1",
                                      events=[{"kind": "action"}], deadline_ms=now + 60_000)
        s.clocks.index = indexed  # type: ignore[method-assign]
        assert done.status is CommitStatus.OK
        early = await s.clocks.due(now + 60_000)
        await asyncio.sleep(0.2)
        await Sweeper(s, Matches(s), 3600).sweep_once()
        moved = await s.clocks.due(now + 60_000)
        await s.clocks.index("late1", now + 5)  # a commit's, after the sweeper read the entry
        await s.clocks.move_if_unchanged("late1", moved[0][1], now + 90_000)
        (kept,) = await s.clocks.due(now + 90_000)
        return early, moved, kept[1] - now

    early, moved, kept_ms = _run(cluster.url, body)
    assert [match_id for match_id, _ in early] == ["late1"]  # indexed, early
    deadline = early[0][1] - 100 + 60_000
    assert len(moved) == 1 and early[0][1] + 5_000 < moved[0][1] <= deadline
    assert kept_ms == 5


def test_a_clocked_action_goes_on_while_the_index_is_away_and_is_indexed_after(
        cluster: RedisCluster) -> None:
    """A re-test: with the index's node away, every clocked action of the cluster was
    refused (its entry written before the commit failed), on every node. The action goes
    on; its entry is kept and written by the next sweep."""
    async def body(s: Storage) -> tuple[CommitStatus, list[tuple[str, int]],
                                        list[tuple[str, int]]]:
        deadline = st.now_ms() + 60_000
        await s.matches.create("away1", "S0", status="playing", events=[{"kind": "created"}])
        zadd = s.connection.redis.zadd
        s.connection.redis.zadd = _node_away  # type: ignore[method-assign]
        done = await s.matches.commit("away1", expected_version=1, state="S1",
                                      events=[{"kind": "action"}], deadline_ms=deadline)
        s.connection.redis.zadd = zadd  # type: ignore[method-assign]
        before = await s.clocks.due(deadline)
        await Sweeper(s, Matches(s), 3600).sweep_once()
        return done.status, before, await s.clocks.due(deadline)

    status, before, after = _run(cluster.url, body)
    assert status is CommitStatus.OK and before == []
    assert after == [("away1", after[0][1])] and after[0][1] > st.now_ms() + 50_000


def test_serve_chooses_the_cluster_client_from_redis_cluster_1(cluster: RedisCluster) -> None:
    """`REDIS_CLUSTER=1` with a plain redis:// URL of any node: the deployment's setting."""
    engine = EngineProcess(f"redis://127.0.0.1:{cluster.nodes[2].port}",
                           extra_env={"REDIS_CLUSTER": "1"})
    try:
        engine.start()

        async def main() -> dict[str, int]:
            driver = Driver([engine.address], seed=5)
            try:
                await driver.run(2, 2, watch_every=1)
                return await driver.audit()
            finally:
                await driver.close()

        report = asyncio.run(main())
        assert (report["losses"], report["gaps"], report["unfinished"]) == (0, 0, 0)
    finally:
        engine.stop()


def test_a_tls_cluster_url_makes_tls_connections() -> None:
    """Twenty-sixth audit, second round: with `rediss+cluster://` every connection was
    made with the plain class, which refused the TLS options (TypeError `ssl_ca_certs`)
    before it dialled: no TLS cluster could be reached. Now it dials (and, with nothing
    listening, says so as a connection error)."""
    async def body() -> None:
        connection = Connection.from_url(f"rediss+cluster://127.0.0.1:{free_port()}")
        made = connection.redis.nodes_manager.connection_kwargs["connection_class"]
        assert issubclass(made, redis.asyncio.SSLConnection), made
        try:
            with pytest.raises((redis.exceptions.ConnectionError,
                                redis.exceptions.RedisClusterException)) as refused:
                await connection.redis.ping()
            assert not isinstance(refused.value.__cause__, TypeError), refused.value
        finally:
            await connection.close()

    asyncio.run(body())
