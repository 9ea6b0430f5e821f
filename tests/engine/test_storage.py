"""Storage against a real Redis: atomic commit, version races, idempotency, expiry, indexes.

Every test runs on both paths Storage has: plain Redis (global indexes written inside
the match's script) and the Redis Cluster path (written right after it, since on a
cluster they live in another slot). tests/deploy/test_cluster_storage.py runs the
same calls on a real cluster."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from battleline_engine import storage as st
from battleline_engine.matches import Matches
from battleline_engine.storage import CommitStatus, Storage
from battleline_engine.storage.ai import GROUP, REQUESTS_KEY
from battleline_engine.storage.connection import Connection, StoreClock
from battleline_engine.storage.matches import match_key
from battleline_engine.sweeper import Sweeper

T = TypeVar("T")


@pytest.fixture(params=[False, True], ids=["plain", "cluster-path"])
def cluster(request: pytest.FixtureRequest) -> bool:
    """Whether Storage takes its Redis Cluster path (on the same plain Redis)."""
    return bool(request.param)


def run(url: str, cluster: bool, body: Callable[[Storage], Awaitable[T]],
        **options: int) -> T:
    """Run an async test body with a Storage bound to this event loop."""

    async def main() -> T:
        connection = Connection.from_url(url)
        connection.cluster = cluster
        storage = Storage(connection, **options)
        try:
            return await body(storage)
        finally:
            await storage.close()

    return asyncio.run(main())


async def _new(storage: Storage, match_id: str = "m1") -> None:
    result = await storage.matches.create(
        match_id, "S0", status="playing", seats={0: st.hash_token(f"{match_id}.a")},
        fields={"ruleset": "standard"}, events=[{"kind": "created"}],
    )
    assert result.status is CommitStatus.OK


def test_create_then_load(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        rec = await s.matches.load("m1")
        assert rec is not None
        assert (rec.state, rec.version, rec.last_event, rec.status) == ("S0", 1, 1, "playing")
        assert rec.fields == {"ruleset": "standard"}
        again = await s.matches.create("m1", "X", status="playing")
        assert again.status is CommitStatus.EXISTS
        assert (await s.matches.load("m1")).state == "S0"  # type: ignore[union-attr]
        assert await s.matches.load("nope") is None

    run(redis_url, cluster, body)


def test_commit_writes_everything_at_once(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        result = await s.matches.commit(
            "m1", expected_version=1, state="S1", action_key="0:a1", response=b"resp-1",
            events=[{"kind": "action", "text": "play R7@3"}, {"kind": "action", "text": "draw"}],
            deadline_ms=123_456, fields={"names": "x"},
        )
        assert (result.status, result.version, result.last_event) == (CommitStatus.OK, 2, 3)
        rec = await s.matches.load("m1")
        assert rec is not None
        assert (rec.state, rec.version, rec.last_event, rec.deadline_ms) == ("S1", 2, 3, 123_456)
        assert rec.fields["names"] == "x"
        page = await s.events.events_after("m1", 0)
        assert [e.number for e in page.events] == [1, 2, 3]
        assert page.events[1].fields == {"kind": "action", "text": "play R7@3"}
        assert page.complete and page.last_event == 3
        assert await s.matches.stored_response("m1", "0:a1") == b"resp-1"
        assert await s.clocks.due(200_000) == [("m1", 123_456)]
        assert await s.clocks.due(100_000) == []

    run(redis_url, cluster, body)


def test_stale_version_changes_nothing(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        first = await s.matches.commit("m1", expected_version=1, state="S1")
        assert first.status is CommitStatus.OK
        lost = await s.matches.commit(
            "m1", expected_version=1, state="LOST", action_key="0:b", response=b"r",
            events=[{"kind": "x"}], deadline_ms=5,
        )
        assert (lost.status, lost.version) == (CommitStatus.CONFLICT, 2)
        rec = await s.matches.load("m1")
        assert rec is not None and (rec.state, rec.version, rec.last_event) == ("S1", 2, 1)
        assert await s.matches.stored_response("m1", "0:b") is None
        # On a cluster the index is written before the commit (`index_no_later`), early
        # at worst: the sweeper drops an entry whose match has no running clock.
        assert await s.clocks.due(10) == ([("m1", 5)] if cluster else [])
        await Sweeper(s, Matches(s), 3600).sweep_once()
        assert await s.clocks.due(10) == []

    run(redis_url, cluster, body)


def test_race_exactly_one_commit_wins(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        results = await asyncio.gather(*(
            s.matches.commit("m1", expected_version=1, state=f"S{i}", action_key=f"0:{i}",
                     response=str(i).encode(), events=[{"n": str(i)}])
            for i in range(20)
        ))
        winners = [i for i, r in enumerate(results) if r.status is CommitStatus.OK]
        assert len(winners) == 1
        losers = [r for r in results if r.status is not CommitStatus.OK]
        assert all(r.status is CommitStatus.CONFLICT for r in losers)
        rec = await s.matches.load("m1")
        assert rec is not None and rec.state == f"S{winners[0]}" and rec.version == 2
        page = await s.events.events_after("m1", 1)
        assert [e.fields for e in page.events] == [{"n": str(winners[0])}]

    run(redis_url, cluster, body)


def test_duplicate_action_returns_original_response_once(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        first = await s.matches.commit("m1", expected_version=1, state="S1", action_key="0:k",
                               response=b"original", events=[{"a": "1"}])
        assert first.status is CommitStatus.OK
        # Retried with the same (now stale) version and a different payload.
        again = await s.matches.commit("m1", expected_version=1, state="OTHER", action_key="0:k",
                               response=b"second", events=[{"a": "2"}])
        assert (again.status, again.response) == (CommitStatus.DUPLICATE, b"original")
        rec = await s.matches.load("m1")
        assert rec is not None and (rec.state, rec.version, rec.last_event) == ("S1", 2, 2)

    run(redis_url, cluster, body)


def test_concurrent_duplicates_apply_once(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        results = await asyncio.gather(*(
            s.matches.commit("m1", expected_version=1, state="S1", action_key="0:same",
                     response=b"R", events=[{"a": "1"}]) for _ in range(10)
        ))
        statuses = sorted(r.status.value for r in results)
        assert statuses.count("OK") == 1 and statuses.count("DUPLICATE") == 9
        assert all(r.response == b"R" for r in results if r.status is CommitStatus.DUPLICATE)
        assert (await s.events.events_after("m1", 0)).last_event == 2

    run(redis_url, cluster, body)


def test_finished_match_expires_after_retention(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        await s.lobby.add_open("m1", 1, "standard", 900)
        assert await s.matches.ttl("m1") == -1  # idle_ttl 0: live matches never expire
        result = await s.matches.commit("m1", expected_version=1, state="END", status="finished",
                                deadline_ms=0, events=[{"kind": "game_over"}], finished=True)
        assert result.status is CommitStatus.OK
        assert 0 < await s.matches.ttl("m1") <= 1
        assert await s.lobby.list_open(10) == []
        await asyncio.sleep(1.3)
        assert await s.matches.load("m1") is None
        assert await s.matches.existing(["m1", "m2"]) == set()
        assert (await s.events.events_after("m1", 0)).events == []
        assert await s.matches.seat_of("m1.a") is None

    run(redis_url, cluster, body, retention_s=1, idle_ttl_s=0)


def test_idle_ttl_is_refreshed_by_commits(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        assert 50 < await s.matches.ttl("m1") <= 100
        await s.redis.expire(match_key("m1", "m"), 5)
        await s.matches.commit("m1", expected_version=1, state="S1")
        assert await s.matches.ttl("m1") > 50

    run(redis_url, cluster, body, idle_ttl_s=100)


def test_seat_tokens_are_stored_hashed(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        token = st.new_seat_token("m1")
        assert token.startswith("m1.") and len(token) > 40
        await s.matches.create("m1", "S0", status="waiting", seats={1: st.hash_token(token)})
        assert await s.matches.seat_of(token) == ("m1", 1)
        assert await s.matches.seat_of(token + "x") is None
        assert await s.matches.seat_of("garbage") is None
        assert await s.matches.seat_of("bad{id}.x") is None
        stored = await s.redis.hgetall(match_key("m1", "seats"))
        assert not any(token.encode() in k or token.encode() in v for k, v in stored.items())
        assert await s.matches.taken_seats("m1") == {1}

    run(redis_url, cluster, body)


def test_claim_seat_is_exclusive(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await s.matches.create("m1", "W", status="waiting", seats={0: "h0"})
        a, b = await asyncio.gather(
            s.matches.commit("m1", expected_version=1, state="P", claim_seat=(1, "ha"),
                             status="playing"),
            s.matches.commit("m1", expected_version=1, state="P", claim_seat=(1, "hb"),
                             status="playing"),
        )
        assert sorted([a.status.value, b.status.value]) == ["CONFLICT", "OK"]
        taken = await s.matches.commit("m1", expected_version=2, state="Q", claim_seat=(1, "hc"))
        assert taken.status is CommitStatus.SEAT_TAKEN
        assert await s.matches.taken_seats("m1") == {0, 1}
        assert (await s.matches.load("m1")).version == 2  # type: ignore[union-attr]

    run(redis_url, cluster, body)


def test_events_after_detects_trimmed_history(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        await s.matches.commit("m1", expected_version=1, state="S", events=[{"n": "2"}, {"n": "3"}])
        assert (await s.events.events_after("m1", 1)).complete
        assert (await s.events.events_after("m1", 3)) == st.EventPage([], True, 3)
        await s.redis.xtrim(match_key("m1", "ev"), maxlen=1, approximate=False)
        page = await s.events.events_after("m1", 0)
        assert not page.complete and [e.number for e in page.events] == [3]
        assert (await s.events.events_after("m1", 2)).complete

    run(redis_url, cluster, body)


def test_writes_with_events_announce_their_match(redis_url: str, cluster: bool) -> None:
    """The commit script publishes the id of every match whose stream grew (the event
    reader reads only those), and the reader then reads just that stream's new events."""
    async def body(s: Storage) -> None:
        async with s.events.announcements() as announcements:
            assert await announcements.moved(3) is None  # subscribed: read everything once
            await _new(s, "m1")
            await _new(s, "m2")
            await s.matches.commit("m2", expected_version=1, state="S",
                                   events=[{"text": "play R1@1"}])
            moved: set[str] = set()
            while moved != {"m1", "m2"}:
                got = await announcements.moved(3)
                assert got, f"no announcement within 3 s after {sorted(moved)}"
                moved |= got
            while await announcements.moved(0.2):  # the rest of these writes'
                pass
            await s.matches.commit("m1", expected_version=1, state="S")  # no event
            assert await announcements.moved(0.3) == set(), "a write without events is silent"
        new = await s.events.read_new_events({"m1": 1, "m2": 1})
        assert new == {"m2": [st.StoredEvent(2, {"text": "play R1@1"})]}

    run(redis_url, cluster, body)


