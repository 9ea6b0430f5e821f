"""An engine in this process, for tests, benchmarks and examples: `LocalService`.

It runs the real engine (the same servicers `battleline serve` hosts) on an
event-loop thread, backed by a given Redis URL or an embedded redis-server under
a temporary directory, without the per-peer abuse limits of a public server
(`open_limits`). The `battleline` command starts `battleline serve` as a child
process instead (battleline_client.hosting), which needs nothing of this module.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from battleline_engine.ratelimit import Rate
from battleline_engine.redis_server import EmbeddedRedis
from battleline_engine.runtime import EngineConfig
from battleline_engine.server import EngineServer, ServerConfig, start_server
from battleline_engine.storage import Storage
from battleline_engine.wiring import default_services

UNLIMITED = Rate(1e6, 1e6)


def open_limits(config: EngineConfig | None = None) -> EngineConfig:
    """``config`` (default: the defaults) without the per-peer abuse limits: a private
    engine serves one person or one load test, and a public server's limits would only
    throttle it."""
    return dataclasses.replace(config or EngineConfig(), create_rate=UNLIMITED,
                               action_rate=UNLIMITED, list_rate=UNLIMITED, record_rate=UNLIMITED,
                               review_rate=UNLIMITED, hint_rate=UNLIMITED,
                               token_guess_rate=UNLIMITED, call_rate=UNLIMITED,
                               ai_matches_per_client=1_000_000, streams_per_client=1_000_000,
                               open_matches_per_client=1_000_000)


class LocalService:
    """An engine on its own loop thread; `start()` returns the address to dial.
    ``config`` defaults to `open_limits()`."""

    def __init__(self, redis_url: str | None = None, *, port: int = 0,
                 config: EngineConfig | None = None, data_dir: Path | None = None) -> None:
        self.redis_url = redis_url
        self.port = port
        self.config = config
        self.data_dir = data_dir
        self._tmp: str | None = None
        self._redis: EmbeddedRedis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: EngineServer | None = None
        self._storage: Storage | None = None
        self.address = ""

    def _run(self, coro: Any) -> Any:
        assert self._loop is not None
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(60)

    async def _start(self, url: str) -> EngineServer:
        self._storage = Storage.from_url(url)
        services = default_services(self._storage, self.config or open_limits())
        return await start_server(ServerConfig(port=self.port, drain_s=0.0, grace_s=1.0),
                                  self._storage, services)

    def start(self) -> str:
        """Start Redis (unless given) and the engine; returns host:port."""
        url = self.redis_url
        if url is None:
            if self.data_dir is None:
                self._tmp = tempfile.mkdtemp(prefix="battleline-local-")
            self._redis = EmbeddedRedis(self.data_dir or Path(self._tmp or "."))
            url = self._redis.start()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="local-engine",
                                        daemon=True)
        self._thread.start()
        self._server = self._run(self._start(url))
        self.address = self._server.address
        return self.address

    def stop(self) -> None:
        """Stop the engine, then Redis; removes a temporary data directory."""
        if self._server is not None:
            self._run(self._server.stop(0))
            self._server = None
        if self._storage is not None:
            self._run(self._storage.close())
            self._storage = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10)
            self._loop = None
        if self._redis is not None:
            self._redis.stop()
            self._redis = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> LocalService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
