"""`battleline ai`: the hosted-AI service (worker processes, optionally the AiService RPC)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer

from .signals import stop_on_signals


def ai(
    engine: Annotated[str, typer.Option(envvar="BATTLELINE_ENGINE", help="Engine HOST:PORT.")] = (
        "127.0.0.1:50051"
    ),
    redis_url: Annotated[str, typer.Option(
        envvar="REDIS_URL", help="The engine's Redis (seat requests come from there)."
    )] = "redis://127.0.0.1:6379/0",
    workers: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_WORKERS", min=0, help="Worker processes.")] = 1,
    concurrency: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_CONCURRENCY", min=1, help="Matches per worker at once.")] = 16,
    search_processes: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_SEARCH_PROCESSES", min=1,
        help="Search processes per worker (and for the RPC).")] = 1,
    claim_idle: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_CLAIM_IDLE",
        help="Seconds a request may stay silent before another worker takes it over.")] = 30.0,
    move_cap: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_MOVE_CAP", help="Longest think per move, seconds.")] = 5.0,
    port: Annotated[int | None, typer.Option(
        envvar="BATTLELINE_AI_PORT", help="Serve the AiService RPC on this port (0: any).")] = None,
    host: Annotated[str, typer.Option(help="Address for --port.")] = "127.0.0.1",
    log_level: Annotated[str, typer.Option(envvar="BATTLELINE_LOG_LEVEL")] = "info",
) -> None:
    """Play hosted-AI seats of an engine until SIGINT/SIGTERM.

    Workers sharing the secret in BATTLELINE_AI_SECRET can take over each
    other's matches; without it one is made up for this run's workers. Every
    option also reads an environment variable, so `battleline serve` (which
    starts this command) passes them on.
    """
    from battleline_ai.service import ServiceConfig, run_service

    logging.basicConfig(level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = ServiceConfig(engine, redis_url, workers, concurrency, search_processes,
                           claim_idle, move_cap, host, port)

    async def main() -> None:
        await run_service(config, stop_on_signals())

    asyncio.run(main())
