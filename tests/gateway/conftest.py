"""Gateway fixtures: the engine fixtures (real Redis, real gRPC server), plus a web
gateway on its own event loop thread in front of that engine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from battleline_gateway.server import WebGateway
from tests.engine.conftest import engine, redis_server, redis_url
from tests.engine.harness import Engine

__all__ = ["engine", "gateway", "redis_server", "redis_url"]


@pytest.fixture
def gateway(engine: Engine) -> Iterator[str]:
    """The URL of a web gateway (page and bridge) in front of `engine`."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def call(coro):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)

    async def make() -> WebGateway:
        return WebGateway(engine.address, port=0)

    web = call(make())
    call(web.start())
    yield web.url
    call(web.stop())
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