def test_clock_index_follows_commits(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s)
        await s.matches.commit("m1", expected_version=1, state="S", deadline_ms=1000)
        assert await s.clocks.due(1000) == [("m1", 1000)]
        await s.matches.commit("m1", expected_version=2, state="S", deadline_ms=5000)
        assert await s.clocks.due(1000) == []
        await s.matches.commit("m1", expected_version=3, state="S")  # None keeps the deadline
        assert (await s.matches.load("m1")).deadline_ms == 5000  # type: ignore[union-attr]
        await s.matches.commit("m1", expected_version=4, state="S", deadline_ms=0)
        assert await s.clocks.due(10**15) == []

    run(redis_url, cluster, body)


def test_lobby_and_invites(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        for i in range(5):
            await s.lobby.add_open(f"m{i}", 100 + i, "basic" if i == 2 else "standard", 900)
        assert [m for m, _ in await s.lobby.list_open(2)] == ["m4", "m3"]
        assert [m for m, _ in await s.lobby.list_open(2, (103, "m3"))] == ["m2", "m1"]
        assert [m for m, _ in await s.lobby.list_open(5, None, "basic")] == ["m2"]
        await s.lobby.remove_open(["m4"], ["standard"])
        assert [m for m, _ in await s.lobby.list_open(1)] == ["m3"]
        assert [m for m, _ in await s.lobby.list_open(1, None, "standard")] == ["m3"]
        assert await s.lobby.set_invite("CODE1", "m1", 60)
        assert not await s.lobby.set_invite("CODE1", "m2", 60)
        assert await s.lobby.resolve_invite("CODE1") == "m1"
        assert await s.lobby.resolve_invite("{x}") is None
        await s.lobby.delete_invite("CODE1")
        assert await s.lobby.resolve_invite("CODE1") is None

    run(redis_url, cluster, body)


def test_ai_requests_through_consumer_group(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await s.ai.ensure_group()
        await s.ai.ensure_group()  # idempotent
        request_id = await s.ai.request("m1", 1, 4, owner="203.0.113.4")
        got = await s.ai.read("w1", block_ms=1000)
        assert got == [(request_id, {"match": "m1", "seat": "1", "level": "4",
                                     "owner": "203.0.113.4"})]
        assert await s.ai.read("w2", block_ms=100) == []  # delivered once per group
        await s.ai.ack(request_id)
        pending = await s.redis.xpending(REQUESTS_KEY, GROUP)
        assert pending["pending"] == 0

    run(redis_url, cluster, body)


def test_ai_consumers_gone_silent_with_nothing_held_leave_the_group(redis_url: str,
                                                                    cluster: bool) -> None:
    """Soak audit: every worker process reads under a name of its own, and the dead
    ones' names stayed in the group for good."""
    async def body(s: Storage) -> None:
        await s.ai.ensure_group()
        for match_id in ("m1", "m2"):
            await s.ai.request(match_id, 1, 3)
        dead = await s.ai.read("dead", count=1, block_ms=1000)
        await s.ai.ack(dead[0][0])  # its match is done: it holds nothing
        assert await s.ai.read("busy", count=1, block_ms=1000)  # holds its request
        await s.ai.read("live", block_ms=10)  # a worker reading now and then
        await s.ai.read("me", block_ms=10)
        assert await s.ai.forget_gone("me", 10_000) == 0  # none silent for 10 s yet
        await asyncio.sleep(1.0)
        await s.ai.read("live", block_ms=10)
        assert await s.ai.forget_gone("me", 800) == 1
        left = await s.redis.xinfo_consumers(REQUESTS_KEY, GROUP)
        assert sorted(c["name"].decode() for c in left) == ["busy", "live", "me"]
        assert (await s.redis.xpending(REQUESTS_KEY, GROUP))["pending"] == 1

    run(redis_url, cluster, body)


def test_ai_places_of_a_client_are_checked_and_counted_together(redis_url: str,
                                                                cluster: bool) -> None:
    async def body(s: Storage) -> None:
        client = "2001:db8::{7}"  # any text: the key holds its hash
        held = await asyncio.gather(*(s.lobby.hold_place("ai", client, f"m{i}", 3)
                                      for i in range(8)))
        assert sum(held) == 3
        places = await s.lobby.places_of("ai", client)
        assert sorted(places) == sorted(f"m{i}" for i, ok in enumerate(held) if ok)
        await s.lobby.free_places("ai", client, places[0])
        await s.lobby.free_stale_places("ai", client, st.now_ms() - 60_000, places[1])
        assert await s.lobby.places_of("ai", client) == places[1:]  # taken a moment ago
        assert await s.lobby.hold_place("ai", client, "m9", 3)
        assert not await s.lobby.hold_place("ai", client, "m10", 3)

    run(redis_url, cluster, body)


def test_ids_cannot_escape_their_keys() -> None:
    for bad in ["", "a}b", "a{b", "a:b", "a b", "x" * 65]:
        with pytest.raises(ValueError):
            match_key(bad, "m")
    assert match_key("abc", "ev") == "bl:{abc}:ev"
    assert st.check_id(st.new_match_id())


def test_new_match_ids_are_letters_and_digits() -> None:
    """No "-" or "_": an id starting with "-" is read as an option by the command line
    (`battleline review -x...` failed about one time in 64)."""
    ids = {st.new_match_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(re.fullmatch(r"[A-Za-z0-9]{17}", i) for i in ids)


def test_live_count_follows_create_and_finish(redis_url: str, cluster: bool) -> None:
    async def body(s: Storage) -> None:
        await _new(s, "m1")
        await _new(s, "m2")
        assert await s.matches.live_count() == 2
        await s.matches.commit("m1", expected_version=1, state="E", finished=True)
        assert await s.matches.live_count() == 1

    run(redis_url, cluster, body)


def test_live_count_forgets_a_match_that_expired_unjoined(redis_url: str, cluster: bool,
                                                          ) -> None:
    """An OPEN match nobody joins expires in the lobby's minutes; its entry used to stay
    counted as live for the 30 days of the idle TTL (seventeenth audit: 5 matches
    expired, the gauge went from 60 to 65). Joining gives the match the idle TTL."""
    async def body(s: Storage) -> None:
        for match_id in ("open", "joined"):
            created = await s.matches.create(match_id, "S0", status="waiting", ttl_s=1)
            assert created.status is CommitStatus.OK
        await s.matches.commit("joined", expected_version=1, state="P",
                               claim_seat=(1, "h"), status="playing")
        await _new(s, "never")  # the idle TTL from its start
        assert await s.matches.live_count() == 3
        await asyncio.sleep(1.2)
        assert await s.matches.live_count() == 2
        assert await s.matches.existing(["open", "joined"]) == {"joined"}

    run(redis_url, cluster, body)


def test_load_for_action_is_one_command(redis_url: str, cluster: bool) -> None:
    """The start of every action: the stored answer of a repeated key, else the match."""

    async def body(s: Storage) -> None:
        assert await s.matches.load_for_action("nope", "a:0:x") == (None, None)
        await _new(s)
        record, prior = await s.matches.load_for_action("m1", "a:0:x")
        assert prior is None and record is not None and record.version == 1
        assert record == await s.matches.load("m1")
        result = await s.matches.commit("m1", expected_version=1, state="s2", action_key="a:0:x",
                                response=b"\x00answer\xff")
        assert result.status is CommitStatus.OK
        assert await s.matches.load_for_action("m1", "a:0:x") == (None, b"\x00answer\xff")
        record, prior = await s.matches.load_for_action("m1", "a:0:y")
        assert prior is None and record is not None and record.state == "s2"

    run(redis_url, cluster, body)


def test_the_store_clock_takes_the_stores_time_on_a_cluster_too(redis_url: str,
                                                                cluster: bool) -> None:
    async def body(s: Storage) -> None:
        clock = StoreClock()
        await clock.sync(s.redis)
        assert abs(clock.now_ms() - time.time() * 1000) < 1000  # Redis runs on this machine

    run(redis_url, cluster, body)
