"""The fault tests' audit has teeth: an acknowledged event removed from the store behind
the engine's back is reported as a loss (and as a gap in the record)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from .load import Driver
from .procs import EngineProcess, RedisNode


@pytest.fixture
def engine(single_redis: RedisNode) -> Iterator[EngineProcess]:
    process = EngineProcess(single_redis.url, extra_env={"BATTLELINE_CREATE_RATE": "1000"})
    try:
        process.start()
        yield process
    finally:
        process.stop()


def test_audit_reports_an_acknowledged_event_that_is_gone(
    single_redis: RedisNode, engine: EngineProcess
) -> None:
    async def main() -> tuple[dict[str, int], dict[str, int]]:
        driver = Driver([engine.address], seed=3)
        try:
            await driver.run(3, 3)
            clean = await driver.audit()
            match_id, events = next(iter(driver.ledger.items()))
            number = events[len(events) // 2][0]
            client = redis.Redis(port=single_redis.port)
            assert client.xdel(f"bl:{{{match_id}}}:ev", f"{number}-0") == 1
            client.close()
            return clean, await driver.audit()
        finally:
            await driver.close()

    clean, tampered = asyncio.run(main())
    assert (clean["losses"], clean["gaps"], clean["unfinished"]) == (0, 0, 0)
    assert tampered["losses"] == 1
    assert tampered["gaps"] == 1
