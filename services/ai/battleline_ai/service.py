"""`battleline ai`: worker processes (restarted if they die) and, with a port, AiService.

Why processes: each worker's event loop serves many matches, but Python runs
one search per core, so throughput comes from worker processes (and their
search pools), and a crash costs one process, whose requests others reclaim.
Every worker holds the AI's key, so any of them (here or in another `battleline
ai`) can take over another's seat. Secrets reach the workers by environment,
never by command line: /proc/PID/cmdline is readable by every local user.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import subprocess
import sys
from dataclasses import dataclass, field

from battleline_client.processes import (
    dying_with_parent,
    keep_running,
    owner_options,
    stop_processes,
)
from battleline_engine.listener_pin import decided_redis_owner

from .suggest import AiServer
from .worker import KEY_ENV, WorkerConfig

log = logging.getLogger("battleline.ai")


@dataclass(frozen=True)
class ServiceConfig:
    engine: str
    redis_url: str = field(repr=False)  # may carry the Redis password
    key: str = field(repr=False)  # the AI's key (BATTLELINE_AI_KEY)
    workers: int = 1
    concurrency: int = WorkerConfig.concurrency
    search_processes: int = 1
    claim_idle_s: float = 30.0
    move_cap_s: float = 5.0
    think_s: float = WorkerConfig.think_s
    rpc_address: str | None = None  # AiService's `HOST:PORT` or `unix:PATH`; None: none
    redis_owner: int | None = None  # the uid Redis's password may go to; None: decided here
    worker_log: tuple[str, ...] = ()  # the workers' log options: they log as the service does


def worker_command(config: ServiceConfig) -> list[str]:
    """The command line of one worker process (no secret: see `worker_env`)."""
    return [sys.executable, "-m", "battleline_ai.worker", "--engine", config.engine,
            "--concurrency", str(config.concurrency),
            "--search-processes", str(config.search_processes),
            "--claim-idle", str(config.claim_idle_s), "--move-cap", str(config.move_cap_s),
            "--think", str(config.think_s), *config.worker_log,
            *owner_options(config.redis_owner)]


def worker_env(config: ServiceConfig) -> dict[str, str]:
    """The environment of a worker process: ours plus its Redis URL and the AI's key."""
    return {**os.environ, "REDIS_URL": config.redis_url, KEY_ENV: config.key}


async def run_service(config: ServiceConfig, stop: asyncio.Event) -> None:
    """Run until `stop` is set: keep `workers` worker processes alive, serve AiService."""
    server: AiServer | None = None
    if config.rpc_address is not None:
        server = AiServer(config.rpc_address, config.key, config.search_processes)
        print(f"battleline ai service listening on {await server.start()}", flush=True)

    children: list[subprocess.Popen[bytes]] = []
    keeping: list[asyncio.Task[None]] = []
    try:
        owner = config.redis_owner
        if owner is None:
            owner = await decided_redis_owner(config.redis_url, stop, "the workers")
        decided = dataclasses.replace(config, redis_owner=owner)
        if stop.is_set():
            return
        print(f"battleline ai: {config.workers} worker(s) for engine {config.engine}",
              flush=True)

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(dying_with_parent(worker_command(decided)),
                                    env=worker_env(decided))

        async def restart(i: int) -> None:
            children[i] = start()

        children.extend(start() for _ in range(config.workers))
        keeping = [asyncio.create_task(keep_running(
            f"ai worker {i}", functools.partial(children.__getitem__, i),
            functools.partial(restart, i), log)) for i in range(config.workers)]
        await stop.wait()
    finally:
        for task in keeping:
            task.cancel()
        stop_processes(*children)
        if server is not None:
            await server.stop()
