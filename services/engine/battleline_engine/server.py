"""The engine's gRPC server: health, reflection, metrics, limits, TLS, graceful stop.

Game servicers are plugged in as `Service` objects, so this module knows
nothing about the rules; `grpc_health.v1.Health` and server reflection are
always on, so load balancers and `grpcurl` work against any deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc
from grpc_health.v1 import health as grpc_health
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from .health import CappedHealthServicer, CappedReflectionServicer
from .listening import MAX_CALLS, MAX_CONNECTIONS, host_port, listen
from .metrics import LIVE_MATCHES, MetricsInterceptor
from .storage import Storage

log = logging.getLogger(__name__)

HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How the server listens and stops."""

    host: str = "127.0.0.1"
    port: int = 50051  # 0: any free port (see EngineServer.port)
    max_message_bytes: int = 256 * 1024  # responses (a view is a few KiB, a record more)
    # The largest request the engine accepts is 1.2 KB (16 actions and a match id and an
    # action id of 64 characters each); a half-sent one is buffered up to this, so it
    # bounds what a stalled request holds. It is also each stream's receive window: a
    # stream's bytes after its one request (never read) cannot pile up past it.
    max_request_bytes: int = 8 * 1024
    # Per HTTP/2 connection. A channel queues calls past it behind its open streams (a
    # Watch holds one until its match ends), and the web gateway sends the calls of its
    # 512 web connections (one each) on one channel; an AI worker holds up to 512.
    max_concurrent_streams: int = 600
    # RPCs in flight in the process, streams included (None: no cap); more are refused
    # at once with RESOURCE_EXHAUSTED (see listening.MAX_CALLS).
    max_concurrent_rpcs: int | None = MAX_CALLS
    # A connection must finish its TLS handshake and send HTTP/2's preface in this long,
    # and one with no call open for `idle_s` is closed (a client reconnects on its next
    # call), so neither holds one of `max_connections` for long.
    handshake_s: float = 20.0
    idle_s: float = 300.0
    # Connections held at once; gRPC closes more as soon as it accepts them (the caller
    # gets UNAVAILABLE at once), so a flood cannot exhaust the process's descriptors.
    max_connections: int = MAX_CONNECTIONS
    tls_cert: Path | None = None
    tls_key: Path | None = None
    drain_s: float = 1.0  # NOT_SERVING is announced this long before refusing new calls
    grace_s: float = 5.0  # running calls get this long to finish
    health_interval_s: float = 2.0  # how often Redis is pinged for the health status
    # A ping may take this long: under load Redis answers slower than the interval while
    # calls still succeed, and a short timeout made health flap.
    health_ping_timeout_s: float = 5.0
    health_failures: int = 3  # consecutive failed pings before NOT_SERVING
    # Share the port with other engine processes (SO_REUSEPORT: the kernel spreads new
    # connections over them; `battleline serve --workers N`). Off, a second engine on
    # the same port fails to start instead of silently sharing it.
    reuse_port: bool = False
    # A unix socket the engine also listens on, for `serve`'s own web gateway and AI (in
    # a directory of its own, 0700) and for those run apart (`serve --socket`): see
    # EngineServer.inner_address.
    inner_socket: Path | None = None
    # Collect garbage less often and freeze what start-up loaded (`tune_gc`); False
    # leaves the collector as CPython sets it.
    tune_gc: bool = True


class Service(Protocol):
    """A servicer to host: its full gRPC name and how to add it to a server.

    A service may also have `async start()` / `async stop()`, called after the
    server starts and after it has stopped (background tasks); an empty
    `service_name` hosts no RPCs and is left out of health and reflection."""

    @property
    def service_name(self) -> str:
        """Full name, for example "battleline.v1.GameService"."""
        ...

    def register(self, server: grpc.aio.Server) -> None:
        """Add the servicer to the server (the generated add_..._to_server)."""
        ...


