"""The engine's long-running loops stop when cancelled, even when redis-py swallows the
cancellation (issue #15: `battleline serve` then hung at shutdown until its 35 s bound).

redis-py's asyncio client can lose a cancellation that lands mid-command: the call
returns normally and the task runs on (redis/redis-py#2028, #2551; about one
cancellation in fifteen here). The fault is injected by wrapping the real storage
calls, against a real Redis, so each test hits it every time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from battleline_engine.hub import Hub
from battleline_engine.matches import Matches
from battleline_engine.storage import Storage
from battleline_engine.sweeper import Sweeper
from tests.engine.test_hub import _create


def _swallowing(call: Callable[..., Awaitable[Any]], empty: Any) -> Callable[..., Awaitable[Any]]:
    """`call`, made to lose the first cancellation as redis-py sometimes does."""
    lost = []

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return await call(*args, **kwargs)
        except asyncio.CancelledError:
            if lost:
                raise
            lost.append(True)
            return empty

    return wrapped


async def _stops_within(stop: Awaitable[None], task: asyncio.Task[None] | None) -> None:
    """`stop` ends within 3 s, and the loop's task with it (not cancelled a second time)."""
    assert task is not None
    stopping = asyncio.ensure_future(stop)
    done, _ = await asyncio.wait({stopping}, timeout=3)
    while not task.done():  # clean up (the injected fault loses one cancellation), then fail
        task.cancel()
        await asyncio.wait({task}, timeout=0.5)
    assert done and task.done(), "the loop did not stop when cancelled"


def test_the_clock_sweeper_stops_though_a_redis_call_lost_its_cancellation(
        redis_url: str) -> None:
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        storage.clocks.due = _swallowing(storage.clocks.due, [])  # type: ignore[method-assign]
        sweeper = Sweeper(storage, Matches(storage), interval_s=0.05)
        sweeper.start()
        await asyncio.sleep(0.2)
        await _stops_within(sweeper.stop(), sweeper._task)
        await storage.close()

    asyncio.run(scenario())


def test_the_event_hub_stops_though_a_redis_call_lost_its_cancellation(redis_url: str) -> None:
    async def scenario() -> None:
        storage = Storage.from_url(redis_url)
        storage.events.read_new_events = _swallowing(  # type: ignore[method-assign]
            storage.events.read_new_events, {})
        hub = Hub(storage, gone_check_s=30)
        # A subscriber of a stored match keeps the loops going (the hub lets go of a
        # match it finds gone, and its loops stop with nobody watching).
        await _create(storage, "abcdefghijklmnop")
        await hub.subscribe("abcdefghijklmnop", 0)
        await asyncio.sleep(0.1)
        listener, reader = hub._listener, hub._reader
        await _stops_within(hub.stop(), listener)
        assert reader is not None and reader.done()
        await storage.close()

    asyncio.run(scenario())
