"""Gateway fixtures: the engine fixtures (real Redis, real gRPC server), plus a web
gateway on its own event loop thread in front of that engine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from battleline_engine.ratelimit import Rate
from battleline_gateway.limits import WebLimits
from battleline_gateway.server import WebGateway
from tests.engine.harness import Engine, LoopThread

# A bot plays a whole match through the bridge far faster than a browser acts: the
# `gateway` fixture lifts the request rate (test_request_rate.py tests it).
NO_REQUEST_RATE = WebLimits(request_rate=Rate(per_s=1e6, burst=1e6))


class GatewayThread(LoopThread):
    """A started WebGateway on an event loop thread of its own."""

    call_timeout_s = 30.0

    def __init__(self, engine_address: str, **options: Any) -> None:
        super().__init__()

        async def started() -> WebGateway:
            web = WebGateway(engine_address, port=0, **options)
            await web.start()
            return web

        self.web: WebGateway = self.call(started())
        self.url = self.web.url

    def stop(self) -> None:
        self.call(self.web.stop())
        self.end()


@pytest.fixture
def gateway(engine: Engine) -> Iterator[str]:
    """The URL of a web gateway (page and bridge) in front of `engine`."""
    running = GatewayThread(engine.address, limits=NO_REQUEST_RATE)
    yield running.url
    running.stop()
