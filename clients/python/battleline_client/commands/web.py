"""`battleline web`: the web page and Connect/gRPC-Web bridge for an engine running elsewhere."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from .signals import stop_on_signals


def web(
    engine: Annotated[str, typer.Option(
        envvar="BATTLELINE_ENGINE", help="The engine's gRPC address (host:port)."
    )] = "127.0.0.1:50051",
    port: Annotated[int, typer.Option(envvar="BATTLELINE_WEB_PORT", help="HTTP port, 0: any.")] = (
        8080
    ),
    host: Annotated[str, typer.Option(envvar="BATTLELINE_HOST", help="Address to bind.")] = (
        "127.0.0.1"
    ),
) -> None:
    """Serve the web page and the engine's services to browsers until SIGINT/SIGTERM.

    `battleline serve` already does this next to its engine; run this on its
    own to scale the web front apart from the engines (see deploy/).
    """
    asyncio.run(_run(engine, host, port))


async def _run(engine: str, host: str, port: int) -> None:
    from battleline_gateway.server import WebGateway

    gateway = WebGateway(engine, host, port)
    await gateway.start()
    print(f"battleline web page at {gateway.url} (engine {engine})", flush=True)
    stop = stop_on_signals()
    try:
        await stop.wait()
    finally:
        await gateway.stop()
