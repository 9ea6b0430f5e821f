"""The event hub against a real Redis: it reads only the streams that writes announce,
and loses nothing when the announcements are (issue #17)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import redis.asyncio as aioredis

from battleline_engine.errors import Kind, Refusal
from battleline_engine.hub import GONE, Batch, Hub, Subscription
from battleline_engine.storage import CommitStatus, Storage

WATCHED = 300


async def _create(storage: Storage, match_id: str) -> None:
    created = await storage.matches.create(match_id, "S0", status="playing",
                                           events=[{"kind": "created"}])
    assert created.status is CommitStatus.OK


async def _move(storage: Storage, match_id: str, version: int, text: str) -> None:
    done = await storage.matches.commit(match_id, expected_version=version, state="S",
                                        events=[{"text": text}])
    assert done.status is CommitStatus.OK


async def _numbers(queue: asyncio.Queue[Batch], want: int, timeout_s: float) -> list[int]:
    """Event numbers queued within `timeout_s` until `want` have come."""
    got: list[int] = []
    async with asyncio.timeout(timeout_s):
        while len(got) < want:
            got += [e.number for e in await queue.get()]
    return got


def test_watchers_of_many_matches_get_exactly_the_events_of_the_one_that_moves(
        redis_url: str) -> None:
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        hub = Hub(storage, gone_check_s=30)
        read: list[int] = []
        real_read = storage.events.read_new_events

        async def counting(cursors: dict[str, int], *args: int) -> object:
            read.append(len(cursors))
            return await real_read(cursors, *args)

        storage.events.read_new_events = counting  # type: ignore[method-assign, assignment]
        try:
            ids = [f"hub{i}" for i in range(WATCHED)]
            for match_id in ids:
                await _create(storage, match_id)
            queues = {m: await hub.subscribe(m, 1) for m in ids}
            second = await hub.subscribe(ids[7], 1)  # two watchers of one match
            await asyncio.sleep(0.5)  # the first reads (every new match once) are done
            read.clear()
            for n in range(2, 6):
                await _move(storage, ids[7], n - 1, f"move {n}")
            assert await _numbers(queues[ids[7]], 4, 5) == [2, 3, 4, 5]
            assert await _numbers(second, 4, 5) == [2, 3, 4, 5]
            await asyncio.sleep(0.3)
            assert all(q.empty() for m, q in queues.items() if m != ids[7])
            assert queues[ids[7]].empty() and second.empty(), "an event came twice"
            # Each read named the one stream that moved, never the 300 watched.
            assert read and max(read) == 1, read
        finally:
            await hub.stop()
            await storage.close()

    asyncio.run(scenario())


def test_events_announced_while_the_subscription_was_away_still_come(redis_url: str) -> None:
    """Pub/sub keeps nothing for an absent subscriber: when the listener's connection
    comes back, every watched stream is read once."""
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        admin = aioredis.Redis.from_url(redis_url)
        hub = Hub(storage, gone_check_s=30)
        deaf = asyncio.Event()
        real = storage.events.announcements

        def deafened() -> object:  # the announcements context, dropping ids while `deaf`
            context = real()

            class Wrapped:
                async def __aenter__(self) -> object:
                    announcements = await context.__aenter__()
                    moved = announcements.moved

                    async def dropping(timeout_s: float) -> set[str] | None:
                        got = await moved(timeout_s)
                        return set() if deaf.is_set() and got else got

                    announcements.moved = dropping  # type: ignore[method-assign]
                    return announcements

                async def __aexit__(self, *exc: object) -> object:
                    return await context.__aexit__(*exc)

            return Wrapped()

        storage.events.announcements = deafened  # type: ignore[method-assign, assignment]
        try:
            await _create(storage, "lost1")
            await _create(storage, "other")
            queue = await hub.subscribe("lost1", 1)
            await hub.subscribe("other", 1)
            await asyncio.sleep(0.5)
            deaf.set()
            await _move(storage, "lost1", 1, "unheard")
            await asyncio.sleep(0.5)
            assert queue.empty(), "the announcement was dropped: nothing read yet"
            deaf.clear()
            await admin.client_kill_filter(_type="pubsub")  # redis-py subscribes again
            assert await _numbers(queue, 1, 5) == [2]
        finally:
            await hub.stop()
            await admin.aclose()
            await storage.close()

    asyncio.run(scenario())


def test_a_long_backlog_is_read_page_by_page(redis_url: str) -> None:
    """A stream that returned a full page stays dirty until it is read to its end."""
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        hub = Hub(storage, gone_check_s=30)
        try:
            await _create(storage, "long1")
            events = [{"n": str(i)} for i in range(250)]
            done = await storage.matches.commit("long1", expected_version=1, state="S",
                                                events=events)
            assert done.status is CommitStatus.OK
            queue = await hub.subscribe("long1", 1)
            assert await _numbers(queue, 250, 5) == list(range(2, 252))
        finally:
            await hub.stop()
            await storage.close()

    asyncio.run(scenario())



def test_a_viewer_behind_what_the_hub_read_gets_the_events_between_from_redis(
        redis_url: str) -> None:
    """A second viewer whose read of the match is older than the events the hub already
    queued for the first one gets those from Redis, once, then the live ones."""
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        hub = Hub(storage, gone_check_s=30)
        try:
            await _create(storage, "late1")
            first = await hub.subscribe("late1", 1)
            for n in (2, 3):
                await _move(storage, "late1", n - 1, f"move {n}")
            assert await _numbers(first, 2, 5) == [2, 3]
            stale = SimpleNamespace(match_id="late1", finished=False,
                                    record=SimpleNamespace(last_event=1))
            subscription = Subscription(hub, stale)  # type: ignore[arg-type]
            batches = subscription.batches()
            got = [e.number for e in await asyncio.wait_for(anext(batches), 5)]
            assert got == [2, 3] and hub.cursor("late1") == 3
            await _move(storage, "late1", 3, "move 4")
            assert [e.number for e in await asyncio.wait_for(anext(batches), 5)] == [4]
            await batches.aclose()
        finally:
            await hub.stop()
            await storage.close()

    asyncio.run(scenario())


def test_viewers_of_a_match_gone_from_redis_are_told_and_the_others_wait(
        redis_url: str) -> None:
    """An OPEN match nobody joined, or an abandoned one, expires without an event: its
    viewers waited for ever (holding their streams), never hearing it was gone."""
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        admin = aioredis.Redis.from_url(redis_url)
        hub = Hub(storage, gone_check_s=0.2)
        try:
            batches = {}
            for match_id in ("gone1", "kept1"):
                await _create(storage, match_id)
                read = SimpleNamespace(match_id=match_id, finished=False,
                                       record=SimpleNamespace(last_event=1))
                batches[match_id] = Subscription(hub, read).batches()  # type: ignore[arg-type]
            waiting = {m: asyncio.ensure_future(anext(b)) for m, b in batches.items()}
            await asyncio.sleep(0.6)
            assert not any(w.done() for w in waiting.values()), "both are still stored"
            await admin.delete(*await admin.keys("*{gone1}*"))  # as its expiry would
            with pytest.raises(Refusal) as refused:
                await asyncio.wait_for(waiting["gone1"], 5)
            assert refused.value.kind is Kind.NOT_FOUND
            await asyncio.sleep(0.6)
            assert not waiting["kept1"].done(), "a stored match's viewer waits on"
            await _move(storage, "kept1", 1, "move 2")
            assert [e.number for e in await asyncio.wait_for(waiting["kept1"], 5)] == [2]
            assert hub.cursor("gone1") == -1, "the gone match is no longer watched"
            await batches["kept1"].aclose()
        finally:
            await hub.stop()
            await admin.aclose()
            await storage.close()

    asyncio.run(scenario())


def test_a_gone_matchs_unread_stream_leaves_nothing_for_a_later_match_of_its_id(
        redis_url: str) -> None:
    """Re-test of the thirty-fourth audit's shorter id mark: a stream of a match that
    expired, whose client had stopped reading, never took the match's GONE from its queue,
    so the hub kept that match's cursor; a match made again under the id (its secret, once
    the mark is gone) then got no events on that process up to the old cursor. The hub now
    lets go of a gone match's streams and cursor at its check."""
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        admin = aioredis.Redis.from_url(redis_url)
        hub = Hub(storage, gone_check_s=0.2)
        try:
            await _create(storage, "again1")
            for version in range(1, 30):
                await _move(storage, "again1", version, f"move {version + 1}")
            stuck = await hub.subscribe("again1", 30)  # never read again
            await admin.delete(*await admin.keys("*{again1}*"))  # as its expiry would
            async with asyncio.timeout(10):
                while hub.cursor("again1") != -1:
                    await asyncio.sleep(0.1)
            assert stuck.get_nowait() is GONE
            await _create(storage, "again1")
            queue = await hub.subscribe("again1", 1)
            for version in range(1, 5):
                await _move(storage, "again1", version, f"move {version + 1}")
            assert await _numbers(queue, 4, 10) == [2, 3, 4, 5]
            hub.unsubscribe("again1", stuck)  # the stuck stream ends at last: nothing breaks
        finally:
            await hub.stop()
            await admin.aclose()
            await storage.close()

    asyncio.run(scenario())