class EngineServer:
    """A running server; `stop()` drains it gracefully."""

    def __init__(
        self, server: grpc.aio.Server, port: int, health: grpc_health.aio.HealthServicer,
        names: Sequence[str], storage: Storage, config: ServerConfig,
    ) -> None:
        self.server = server
        self.port = port
        self.health = health
        self.service_names = list(names)
        self.storage = storage
        self.config = config
        self._monitor: asyncio.Task[None] | None = None
        self._stopping = False
        self._leaving = False
        self._stop_event = asyncio.Event()
        self.services: list[Service] = []

    @property
    def address(self) -> str:
        """host:port to dial."""
        return host_port(self.config.host, self.port)

    @property
    def inner_address(self) -> str:
        """Where the parts of one `serve` dial the engine: its unix socket where it has
        one. Its loopback port could be another local user's while the engine is down
        (after a crash, the AI still running), or on the [::1] side of `--host
        localhost` when the engine bound 127.0.0.1 alone: the AI's key, the gateway's
        secret and the browsers' tokens went there (twenty-ninth audit)."""
        socket = self.config.inner_socket
        return f"unix:{socket}" if socket is not None else self.address

    async def _set_all(self, status: int) -> None:  # a HealthCheckResponse.ServingStatus
        for name in ["", *self.service_names]:
            await self.health.set(name, status)

    async def _ping(self) -> bool:
        """One health probe; any error or a ping slower than the timeout is a failure."""
        try:
            return await asyncio.wait_for(self.storage.ping(), self.config.health_ping_timeout_s)
        except Exception:
            return False

    async def _watch_redis(self) -> None:
        """Report NOT_SERVING while Redis is unreachable: without it nothing can be served.

        One slow or failed ping is not an outage (a loaded Redis still serves calls), so
        NOT_SERVING needs `health_failures` failures in a row; one success is SERVING again.
        """
        healthy: bool | None = None  # None: not yet known (NOT_SERVING was set at start)
        failures = 0
        while not self._stop_event.is_set():
            ok = await self._ping()
            failures = 0 if ok else failures + 1
            now = True if ok else (False if failures >= self.config.health_failures
                                   else healthy)
            if ok:
                with contextlib.suppress(Exception):  # a metric, not a health signal
                    LIVE_MATCHES.set(await self.storage.matches.live_count())
            if now is not None and now != healthy and not self._leaving:
                await self._set_all(SERVING if now else NOT_SERVING)
                log.log(logging.INFO if now else logging.WARNING, "redis %s",
                        "reachable" if now else f"unreachable ({failures} failed pings)")
                healthy = now
            # Wait on an event rather than being cancelled: on Python 3.11 a cancel can be
            # swallowed by the wait_for above, which would leave this loop running.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_event.wait(), self.config.health_interval_s)

    async def leave_rotation(self) -> None:
        """NOT_SERVING from now on, for good: balancers stop sending calls here, while
        the server still answers those that come until `stop`."""
        if self._leaving:
            return
        self._leaving = True
        await self.health.enter_graceful_shutdown()
        self._stop_event.set()
        if self._monitor is not None:
            await asyncio.wait([self._monitor], timeout=self.config.health_interval_s + 1)
            self._monitor.cancel()

    async def stop(self, grace_s: float | None = None) -> None:
        """NOT_SERVING, wait `drain_s` so balancers move away, then stop with a grace period."""
        if self._stopping:
            return
        self._stopping = True
        await self.leave_rotation()
        await asyncio.sleep(self.config.drain_s)
        await self.server.stop(self.config.grace_s if grace_s is None else grace_s)
        for service in self.services:
            stop = getattr(service, "stop", None)
            if stop is not None:
                await stop()
        log.info("engine stopped")

    async def wait(self) -> None:
        """Until the server has stopped."""
        await self.server.wait_for_termination()


# Young objects collected once this many allocations have piled up (CPython: 700). A
# server with a thousand calls in flight keeps thousands of young objects alive, so the
# default ran a collection every few calls and promoted them all to older generations.
GC_GEN0_THRESHOLD = 20_000
_gc_tuned = False


def tune_gc() -> None:
    """Collect less often, and never re-scan what was loaded at start-up (gc.freeze):
    both servers of the engine benchmark (engine and echo) call this from start_server."""
    global _gc_tuned
    if _gc_tuned:
        return
    _gc_tuned = True  # once per process (tests start many servers)
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def _credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if config.tls_cert is None and config.tls_key is None:
        return None
    if config.tls_cert is None or config.tls_key is None:
        raise ValueError("TLS needs both a certificate and a key")
    return grpc.ssl_server_credentials(
        [(config.tls_key.read_bytes(), config.tls_cert.read_bytes())]
    )


async def start_server(
    config: ServerConfig, storage: Storage, services: Sequence[Service] = ()
) -> EngineServer:
    """Build, bind and start the server; health turns SERVING once Redis answers."""
    options = [
        ("grpc.max_receive_message_length", config.max_request_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        ("grpc.max_concurrent_streams", config.max_concurrent_streams),
        # Receive windows stay at one request: without this, BDP probing grows them (to 64
        # MiB in an audit), and a Watch stream's unread bytes after its request held that much.
        ("grpc.http2.bdp_probe", 0),
        ("grpc.http2.lookahead_bytes", config.max_request_bytes),
        ("grpc.server_handshake_timeout_ms", round(config.handshake_s * 1000)),
        ("grpc.max_connection_idle_ms", round(config.idle_s * 1000)),
        # gRPC core's connection quota (grpcio 1.85: counted from accept, before the
        # HTTP/2 or TLS handshake; released when a connection closes).
        ("grpc.max_allowed_incoming_connections", config.max_connections),
        ("grpc.keepalive_time_ms", 60_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.so_reuseport", int(config.reuse_port)),
    ]
    server = grpc.aio.server(interceptors=[MetricsInterceptor()], options=options,
                             maximum_concurrent_rpcs=config.max_concurrent_rpcs)
    health = CappedHealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = [s.service_name for s in services if s.service_name]
    for service in services:
        service.register(server)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        CappedReflectionServicer([*names, HEALTH_SERVICE, reflection.SERVICE_NAME]), server)
    credentials = _credentials(config)
    port = listen(server, host_port(config.host, config.port), credentials,
                  shared=config.reuse_port)
    if config.inner_socket is not None:
        listen(server, f"unix:{config.inner_socket}")
    engine = EngineServer(server, port, health, names, storage, config)
    # Until Redis has answered, nothing can be served.
    await engine._set_all(NOT_SERVING)
    await server.start()
    engine._monitor = asyncio.create_task(engine._watch_redis(), name="redis-health")
    if config.tune_gc:
        tune_gc()
    engine.services = list(services)
    for service in services:
        start = getattr(service, "start", None)
        if start is not None:  # background tasks (sweeper, event reader)
            await start()
    log.info("engine listening", extra={"address": engine.address, "tls": credentials is not None})
    return engine
