"""Run the web gateway on the current event loop, next to the engine or on its own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import uvicorn

from .bridge import EngineBridge, Upstream
from .site import WebApp


class _QuietSignals(uvicorn.Server):
    """uvicorn without its own SIGINT/SIGTERM handlers: the host process owns shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class WebGateway:
    """The web page and the Connect/gRPC-Web bridge to the engine at `engine_address`."""

    def __init__(self, engine_address: str, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.upstream = Upstream(engine_address)
        config = uvicorn.Config(WebApp(EngineBridge(self.upstream)), host=host, port=port,
                                lifespan="off", log_level="warning", access_log=False,
                                timeout_graceful_shutdown=3)  # a bound, past our own grace
        self._server = _QuietSignals(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen; returns once the port is bound (raises if it cannot be)."""
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():  # uvicorn exits (SystemExit) when it cannot bind
                config = self._server.config
                raise OSError(f"web gateway could not listen on {config.host}:{config.port}")
            await asyncio.sleep(0.02)

    @property
    def url(self) -> str:
        """The page's address (with the real port when started on port 0)."""
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/"

    async def stop(self, grace_s: float = 1.0) -> None:
        """Take no new requests, give running calls `grace_s`, then cut the rest
        (watch streams end with UNAVAILABLE, so browsers reconnect elsewhere)."""
        self._server.should_exit = True
        await self.upstream.close(grace_s)
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, SystemExit):
                await self._task
