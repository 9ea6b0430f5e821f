"""`battleline ai`: the hosted-AI service (worker processes, optionally the AiService RPC)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer

from battleline_client.port_owner import unsafe_socket

from .listening import one_line_when_cannot_listen
from .options import (
    LogFormat,
    LogFormatOption,
    LogLevel,
    LogLevelOption,
    RedisClusterOption,
    RedisOwnerOption,
    bindable_host,
    checked_redis_url,
    checked_secret,
    cluster_url,
    given_redis_owner,
    log_args,
)
from .signals import stop_on_signals


def ai(
    ctx: typer.Context,
    engine: Annotated[str, typer.Option(envvar="BATTLELINE_ENGINE", help="Engine HOST:PORT.")] = (
        "127.0.0.1:50051"
    ),
    redis_url: Annotated[str, typer.Option(
        envvar="REDIS_URL", help="The engine's Redis (seat requests come from there)."
    )] = "redis://127.0.0.1:6379/0",
    redis_cluster: RedisClusterOption = False,
    redis_owner: RedisOwnerOption = None,
    workers: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_WORKERS", min=0, help="Worker processes.")] = 1,
    concurrency: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_CONCURRENCY", min=1, help="Matches per worker at once.")] = 512,
    search_processes: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_SEARCH_PROCESSES", min=1,
        help="Search processes per worker (and for the RPC).")] = 1,
    claim_idle: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_CLAIM_IDLE", min=1.0,
        help="Seconds a request may stay silent before another worker takes it over.")] = 30.0,
    move_cap: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_MOVE_CAP", min=0.1, help="Longest think per move, seconds.")] = 5.0,
    think: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_THINK", min=0.0, max=60.0,
        help="Seconds every play of the AI takes, searched or not, so its timing tells "
             "nothing of its hand (sooner only when its clock leaves less; 0: as soon as "
             "chosen).")] = 1.0,
    port: Annotated[int | None, typer.Option(
        envvar="BATTLELINE_AI_PORT", min=0, max=65535,
        help="Serve the AiService RPC on this port (0: any).")] = None,
    host: Annotated[str, typer.Option(
        envvar="BATTLELINE_AI_HOST", callback=bindable_host, help="Address for --port."
    )] = "127.0.0.1",
    socket: Annotated[Path | None, typer.Option(
        envvar="BATTLELINE_AI_SOCKET",
        help="Serve the AiService RPC on this Unix socket instead (in a directory only "
             "this user may write).")] = None,
    log_level: LogLevelOption = LogLevel.INFO,
    log_format: LogFormatOption = LogFormat.JSON,
) -> None:
    """Play hosted-AI seats of an engine until SIGINT/SIGTERM.

    The AI's key comes from BATTLELINE_AI_KEY (the engines get the same one): it is
    the hosted AI's one credential, with which any worker joins and plays the seats
    reserved for the AI, and the only one AiService answers. Every option also reads
    an environment variable, so `battleline serve` (which starts this command) passes
    them on; pass the Redis URL by REDIS_URL rather than --redis-url when it carries
    a password (command lines are readable by every local user).
    """
    from battleline_ai.service import ServiceConfig, run_service
    from battleline_ai.worker import KEY_ENV
    from battleline_engine import logs
    from battleline_engine.listening import host_port

    checked_redis_url(ctx, "--redis-url", redis_url)
    redis_url = cluster_url(redis_url, redis_cluster) or redis_url
    owner = given_redis_owner(redis_owner)  # else decided by run_service, once
    key = checked_secret(KEY_ENV, os.environ.get(KEY_ENV, ""))
    if not key:
        raise typer.BadParameter(f"set {KEY_ENV} (at least 16 characters; the engines need "
                                 "the same one)")
    if socket is not None and port is not None:
        raise typer.BadParameter("--socket or --port, not both")
    unsafe = unsafe_socket(socket) if socket is not None else None
    if unsafe is not None:
        raise typer.BadParameter(f"--socket: {unsafe}")
    logs.configure(log_level, log_format)
    rpc_address = (f"unix:{socket}" if socket is not None
                   else None if port is None else host_port(host, port))
    config = ServiceConfig(engine=engine, redis_url=redis_url, key=key, workers=workers,
                           concurrency=concurrency, search_processes=search_processes,
                           claim_idle_s=claim_idle, move_cap_s=move_cap, think_s=think,
                           rpc_address=rpc_address, redis_owner=owner,
                           worker_log=tuple(log_args(log_level, log_format)))

    async def main() -> None:
        await run_service(config, stop_on_signals())

    with one_line_when_cannot_listen("ai", "--port or --socket"):
        asyncio.run(main())
