"""`battleline web`: the web page and Connect/gRPC-Web bridge for an engine running elsewhere."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from battleline_gateway.limits import WebLimits

from .listening import one_line_when_cannot_listen
from .options import (
    WEB_LIMITS,
    HostOption,
    LogFormat,
    LogFormatOption,
    LogLevel,
    LogLevelOption,
    WebMaxConnectionsOption,
    WebMaxConnectionsPerAddressOption,
    WebRequestRateOption,
    WebRequestTimeoutOption,
    web_limits,
)
from .serve import gateway_secret, networks
from .signals import stop_on_signals


def web(
    engine: Annotated[str, typer.Option(
        envvar="BATTLELINE_ENGINE", help="The engine's gRPC address (host:port)."
    )] = "127.0.0.1:50051",
    port: Annotated[int, typer.Option(envvar="BATTLELINE_WEB_PORT", min=0, max=65535,
                                      help="HTTP port, 0: any.")] = (
        8080
    ),
    host: HostOption = "127.0.0.1",
    trusted_proxy: Annotated[list[str] | None, typer.Option(
        envvar="BATTLELINE_TRUSTED_PROXY",
        help="A network (CIDR) of a proxy in front of this gateway whose x-forwarded-for "
             "is believed; repeatable (BATTLELINE_TRUSTED_PROXY: separated by spaces). "
             "None by default.",
    )] = None,
    max_connections: WebMaxConnectionsOption = WEB_LIMITS.max_connections,
    max_connections_per_address: WebMaxConnectionsPerAddressOption = (
        WEB_LIMITS.max_connections_per_address
    ),
    request_timeout: WebRequestTimeoutOption = WEB_LIMITS.request_timeout_s,
    request_rate: WebRequestRateOption = WEB_LIMITS.request_rate.per_s,
    log_level: LogLevelOption = LogLevel.INFO,
    log_format: LogFormatOption = LogFormat.JSON,
) -> None:
    """Serve the web page and the engine's services to browsers until SIGINT/SIGTERM.

    `battleline serve` already does this next to its engine; run this on its
    own to scale the web front apart from the engines (see deploy/). Give it the
    engines' BATTLELINE_GATEWAY_SECRET (environment) so they count each browser on
    its own rather than this gateway as one client.
    """
    from battleline_engine import logs

    logs.configure(log_level, log_format)  # repeated warnings of a flood are cut short
    limits = web_limits(max_connections, max_connections_per_address, request_timeout,
                        request_rate)
    with one_line_when_cannot_listen("web", "--port"):
        asyncio.run(_run(engine, host, port, gateway_secret(), networks(trusted_proxy or []),
                         limits))


async def _run(engine: str, host: str, port: int, secret: str,
               trusted_proxies: tuple[str, ...], limits: WebLimits) -> None:
    from battleline_gateway.server import WebGateway

    gateway = WebGateway(engine, host, port, engine_secret=secret,
                         trusted_proxies=trusted_proxies, limits=limits)
    await gateway.start()
    print(f"battleline web page at {gateway.url} (engine {engine})", flush=True)
    stop = stop_on_signals()
    try:
        await stop.wait()
    finally:
        await gateway.stop()
