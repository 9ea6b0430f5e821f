"""`battleline serve`: run the engine, with an embedded Redis unless one is given."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperOption

from battleline_client.port_owner import unsafe_socket
from battleline_client.processes import (
    dying_with_parent,
    keep_running,
    owner_options,
    stop_processes,
)
from battleline_engine.listening import (
    MAX_CALLS,
    MAX_CONNECTIONS,
    claim_shared_port,
    is_loopback_host,
    port_lock_dirs,
)
from battleline_engine.socket_dirs import private_socket_dir, remove_socket_dir
from battleline_gateway.limits import WebLimits

from .listening import one_line_when_cannot_listen
from .options import (
    WEB_LIMITS,
    HostOption,
    LogFormat,
    LogFormatOption,
    LogLevel,
    LogLevelOption,
    RedisClusterOption,
    RedisOwnerOption,
    WebMaxConnectionsOption,
    WebMaxConnectionsPerAddressOption,
    WebRequestRateOption,
    WebRequestTimeoutOption,
    bindable_host,
    checked_redis_url,
    checked_secret,
    cluster_url,
    given_redis_owner,
    log_args,
    web_limits,
)
from .signals import stop_on_signals

if TYPE_CHECKING:
    from battleline_engine.redis_server import EmbeddedRedis
    from battleline_engine.runtime import EngineConfig

log = logging.getLogger("battleline.serve")
Listeners = list[socket.socket]  # one port's listening sockets (its loopback twin second)
START_TIMEOUT_S = 60.0  # an engine worker restarted and not listening by then is stuck
AI_KEY_ENV = "BATTLELINE_AI_KEY"  # the hosted AI's key (the engine keeps only its hash)
# The secret web gateways present to have their browsers' addresses believed; by
# environment only (a command line is readable by every local user).
GATEWAY_SECRET_ENV = "BATTLELINE_GATEWAY_SECRET"


def serve(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(envvar="BATTLELINE_PORT", min=0, max=65535,
                                      help="gRPC port, 0: any.")] = 50051,
    host: HostOption = "127.0.0.1",
    data_dir: Annotated[Path, typer.Option(
        envvar="BATTLELINE_DATA_DIR",
        help="Where the embedded Redis keeps its data, and the hosted AI's key (ai.key) "
             "when BATTLELINE_AI_KEY is not set."
    )] = Path("data"),
    redis_url: Annotated[str | None, typer.Option(
        envvar="REDIS_URL", help="Use this Redis instead of starting an embedded one."
    )] = None,
    redis_cluster: RedisClusterOption = False,
    redis_owner: RedisOwnerOption = None,
    redis_client: Annotated[str, typer.Option(
        envvar="BATTLELINE_REDIS_CLIENT",
        help="lean: each action's commands on one pipelined connection; redis-py: the pool.",
    )] = "lean",
    redis_batch_ms: Annotated[float, typer.Option(
        envvar="BATTLELINE_REDIS_BATCH_MS", min=0.0,
        help="While commands are in flight, the next batch waits this long at most (0: none).",
    )] = 2.0,
    tls_cert: Annotated[Path | None, typer.Option(help="PEM certificate; enables TLS.")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key for --tls-cert.")] = None,
    metrics_port: Annotated[int, typer.Option(
        envvar="BATTLELINE_METRICS_PORT", min=0, max=65535,
        help="Prometheus /metrics port (0: off)."
    )] = 0,
    metrics_host: Annotated[str | None, typer.Option(
        envvar="BATTLELINE_METRICS_HOST", callback=bindable_host,
        help="Interface of the metrics port (default: --host's). Metrics are for the "
             "scraper: with --host 0.0.0.0, give an internal interface here.",
    )] = None,
    retention: Annotated[int, typer.Option(
        envvar="BATTLELINE_RETENTION_S", min=1, help="Seconds a finished match is kept."
    )] = 7 * 24 * 3600,
    grace: Annotated[float, typer.Option(
        envvar="BATTLELINE_GRACE_S", min=0.0, help="Seconds running calls get on shutdown."
    )] = 5.0,
    clock: Annotated[str, typer.Option(
        envvar="BATTLELINE_CLOCK", help="Default time control: per-move or per-game."
    )] = "per-move",
    clock_s: Annotated[float, typer.Option(
        envvar="BATTLELINE_CLOCK_S", min=1.0, help="Seconds of the default time control."
    )] = 300.0,
    create_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_CREATE_RATE", min=0.001,
        help="Matches created or joined per second per peer."
    )] = 2.0,
    action_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_ACTION_RATE", min=0.001, help="Actions per second per seat."
    )] = 20.0,
    call_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_CALL_RATE", min=0.001,
        help="Calls of every kind per second per client, the hosted AI's excepted "
             "(burst: 4 s of them, at least 10).",
    )] = 100.0,
    record_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_RECORD_RATE", min=0.001,
        help="Records read (GetRecord) per second per client (burst: 4 s of them, at least 1).",
    )] = 5.0,
    list_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_LIST_RATE", min=0.001,
        help="Lobby listings per second per client (burst: 4 s of them, at least 1).",
    )] = 5.0,
    review_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_REVIEW_RATE", min=0.001,
        help="New reviews (GetReview of a match not yet reviewed) per second per client "
             "(burst: 50 s of them, at least 1).",
    )] = 0.1,
    hint_rate: Annotated[float, typer.Option(
        envvar="BATTLELINE_HINT_RATE", min=0.001,
        help="Seconds of hint search per second per client, whichever seat asks "
             "(burst: 20 s of them, at least the 5 s of the dearest hint).",
    )] = 0.5,
    streams_per_seat: Annotated[int, typer.Option(
        envvar="BATTLELINE_STREAMS_PER_SEAT", min=1, help="Open Watch streams per seat."
    )] = 4,
    streams_per_client: Annotated[int, typer.Option(
        envvar="BATTLELINE_STREAMS_PER_CLIENT", min=1,
        help="Open Watch streams per client address, over all matches.",
    )] = 256,
    log_level: LogLevelOption = LogLevel.INFO,
    log_format: LogFormatOption = LogFormat.JSON,
    no_ai: Annotated[bool, typer.Option(
        "--no-ai", envvar="BATTLELINE_NO_AI", help="Do not start hosted-AI workers."
    )] = False,
    ai_workers: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_WORKERS", min=1, help="Hosted-AI worker processes."
    )] = 1,
    trusted_proxy: Annotated[list[str] | None, typer.Option(
        envvar="BATTLELINE_TRUSTED_PROXY",
        help="A proxy network (CIDR) whose x-forwarded-for is believed (e.g. Envoy's); "
             "repeatable (BATTLELINE_TRUSTED_PROXY: separated by spaces). None by default.",
    )] = None,
    max_connections: Annotated[int, typer.Option(
        envvar="BATTLELINE_MAX_CONNECTIONS", min=1,
        help="Open connections the gRPC port accepts; more are closed at once. Lowered "
             "where the descriptor limit could not hold them beside the web port's.",
    )] = MAX_CONNECTIONS,
    max_calls: Annotated[int, typer.Option(
        envvar="BATTLELINE_MAX_CALLS", min=1,
        help="Calls the engine process holds at once, Watch streams included; more are "
             "refused at once (RESOURCE_EXHAUSTED). A half-sent request holds up to about "
             "28 KB: size it to the process's memory (about 12,000 for 512 MiB).",
    )] = MAX_CALLS,
    web_max_connections: WebMaxConnectionsOption = WEB_LIMITS.max_connections,
    web_max_connections_per_address: WebMaxConnectionsPerAddressOption = (
        WEB_LIMITS.max_connections_per_address
    ),
    web_request_timeout: WebRequestTimeoutOption = WEB_LIMITS.request_timeout_s,
    web_request_rate: WebRequestRateOption = WEB_LIMITS.request_rate.per_s,
    web_port: Annotated[int, typer.Option(
        envvar="BATTLELINE_WEB_PORT", min=0, max=65535,
        help="Web page and Connect/gRPC-Web port, 0: any."
    )] = 8080,
    no_web: Annotated[bool, typer.Option(
        "--no-web", envvar="BATTLELINE_NO_WEB", help="Do not serve the web page."
    )] = False,
    socket: Annotated[Path | None, typer.Option(
        envvar="BATTLELINE_SOCKET",
        help="Also listen on this Unix socket, in a directory only this user may write, "
             "for `battleline ai` and `battleline web` run apart on this machine "
             "(--engine unix:PATH): another user may take a loopback port while the "
             "engine restarts.",
    )] = None,
    ai_address: Annotated[str, typer.Option(
        envvar="BATTLELINE_AI_ADDRESS",
        help="AI service (battleline ai --port) for hints; default: the AI started here.",
    )] = "",
    ai_idle: Annotated[float, typer.Option(
        envvar="BATTLELINE_AI_IDLE_S", min=1.0,
        help="Per-move limit, seconds, of an AI match created without a clock.",
    )] = 900.0,
    ai_matches_per_client: Annotated[int, typer.Option(
        envvar="BATTLELINE_AI_MATCHES_PER_CLIENT", min=1,
        help="Unfinished matches against the hosted AI one client may hold.",
    )] = 4,
    workers: Annotated[int, typer.Option(
        envvar="BATTLELINE_WORKERS", min=1,
        help="Engine processes on the one port (SO_REUSEPORT), sharing Redis, the AI and "
             "the web page; with --metrics-port M, worker i serves /metrics on M + i.",
    )] = 1,
    shared_port: Annotated[bool, typer.Option(
        "--shared-port", hidden=True, help="An extra engine of a --workers serve.",
    )] = False,
    metrics_fds: Annotated[str | None, typer.Option(
        "--metrics-fds", hidden=True, callback=held_sockets,
        help="An extra engine's metrics sockets, held by its serve (descriptors: a,b).",
    )] = None,
    open_limits: Annotated[bool, typer.Option(
        "--open-limits",
        help="No per-peer limits (creates, actions, listings, open and AI matches per "
             "client): a private engine for one load test. Loopback addresses only.",
    )] = False,
) -> None:
    """Start the Battle Line engine (gRPC), its hosted AI and the web page until SIGINT/SIGTERM.

    Secrets by environment only: BATTLELINE_AI_KEY, BATTLELINE_GATEWAY_SECRET (deploy/README).
    """
    from battleline_engine import logs
    from battleline_engine.redis_server import EmbeddedRedis

    logs.configure(log_level, log_format)
    checked_redis_url(ctx, "--redis-url", redis_url)
    descriptors = _raise_descriptor_limit()
    embedded: EmbeddedRedis | None = None
    ai_socket: Path | None = None  # the AI started here serves AiService on it
    inner_socket: Path | None = None  # this engine's for the AI and web page started here
    redis_url = cluster_url(redis_url, redis_cluster)
    owner = given_redis_owner(redis_owner)  # else decided by _run, once
    # Checked before anything starts (an embedded Redis would start and stop again).
    if open_limits and not is_loopback_host(host):
        raise typer.BadParameter("--open-limits serves loopback only (--host 127.0.0.1): "
                                 "a public engine needs its abuse limits")
    unsafe = unsafe_socket(socket) if socket is not None else None
    if unsafe is not None:
        raise typer.BadParameter(f"--socket: {unsafe}")
    if clock not in ("per-move", "per-game"):
        raise typer.BadParameter("--clock: per-move or per-game")
    if redis_client not in ("lean", "redis-py"):
        raise typer.BadParameter("--redis-client: lean or redis-py")
    if metrics_port:  # engine i's metrics on M + i (a re-test met a traceback, a clash)
        metrics_ports = range(metrics_port, metrics_port + workers)
        if metrics_ports[-1] > 65535:
            raise typer.BadParameter(f"--metrics-port: {workers} engines need ports "
                                     f"{metrics_port}-{metrics_ports[-1]}, past 65535")
        for option, taken in (("--port", port), ("--web-port", 0 if no_web else web_port)):
            if taken in metrics_ports:
                raise typer.BadParameter(f"engine {taken - metrics_port}'s metrics port "
                                         f"would be {option} {taken}: choose another "
                                         "--metrics-port")
    port_locks = []  # held while this serve runs: its --workers own the port
    worker_metrics: list[Listeners] = []  # each other engine's metrics sockets
    if workers > 1 and not shared_port:
        with one_line_when_cannot_listen("serve", "--port"):
            port_locks = claim_shared_port(host, port, port_lock_dirs(os.environ))
        if port and not port_locks:
            log.warning("no lock of port %d (no directory for it is this user's own): "
                        "two serves started at once on it are kept apart by a probe alone",
                        port)
        if metrics_port:  # the other engines' (M + i): one taken ended in a traceback
            from battleline_engine.metrics_http import metrics_sockets

            with one_line_when_cannot_listen("serve", "--metrics-port"):
                # Held here for serve's life: one worker's, free while it restarted, could
                # be taken by another user and fed made-up figures (a re-test's "Left").
                worker_metrics = [metrics_sockets(metrics_port + i, metrics_host or host)
                                  for i in range(1, workers)]
    if not redis_url:
        embedded = EmbeddedRedis(data_dir)
        with _own_data_dir():
            redis_url = embedded.start()
    try:
        from battleline_engine.hints import MAX_BUDGET_MS
        from battleline_engine.model import ClockKind
        from battleline_engine.ratelimit import Rate
        from battleline_engine.runtime import EngineConfig

        ai_workers = 0 if no_ai else ai_workers
        if ai_workers and tls_cert:
            log.warning("no hosted AI with --tls-cert (AI matches are refused): run "
                        "`battleline ai` apart, with BATTLELINE_AI_KEY, against a plain port")
            ai_workers = 0
        if not no_web and tls_cert:
            log.warning("no web page with --tls-cert: run `battleline web` behind your TLS proxy")
            no_web = True
        if ai_workers and not ai_address:
            # A socket in a directory of its own (0700), not a loopback port: a free port
            # can be bound by any local user before the AI does, and be sent the AI's key.
            ai_socket = private_socket_dir("ai") / "ai.sock"
            ai_address = f"unix:{ai_socket}"
        config = EngineConfig(
            default_clock=ClockKind.PER_MOVE if clock == "per-move" else ClockKind.PER_GAME,
            default_clock_ms=int(clock_s * 1000),
            create_rate=Rate(create_rate, max(10.0, create_rate * 10)),
            action_rate=Rate(action_rate, max(30.0, action_rate * 3)),
            call_rate=Rate(call_rate, max(10.0, call_rate * 4)),
            list_rate=Rate(list_rate, max(1.0, list_rate * 4)),
            record_rate=Rate(record_rate, max(1.0, record_rate * 4)),
            review_rate=Rate(review_rate, max(1.0, review_rate * 50)),
            # A burst holds at least the dearest hint, or it would be refused forever.
            hint_rate=Rate(hint_rate, max(MAX_BUDGET_MS / 1000, hint_rate * 20)),
            streams_per_seat=streams_per_seat, streams_per_client=streams_per_client,
            trusted_proxies=networks(trusted_proxy or []),
            # Shared with separate `battleline web` gateways, else one for the gateway here.
            gateway_secret=gateway_secret() or secrets.token_urlsafe(32),
            # With no AI started here, AI matches are accepted only for an AI run
            # elsewhere with the key given to both (BATTLELINE_AI_KEY).
            ai_key=_ai_key(data_dir) if ai_workers else _given_ai_key(),
            ai_address=ai_address,
            ai_matches_per_client=ai_matches_per_client,
            ai_idle_ms=int(ai_idle * 1000),
        )
        limits_of_web = web_limits(web_max_connections, web_max_connections_per_address,
                                   web_request_timeout, web_request_rate)
        if open_limits:
            from ..local import UNLIMITED
            from ..local import open_limits as without_limits

            config = without_limits(config)
            limits_of_web = dataclasses.replace(limits_of_web, request_rate=UNLIMITED)
        grpc_cap = connection_cap(max_connections, 0 if no_web else web_max_connections,
                                   descriptors)
        child_log = log_args(log_level, log_format)  # its AI logs as it does
        # The other engines of --workers: this one's settings, no AI, web page or Redis
        # of their own; the port is added once this engine has bound (metrics: their sockets).
        worker_args = [*shared_options(ctx), "--ai-address", ai_address, "--workers", "1",
                       "--no-ai", "--no-web", "--shared-port"]
        extra = Workers(workers - 1, worker_args, redis_url, config, worker_metrics)
        if socket is not None:  # the AI and web page here reach this engine by it too
            inner_socket = socket
        elif ai_workers or not no_web:  # they reach this engine by it, not by its port
            inner_socket = private_socket_dir("engine") / "engine.sock"
        with one_line_when_cannot_listen("serve", "--port, --web-port and --metrics-port"):
            asyncio.run(_run(redis_url, port, host, tls_cert, tls_key, metrics_port, retention,
                             grace, config, ai_workers, ai_socket, None if no_web else web_port,
                             embedded=embedded, web_limits=limits_of_web, max_connections=grpc_cap,
                             max_calls=max_calls,
                             redis_lean=redis_client == "lean",
                             redis_batch_s=redis_batch_ms / 1000,
                             shared_port=shared_port or workers > 1, workers=extra,
                             child_log=child_log, metrics_host=metrics_host or host,
                             inner_socket=inner_socket, redis_owner=owner,
                             metrics_fds=_descriptors(metrics_fds)))
    except WorkerFailed as err:
        typer.echo(f"battleline serve: {err}", err=True)
        raise typer.Exit(1) from None
    finally:
        if embedded is not None:
            embedded.stop()
        for made in (ai_socket, None if socket else inner_socket):
            if made is not None:
                remove_socket_dir(made.parent)
        for lock in port_locks:
            lock.close()
        for listener in itertools.chain.from_iterable(worker_metrics):
            listener.close()


async def _run(
    redis_url: str, port: int, host: str, tls_cert: Path | None, tls_key: Path | None,
    metrics_port: int, retention: int, grace: float, config: EngineConfig, ai_workers: int = 0,
    ai_socket: Path | None = None, web_port: int | None = None,
    embedded: EmbeddedRedis | None = None,
    web_limits: WebLimits | None = None, max_connections: int = MAX_CONNECTIONS,
    max_calls: int = MAX_CALLS,
    redis_lean: bool = True, redis_batch_s: float = 0.002,
    shared_port: bool = False, workers: Workers | None = None, child_log: Sequence[str] = (),
    metrics_host: str = "127.0.0.1", inner_socket: Path | None = None,
    redis_owner: int | None = None, metrics_fds: Sequence[int] = (),
) -> None:
    from battleline_engine import metrics_http
    from battleline_engine.server import ServerConfig, start_server
    from battleline_engine.storage import Storage
    from battleline_engine.wiring import default_services
    from battleline_gateway.server import WebGateway

    # Handlers first: a SIGTERM as soon as the address is printed is a clean stop.
    stop = stop_on_signals()
    if redis_owner is None:
        starts = ai_workers > 0 or (workers is not None and workers.count > 0)
        redis_owner = await _decided_redis_owner(redis_url, stop, starts)
        if stop.is_set():
            return
    storage = Storage.from_url(redis_url, lean=redis_lean, batch_interval_s=redis_batch_s,
                               redis_owner=redis_owner, retention_s=retention)
    server_config = ServerConfig(
        host=host, port=port, tls_cert=tls_cert, tls_key=tls_key, grace_s=grace,
        reuse_port=shared_port, max_connections=max_connections, max_concurrent_rpcs=max_calls,
        inner_socket=inner_socket,
    )
    engine = await start_server(server_config, storage, default_services(storage, config))
    ai: HostedAi | None = None
    ai_watch: asyncio.Task[None] | None = None  # restarts the AI when it exits
    web: WebGateway | None = None
    # A killed embedded Redis is reaped and started again from its append-only file.
    supervisor = asyncio.create_task(embedded.supervise()) if embedded is not None else None
    watching: asyncio.Task[None] | None = None  # restarts a worker that exits
    try:
        if workers is not None:
            await workers.start(engine.port, storage.redis_owner)
            watching = asyncio.create_task(workers.supervise())
        if metrics_fds:
            metrics_http.serve_metrics_on([socket.socket(fileno=fd) for fd in metrics_fds],
                                          metrics_host)
        elif metrics_port:
            metrics_http.serve_metrics(metrics_port, metrics_host)
        # Printed (not only logged) so scripts and tests can find a port chosen with --port 0.
        print(f"battleline engine listening on {engine.address}", flush=True)
        if ai_workers:
            ai = HostedAi(engine.inner_address, redis_url, config.ai_key, ai_workers,
                          ai_socket, child_log, storage.redis_owner)
            ai_watch = asyncio.create_task(ai.supervise())
        if web_port is not None:
            web = WebGateway(engine.inner_address, host, web_port,
                             engine_secret=config.gateway_secret,
                             limits=web_limits or WebLimits())
            await web.start()
            print(f"battleline web page at {web.url}", flush=True)
        await stop.wait()
        log.info("shutting down")
        _exit_if_stuck(grace + SHUTDOWN_SLACK_S)
    finally:
        for task in (supervisor, watching, ai_watch):  # nothing is restarted from now on
            if task is not None:
                task.cancel()
        # Out of the balancers' rotation first: stopping the web page and the AI takes
        # seconds, during which health said SERVING (twenty-sixth session's walkthrough).
        await engine.leave_rotation()
        if web is not None:
            await web.stop()
        if ai is not None:  # (seconds: it hands its matches back) the engine answers meanwhile
            await asyncio.to_thread(stop_processes, ai.process)
        if workers is not None:
            workers.terminate()
        await engine.stop()
        if workers is not None:
            workers.wait()
        with contextlib.suppress(Exception):
            await storage.close()


async def _decided_redis_owner(redis_url: str, stop: asyncio.Event, starts: bool) -> int | None:
    """The user this serve and every process it `starts` (its other engines, its AI)
    send Redis's password to: whoever holds Redis's port now (None: elsewhere, a unix
    socket, or no one to name and nothing started). With processes to start, waited for
    until someone does: each started without one trusted the first it met (the thirtieth
    audit's "Left")."""
    from battleline_engine import listener_pin

    if starts:
        return await listener_pin.decided_redis_owner(
            redis_url, stop, "the other engines and the AI")
    return await asyncio.to_thread(listener_pin.redis_owner, redis_url)


# serve's options that stay with the first engine of --workers: the others bind the port
# it gives them, and share its Redis (by environment), AI and web page.
NOT_SHARED = frozenset({
    "port", "metrics_port", "metrics_fds", "socket", "data_dir", "redis_url", "redis_cluster",
    "redis_owner", "no_ai",
    "ai_workers", "ai_address", "no_web", "web_port", "web_max_connections",
    "web_max_connections_per_address", "web_request_timeout", "web_request_rate", "workers",
    "shared_port",
})


def shared_options(ctx: typer.Context) -> list[str]:
    """serve's options other than NOT_SHARED, as a command line for its other engines:
    every setting as given or defaulted, so a new option reaches them without a line
    here (a limit that reached one engine only was an easy mistake)."""
    args: list[str] = []
    for param in ctx.command.params:
        if not isinstance(param, TyperOption) or param.name in NOT_SHARED:
            continue
        value = ctx.params[param.name]
        if param.is_flag:
            args += [param.opts[0]] if value else []
        elif param.multiple:
            args += [f"{param.opts[0]}={item}" for item in value or ()]
        elif value is not None:
            args += [param.opts[0], str(value.value if isinstance(value, Enum) else value)]
    return args


class WorkerFailed(RuntimeError):
    """An engine worker of `--workers` exited (or printed something else) instead of
    listening: at serve's start, serve stops with one line (a re-test met a traceback)."""


class Workers:
    """The other engine processes of `serve --workers N`: each binds this engine's port
    too (SO_REUSEPORT) and serves the same Redis; the AI and the web page stay here.
    Secrets (the Redis URL, the AI key, the gateway secret) go by environment."""

    def __init__(self, count: int, args: list[str], redis_url: str,
                 config: EngineConfig, metrics: Sequence[Listeners] = (),
                 start_timeout_s: float = START_TIMEOUT_S) -> None:
        """`metrics`: worker i's metrics sockets (`metrics_http.metrics_sockets`) at
        i - 1, held here and handed to each start of it; none: no metrics."""
        self.count = count
        self.metrics = metrics
        self.args = args
        self.start_timeout_s = start_timeout_s
        self.env = {**os.environ, "REDIS_URL": redis_url, AI_KEY_ENV: config.ai_key,
                    GATEWAY_SECRET_ENV: config.gateway_secret}
        self.processes: list[subprocess.Popen[str]] = []
        self.port = 0
        self.redis_owner: Callable[[], int | None] = lambda: None

    async def start(self, port: int, redis_owner: Callable[[], int | None]) -> None:
        """Start them on `port` and wait until each listens; each (and each restart)
        keeps to `redis_owner()`, Redis's owner as this serve knows it then
        (`Storage.redis_owner`)."""
        self.port, self.redis_owner = port, redis_owner
        self.processes = [self._spawn(i) for i in range(1, self.count + 1)]
        for process in self.processes:
            await self._listening(process)

    async def supervise(self, interval_s: float = 1.0) -> None:
        """Until cancelled: start again a worker that exited. Each worker is watched on
        its own, so one whose start hangs holds up no other (twentieth audit)."""
        await asyncio.gather(*(
            keep_running("engine worker", functools.partial(self.processes.__getitem__, i),
                         functools.partial(self._restart, i), log, interval_s)
            for i in range(self.count)))

    async def _restart(self, i: int) -> None:
        """Worker `i` (from 0) anew; one not listening within `start_timeout_s`, or that
        printed something else, is killed (the next turn of its supervision starts
        another)."""
        timeout_s = self.start_timeout_s
        process = self.processes[i] = self._spawn(i + 1)
        try:
            await asyncio.wait_for(self._listening(process), timeout_s)
        except (WorkerFailed, TimeoutError) as err:
            if process.poll() is None:
                process.kill()
            if isinstance(err, TimeoutError):
                raise TimeoutError(f"not listening within {timeout_s:g} s") from None
            raise

    def _spawn(self, i: int) -> subprocess.Popen[str]:
        fds = [listener.fileno() for listener in self.metrics[i - 1]] if self.metrics else []
        command = [sys.executable, "-m", "battleline_client.cli", "serve", *self.args,
                   "--port", str(self.port), *owner_options(self.redis_owner()),
                   *(["--metrics-fds", ",".join(map(str, fds))] if fds else [])]
        return subprocess.Popen(dying_with_parent(command), env=self.env, pass_fds=fds,
                                stdout=subprocess.PIPE, text=True)

    @staticmethod
    async def _listening(process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        if "listening on" not in line:
            with contextlib.suppress(subprocess.TimeoutExpired):  # its exit status, not None
                await asyncio.to_thread(process.wait, 5)
            raise WorkerFailed(f"an engine worker did not start (exit {process.poll()}; its "
                               "own line above says why)")
        log.info("engine worker listening", extra={"worker_pid": process.pid})

    def terminate(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    def wait(self) -> None:
        stop_processes(*self.processes)


def _raise_descriptor_limit() -> int:
    """The soft limit of open descriptors up to the hard one (often 1,024 against far
    more): the web port's connection cap and the engine's own connections then fit
    together, and a flooded web port leaves the gRPC port room. Returns the soft limit
    in force (RLIM_INFINITY: none)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = 65_536 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# Descriptors serve needs besides its ports' connections: Redis (a pool of 64), its
# children's pipes, log files, the listening sockets, connections being refused.
DESCRIPTOR_RESERVE = 256


def connection_cap(wanted: int, web_connections: int, limit: int) -> int:
    """The gRPC port's cap: `wanted`, lowered (and said so) where the descriptor limit
    could not hold that many beside the web port's connections and the reserve, since a
    full gRPC port must leave the web page and Redis their descriptors."""
    import resource

    room = limit - web_connections - DESCRIPTOR_RESERVE
    if limit == resource.RLIM_INFINITY or room >= wanted:
        return wanted
    cap = max(1, room)
    log.warning("gRPC connections capped at %d to fit the descriptor limit (%d)", cap, limit)
    return cap


# Past the grace period, what a stop may take: the web gateway's own bound (3 s), the AI
# child's (10 s), the embedded Redis's (10 s) and the drain.
SHUTDOWN_SLACK_S = 30.0


def _exit_if_stuck(after_s: float) -> None:
    """Bound the whole shutdown: a stop once hung for 109 s with its ports closed (issue
    #14; not reproduced), so after `after_s` the process exits with status 1 whatever
    it waits for. Its children get SIGTERM from the kernel (`die_with_parent` in
    battleline_client.processes): Redis still flushes its append-only file."""
    def stuck() -> None:
        log.error("shutdown did not finish in %.0f s: exiting", after_s)
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(after_s, stuck)
    timer.daemon = True
    timer.start()


def networks(values: list[str]) -> tuple[str, ...]:
    """`--trusted-proxy` values (each a CIDR network), checked here."""
    import ipaddress

    for network in values:
        try:
            ipaddress.ip_network(network.strip())
        except ValueError as err:
            raise typer.BadParameter(f"--trusted-proxy: {err}") from None
    return tuple(network.strip() for network in values)


def held_sockets(value: str | None) -> str | None:
    """`--metrics-fds` (written by a --workers serve for its extra engines), checked here:
    each an open socket this process inherited."""
    import stat

    for descriptor in _descriptors(value):
        try:
            is_socket = stat.S_ISSOCK(os.fstat(descriptor).st_mode)
        except OSError:
            is_socket = False
        if not is_socket:
            raise typer.BadParameter(f"{descriptor} is not an open socket "
                                     "(serve --workers passes its extra engines theirs)")
    return value


def _descriptors(value: str | None) -> list[int]:
    try:
        return [int(descriptor) for descriptor in (value or "").split(",") if descriptor]
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not descriptors a,b") from None


def gateway_secret() -> str:
    """BATTLELINE_GATEWAY_SECRET ("" when unset), checked by `checked_secret`."""
    return checked_secret(GATEWAY_SECRET_ENV, os.environ.get(GATEWAY_SECRET_ENV, "").strip())


def _given_ai_key() -> str:
    """BATTLELINE_AI_KEY, checked as `battleline ai` checks it ("" when unset)."""
    return checked_secret(AI_KEY_ENV, os.environ.get(AI_KEY_ENV, ""))


@contextlib.contextmanager
def _own_data_dir() -> Iterator[None]:
    """A data directory that is not this user's own, or whose Redis another serve runs,
    is refused in one line, not a traceback."""
    from battleline_engine.redis_server import DataDirectoryInUse, UnsafeDataDirectory

    try:
        yield
    except (UnsafeDataDirectory, DataDirectoryInUse) as err:
        raise typer.BadParameter(str(err), param_hint="--data-dir") from None


def _ai_key(data_dir: Path) -> str:
    """The AI's key: BATTLELINE_AI_KEY, else the one kept in DATA_DIR/ai.key (made on the
    first start, readable by its owner only), so the AI of a restarted serve acts for
    the seats the AI of the last one held. The data directory is tightened first, as the
    embedded Redis does, also beside an external Redis (tenth audit: a key file left 0644
    by a copy or an older version was used as it was); a key file that is a symbolic link
    or another user's is refused."""
    import secrets

    from battleline_engine.redis_server import owner_only

    given = _given_ai_key()
    if given:
        return given
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _own_data_dir():
        owner_only(data_dir)
    path = data_dir / "ai.key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _kept_ai_key(path)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(32) + "\n")
    return _kept_ai_key(path)


def _kept_ai_key(path: Path) -> str:
    """The key in `path`, refused unless it is a file of this user (readable by it only)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:  # ELOOP: a symbolic link
        raise typer.BadParameter(f"{path}: not a readable file ({err.strerror})") from None
    with os.fdopen(fd) as kept:
        if os.fstat(kept.fileno()).st_uid != os.geteuid():
            raise typer.BadParameter(f"{path} belongs to another user: remove it (a new "
                                     "key is made) or set BATTLELINE_AI_KEY")
        os.fchmod(kept.fileno(), 0o600)
        key = checked_secret(str(path), kept.read().strip())
    if not key:
        raise typer.BadParameter(f"{path} is empty: remove it (a new key is made)")
    return key


class HostedAi:
    """`battleline ai` as a child process on the same engine and Redis, logging as serve
    does (`log`: its log options) and keeping to Redis's owner as serve knows it
    (`redis_owner()`: a restart trusts no one new), started again whenever it exits. Its
    secrets (the Redis URL with its password, the AI's key) go by environment: a command
    line is readable by every local user."""

    def __init__(self, address: str, redis_url: str, key: str, workers: int,
                 rpc_socket: Path | None = None, log: Sequence[str] = (),
                 redis_owner: Callable[[], int | None] = lambda: None) -> None:
        self.command = [sys.executable, "-m", "battleline_client.cli", "ai", "--engine",
                        address, "--workers", str(workers), *log]
        self.redis_owner = redis_owner
        if rpc_socket is not None:
            self.command += ["--socket", str(rpc_socket)]  # AiService for the engine's hints
        self.env = {**os.environ, "REDIS_URL": redis_url, AI_KEY_ENV: key}
        self.process = self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        command = [*self.command, *owner_options(self.redis_owner())]
        return subprocess.Popen(dying_with_parent(command), env=self.env)

    async def _restart(self) -> None:
        self.process = self._spawn()

    async def supervise(self, interval_s: float = 1.0) -> None:
        """Until cancelled: start it again whenever it has exited."""
        await keep_running("hosted AI", lambda: self.process, self._restart, log, interval_s)


