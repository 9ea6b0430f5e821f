"""Run the web gateway on the current event loop, next to the engine or on its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from battleline_engine.auth import Callers, address_key
from battleline_engine.listening import (
    CannotListen,
    answered_names,
    bound_sockets,
    bracketed,
)
from battleline_engine.ratelimit import HeldConnections

from .bridge import EngineBridge, Upstream
from .limits import WebLimits
from .rate import RequestRate
from .site import SECURITY_HEADERS, WebApp

log = logging.getLogger(__name__)


# How long after its head a request's body may keep coming before its connection, at its
# address's cap, gives way to a newer one.
SLOW_BODY_S = 1.0


class _QuietSignals(uvicorn.Server):
    """uvicorn without its own SIGINT/SIGTERM handlers: the host process owns shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Peers:
    """The connections each peer address holds, against the per-address cap: at the cap,
    a connection waiting for its request gives way to the newcomer (`HeldConnections`).

    Configured proxies are not capped: behind one, every connection has its address.
    """

    def __init__(self, cap: int, trusted_proxies: Sequence[str]) -> None:
        self.cap = cap
        self.proxies = Callers(trusted_proxies)
        self.open: HeldConnections[_GuardedH11] = HeldConnections(
            cap, lambda held: held.waiting(), lambda held: held.give_way())

    def capped(self, host: str) -> bool:
        """Whether connections from `host` count against the cap (not a trusted proxy)."""
        return not self.proxies.is_trusted_proxy(host)


class _BoundedHeads(h11.Connection):
    """h11's server side, refusing a request whose head is past the limits or whose body
    is chunked. h11 bounds a head only while it is incomplete: one arriving whole in a
    single read was parsed at any size (64 KiB, 1,080 headers: ten times a small
    request's cost to the event loop, which the engine shares; tenth audit), and so were
    a chunked body's trailers and chunk extensions (eleventh audit). No call of the page
    or of a Connect or gRPC-Web client sends a chunked body (at most 8 KiB, its length
    known), and one that also had a Content-Length could smuggle a second request past a
    proxy framing by the other (ninth audit). Refused as h11 refuses a malformed request
    (a 400 and the connection closed, `_GuardedH11.send_400_response`), before the app
    sees it."""

    def __init__(self, limits: WebLimits) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)
        self.limits = limits

    def next_event(self) -> h11.Event | type[h11.PAUSED] | type[h11.NEED_DATA]:
        event = super().next_event()
        if isinstance(event, h11.Request):
            headers = event.headers
            if len(headers) > self.limits.max_headers:
                raise h11.RemoteProtocolError("too many headers", error_status_hint=431)
            size = len(event.target) + sum(len(name) + len(value) + 4
                                           for name, value in headers)
            if size > self.limits.max_header_bytes:
                raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
            if any(name == b"transfer-encoding" for name, _ in headers):
                raise h11.RemoteProtocolError("chunked bodies are not served",
                                              error_status_hint=411)
        return event


