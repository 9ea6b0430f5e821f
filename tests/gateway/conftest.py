"""Gateway fixtures: the engine fixtures (real Redis, real gRPC server), plus a web
gateway on its own event loop thread in front of that engine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from battleline_gateway.server import WebGateway
from tests.engine.conftest import engine, redis_server, redis_url
from tests.engine.harness import Engine

__all__ = ["GatewayThread", "engine", "gateway", "redis_server", "redis_url"]

T = TypeVar("T")


class GatewayThread:
    """A started WebGateway on an event loop of its own, driven from sync test code."""

    def __init__(self, engine_address: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def started() -> WebGateway:
            web = WebGateway(engine_address, port=0)
            await web.start()
            return web

        self.web = self._call(started())
        self.url = self.web.url

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self._call(self.web.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def gateway(engine: Engine) -> Iterator[str]:
    """The URL of a web gateway (page and bridge) in front of `engine`."""
    running = GatewayThread(engine.address)
    yield running.url
    running.stop()
