"""A throwaway local service for `battleline play` and `loadtest` when no --target is given.

`LocalService` runs the real engine (the same servicers `battleline serve`
hosts) on an event-loop thread, backed by a given Redis URL or an embedded
redis-server under a temporary directory. `python -m battleline_client.local`
runs one in its own process (the load tester uses that, so the engine does
not share a core and a GIL with the load it is measuring), printing
"listening on HOST:PORT" and stopping on SIGTERM (or, with --stop-on-stdin-close,
when its parent closes its stdin).

The engine is the server's (battleline-online): it is imported when a service
starts, so the client distribution alone imports this module and says what is
missing instead of failing at import.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .hosting import require_server
from .processes import stop_processes

if TYPE_CHECKING:
    from battleline_engine.redis_server import EmbeddedRedis
    from battleline_engine.runtime import EngineConfig
    from battleline_engine.server import EngineServer
    from battleline_engine.storage import Storage


def open_limits() -> EngineConfig:
    """A local service serves one person or one load test: the per-peer abuse limits
    of a public server would only throttle it."""
    from battleline_engine.ratelimit import Rate
    from battleline_engine.runtime import EngineConfig

    return EngineConfig(create_rate=Rate(1e6, 1e6), action_rate=Rate(1e6, 1e6),
                        list_rate=Rate(1e6, 1e6), ai_matches_per_client=1_000_000,
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
        from battleline_engine.server import ServerConfig, start_server
        from battleline_engine.storage import Storage
        from battleline_engine.wiring import default_services

        self._storage = Storage.from_url(url)
        services = default_services(self._storage, self.config or open_limits())
        return await start_server(ServerConfig(port=self.port, drain_s=0.0, grace_s=1.0),
                                  self._storage, services)

    def start(self) -> str:
        """Start Redis (unless given) and the engine; returns host:port."""
        require_server("a local engine")
        from battleline_engine.redis_server import EmbeddedRedis

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


class ChildService:
    """`python -m battleline_client.local` as a child process (its own core and GIL)."""

    def __init__(self, redis_url: str | None = None) -> None:
        self.redis_url = redis_url
        self.process: subprocess.Popen[str] | None = None
        self.address = ""

    def start(self, timeout_s: float = 60) -> str:
        require_server("a local engine")
        command = [sys.executable, "-m", "battleline_client.local", "--stop-on-stdin-close"]
        if self.redis_url:
            command += ["--redis-url", self.redis_url]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until the engine is up (or died)
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"local service did not start: {line!r}")
        self.address = line.split()[-1]
        return self.address

    def stop(self) -> None:
        if self.process is None:
            return
        stop_processes(self.process, timeout_s=20)
        self.process = None

    def __enter__(self) -> ChildService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Run a LocalService until SIGTERM/SIGINT or end of stdin."""
    parser = argparse.ArgumentParser(description="a local Battle Line engine for testing")
    parser.add_argument("--redis-url")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--stop-on-stdin-close", action="store_true",
                        help="stop when stdin closes (a parent process that dies stops us)")
    args = parser.parse_args()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())

    def until_stdin_closes() -> None:  # the parent died or closed our stdin: stop too
        sys.stdin.read()
        done.set()

    if args.stop_on_stdin_close:
        threading.Thread(target=until_stdin_closes, daemon=True).start()
    service = LocalService(args.redis_url, port=args.port)
    print(f"listening on {service.start()}", flush=True)
    try:
        done.wait()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