class _GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with connection caps, bounded request heads and a
    request deadline.

    uvicorn arms no timer until a first response is sent, so a connection that sends
    nothing, or its headers a byte at a time, stayed open for ever. Here every request
    must arrive in full within `request_timeout_s` of the connection (or of the previous
    response); the long part of a Watch, its response, is not limited. Connections past
    the server's cap, or past its peer address's, are closed at once.
    """

    limits = WebLimits()  # set per server by _guarded()
    peers = _Peers(limits.max_connections_per_address, ())  # likewise
    _deadline: asyncio.TimerHandle | None = None
    _counted: str | None = None  # the address key this connection counts for
    _body_since: float | None = None  # when the current request's head was in, its body not

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _BoundedHeads(self.limits)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._admitted():
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted is not None:
            self.peers.open.release(self._counted, self)
            self._counted = None
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 refuses, with the web port's security headers
        (uvicorn's own had none). Should that happen in a body the app is already
        reading, the app's own answer is dropped: it would follow on a connection h11
        has closed, and uvicorn logged its failure with a traceback (eleventh audit)."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            if cycle.response_started:  # too late for a 400: only closing is left
                self.transport.close()
                return
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                   *SECURITY_HEADERS]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=msg.encode("ascii")), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def waiting(self) -> bool:
        """Whether this connection waits for a request: none sent yet, kept alive after
        its answer, or a body still coming `SLOW_BODY_S` after its head (a browser sends
        its body with its head; eleventh audit: bodies sent a byte a second held every
        place), not one whose request is in or whose answer streams."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return (self._body_since is not None
                    and self.loop.time() - self._body_since > SLOW_BODY_S)
        return state is h11.IDLE and self.conn.our_state is h11.IDLE

    def give_way(self) -> None:
        """Close this waiting connection: its place goes to a newer one of its address."""
        self._counted = None  # its place is the newcomer's now
        self.transport.close()

    def _admitted(self) -> bool:
        """Whether this new connection fits under both caps (counted if it does)."""
        if len(self.connections) > self.limits.max_connections:
            log.warning("web connection refused: %d open", self.limits.max_connections)
            return False
        host = self.client[0] if self.client else None
        if host is None or not self.peers.capped(host):
            return True
        key = address_key(host)  # an IPv6 client's whole /64
        if not self.peers.open.take(key, self):
            log.warning("web connection refused: %d open from one address", self.peers.cap,
                        extra={"address": host})
            return False
        self._counted = key
        return True

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.SEND_BODY:
            self._body_since = None
        elif self._body_since is None:
            self._body_since = self.loop.time()
        if self._request_in():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may already take a pipelined next request
        if not self.transport.is_closing() and not self._request_in():
            self._arm()  # the next request on this connection

    def _request_in(self) -> bool:
        """Whether the current request has arrived in full (headers and body)."""
        return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.request_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def _guarded(limits: WebLimits, trusted_proxies: Sequence[str]) -> type[_GuardedH11]:
    """The protocol class of one server: its limits, and its own count of peers."""
    peers = _Peers(limits.max_connections_per_address, trusted_proxies)
    return type("GuardedH11", (_GuardedH11,), {"limits": limits, "peers": peers})


class WebGateway:
    """The web page and the Connect/gRPC-Web bridge to the engine at `engine_address`.

    `engine_secret`: the engine's gateway secret, sent with each call so the engine
    counts every browser on its own. `trusted_proxies`: networks whose
    x-forwarded-for names the browser (an ingress in front), which then has a request
    rate of its own; nobody's by default.
    """

    def __init__(self, engine_address: str, host: str = "127.0.0.1", port: int = 8080, *,
                 engine_secret: str = "", trusted_proxies: Sequence[str] = (),
                 limits: WebLimits = WebLimits()) -> None:
        self.upstream = Upstream(engine_address, engine_secret)
        rate = RequestRate(limits.request_rate, trusted_proxies)
        bridge = EngineBridge(self.upstream, rate, limits.max_streams_per_address)
        config = uvicorn.Config(WebApp(bridge, rate, only_hosts=answered_names(host)),
                                host=host, port=port,
                                lifespan="off", log_level="warning", access_log=False,
                                # uvicorn's records go to the host's handlers (and their
                                # repeat filter), not to a stderr handler of its own
                                log_config=None,
                                http=_guarded(limits, trusted_proxies), ws="none",
                                timeout_keep_alive=limits.idle_timeout_s,
                                proxy_headers=bool(trusted_proxies),
                                forwarded_allow_ips=list(trusted_proxies) or None,
                                timeout_graceful_shutdown=3)  # a bound, past our own grace
        self._server = _QuietSignals(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen; returns once the port is bound (CannotListen if it cannot be). On
        127.0.0.1 or `localhost` the page holds ::1 at its port too (`loopback_twin`): a
        browser asked for `localhost` goes there first, and another user's page there
        would share the page's origin, and so read the seats' tokens it stores."""
        config = self._server.config
        sockets = bound_sockets(config.host, config.port)
        self._task = asyncio.create_task(self._serve(sockets))
        while not self._server.started:
            if self._task.done():
                raise CannotListen(f"cannot listen on {config.host}:{config.port}")
            await asyncio.sleep(0.02)

    async def _serve(self, sockets: list[socket.socket]) -> None:
        # uvicorn exits (SystemExit) when it cannot listen; from a task that would end the
        # whole event loop, not only the gateway's start. A socket it is given fails its
        # `listen` with OSError instead (another bound there listened first: a re-test
        # saw a traceback): `start` says so in one line.
        with contextlib.suppress(SystemExit, OSError):
            await self._server.serve(sockets=sockets)

    @property
    def url(self) -> str:
        """The page's address (with the real port when started on port 0)."""
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{bracketed(host)}:{port}/"

    async def stop(self, grace_s: float = 1.0) -> None:
        """Take no new requests, give running calls `grace_s`, then cut the rest
        (watch streams end with UNAVAILABLE, so browsers reconnect elsewhere)."""
        self._server.should_exit = True
        await self.upstream.close(grace_s)
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
