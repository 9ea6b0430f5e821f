"""Health under load: a slow Redis ping or a single failed one must not flip the status."""

from __future__ import annotations

import asyncio
from typing import Any

from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer

from battleline_engine.server import EngineServer, ServerConfig

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class ScriptedRedis:
    """A storage stand-in whose pings follow a script: a delay in seconds, or an error."""

    def __init__(self, script: list[float | Exception]) -> None:
        self.script = list(script)
        self.pings = 0

    async def ping(self) -> bool:
        self.pings += 1
        step = self.script.pop(0) if self.script else 0.0
        if isinstance(step, Exception):
            raise step
        await asyncio.sleep(step)
        return True

    async def live_count(self) -> int:
        return 0


class Recorder(HealthServicer):
    """Keeps every overall status set, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []

    async def set(self, service: str, status: Any) -> None:
        await super().set(service, status)
        if service == "":
            self.seen.append(status)


def _monitor(script: list[float | Exception], config: ServerConfig) -> tuple[list[int], int]:
    """Run the Redis health monitor over the script; the statuses it set and pings made."""

    async def run() -> tuple[list[int], int]:
        redis = ScriptedRedis(script)
        health = Recorder()
        engine = EngineServer(None, 0, health, [], redis, config)  # type: ignore[arg-type]
        task = asyncio.create_task(engine._watch_redis())
        while redis.script:
            await asyncio.sleep(0.01)
        await asyncio.sleep(3 * config.health_interval_s)
        engine._stop_event.set()
        await asyncio.wait_for(task, 5)
        return health.seen, redis.pings

    return asyncio.run(run())


def test_a_ping_slower_than_the_interval_keeps_serving() -> None:
    config = ServerConfig(health_interval_s=0.05, health_ping_timeout_s=1.0)
    seen, _ = _monitor([0.0, 0.3, 0.3, 0.3, 0.0], config)
    assert seen == [SERVING]


def test_not_serving_only_after_consecutive_failures() -> None:
    config = ServerConfig(health_interval_s=0.02, health_ping_timeout_s=0.5,
                          health_failures=3)
    boom = ConnectionError("down")
    seen, _ = _monitor([0.0, boom, boom, 0.0, boom, boom, 0.0], config)
    assert seen == [SERVING], "two failures in a row are not an outage"
    seen, _ = _monitor([0.0, boom, boom, boom, 0.0], config)
    assert seen == [SERVING, NOT_SERVING, SERVING]


def test_timeouts_count_as_failures() -> None:
    config = ServerConfig(health_interval_s=0.02, health_ping_timeout_s=0.05,
                          health_failures=2)
    seen, _ = _monitor([0.0, 0.2, 0.2, 0.0], config)
    assert seen == [SERVING, NOT_SERVING, SERVING]
