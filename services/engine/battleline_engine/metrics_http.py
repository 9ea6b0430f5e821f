"""The HTTP server of /metrics: prometheus_client's own, bounded.

prometheus_client's `start_http_server` gives every connection a thread and no
timeout, so a few stalled connections held threads for as long as they liked.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.types import StartResponse, WSGIApplication

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from .auth import address_key
from .listening import (
    CannotListen,
    answered_names,
    bound_sockets,
    host_name,
    host_port,
    refuse_if_bound,
    unbracketed,
)
from .metrics import REGISTRY
from .ratelimit import HeldConnections

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192  # a scrape's request line and headers are a few hundred bytes


class _ScrapeHandler(WSGIRequestHandler):
    """One request per connection, whose head must arrive in full within the server's
    timeout: a per-read timeout alone lets a client sending a byte now and then keep
    its thread for as long as it likes."""

    server: MetricsServer

    def handle(self) -> None:
        head = self._head()
        if head is None:
            return
        self.server.headed(self.connection)
        self.connection.settimeout(self.server.timeout_s)  # bounds each response write
        self.rfile = io.BytesIO(head)
        super().handle()

    def _head(self) -> bytes | None:
        """The request line and headers, or None if they did not arrive in time."""
        deadline = time.monotonic() + self.server.timeout_s
        head = b""
        while b"\r\n\r\n" not in head:
            left = deadline - time.monotonic()
            if left <= 0 or len(head) > MAX_HEAD_BYTES:
                return None
            self.connection.settimeout(left)
            try:
                chunk = self.connection.recv(4096)
            except OSError:  # timed out or reset
                return None
            if not chunk:
                return None
            head += chunk
        return head

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged (as prometheus_client's own server)."""


class MetricsServer(ThreadingWSGIServer):
    """prometheus_client's threaded WSGI server with bounds: each connection gets
    `timeout_s` and a thread only within `max_connections` (and `max_per_address` from
    one address: `auth.address_key`, so every loopback address is one); a connection
    past them is closed at once, and Prometheus scrapes again at its next interval,
    unless one of its address's connections still waits for its request: that one gives
    way (`HeldConnections`; a scraper sends its request at once). On one loopback it holds
    the other at its port too (`listening.loopback_twin`), whose connections pass the
    same checks and counts: a scraper of `localhost` may try either first, where another
    local user would otherwise serve it made-up figures."""

    def __init__(self, sockets: list[socket.socket], host: str, *, timeout_s: float,
                 max_connections: int, max_per_address: int) -> None:
        """`sockets`: `metrics_sockets(port, host)`, made here or by the serve that
        started this process and holds them."""
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self._open = 0  # connections with a thread, from every address
        self._headed: set[socket.socket] = set()  # connections whose request is in
        self._held: HeldConnections[socket.socket] = HeldConnections(
            max_per_address, lambda s: s not in self._headed, _hang_up)
        self._lock = threading.Lock()  # a thread per connection: checked and counted under it
        main, *twins = sockets
        self.address_family = main.family
        super().__init__(main.getsockname()[:2], _ScrapeHandler, bind_and_activate=False)
        self.socket.close()  # one unbound, in place of `sockets`
        self.socket, self.server_address = main, main.getsockname()
        # What `server_bind`, not called, would have set: the WSGI environment's server.
        self.server_name, self.server_port = socket.getfqdn(host), self.server_address[1]
        self.setup_environ()
        self.twin: socket.socket | None = twins[0] if twins else None  # the other loopback
        self.set_app(_answering_only(answered_names(host), make_wsgi_app(REGISTRY)))

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        if self.twin is not None:
            threading.Thread(target=self._serve_twin, args=(self.twin,), name="metrics-twin",
                             daemon=True).start()
        super().serve_forever(poll_interval)

    def _serve_twin(self, twin: socket.socket) -> None:
        """Until `server_close`: each connection to the twin, as if made to the server."""
        while True:
            try:
                connection, address = twin.accept()
            except OSError:  # closed
                return
            self.process_request(connection, address)

    def server_close(self) -> None:
        super().server_close()
        if self.twin is not None:
            with contextlib.suppress(OSError):
                self.twin.shutdown(socket.SHUT_RDWR)  # wakes its accept
            self.twin.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        address = address_key(client_address[0])
        with self._lock:
            admitted = (self._open < self.max_connections
                        and self._held.take(address, request))
            self._open += admitted
        if not admitted:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)  # starts its thread
        except BaseException:
            self._release(address, request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(address_key(client_address[0]), request)

    def headed(self, connection: socket.socket) -> None:
        """The connection's request is in: it no longer gives way to a newer one."""
        with self._lock:
            self._headed.add(connection)

    def _release(self, address: str, connection: socket.socket) -> None:
        with self._lock:
            self._open -= 1
            self._held.release(address, connection)
            self._headed.discard(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or stalled mid-response: one debug line, no traceback."""
        log.debug("metrics connection from %s failed", client_address[0], exc_info=True)


def _answering_only(names: frozenset[str] | None, app: WSGIApplication) -> WSGIApplication:
    """`app`, answering 421 to a request sent to a name not in `names` (None: any): on
    loopback, a page that pointed its own name at 127.0.0.1 would read the metrics."""
    if names is None:
        return app
    refusal = f"this server answers only to {', '.join(sorted(names))}".encode()

    def answer(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if host_name(environ.get("HTTP_HOST", "")) in names:
            return app(environ, start_response)
        start_response("421 Misdirected Request", [("Content-Type", "text/plain")])
        return [refusal]

    return answer


def _hang_up(connection: socket.socket) -> None:
    """End a connection waiting for its request: its thread's read returns at once."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


def serve_metrics(port: int, host: str = "127.0.0.1", *, timeout_s: float = 10.0,
                  max_connections: int = 16, max_per_address: int = 4) -> MetricsServer:
    """Expose /metrics over HTTP on a background thread; `shutdown()` stops it."""
    return serve_metrics_on(metrics_sockets(port, host), host, timeout_s=timeout_s,
                            max_connections=max_connections, max_per_address=max_per_address)


def metrics_sockets(port: int, host: str = "127.0.0.1") -> list[socket.socket]:
    """The sockets of a metrics port, bound and listening (the loopback twin second):
    refused (CannotListen) if anyone holds the port, on either loopback."""
    host = unbracketed(host)  # `--metrics-host [::1]` (a re-test)
    refuse_if_bound(host, port, to="serve metrics on")  # and names a taken twin
    sockets = bound_sockets(host, port, to="serve metrics on")
    try:
        for listener in sockets:
            listener.listen()
    except OSError as err:
        for listener in sockets:
            listener.close()
        raise CannotListen(f"cannot serve metrics on {host_port(host, port)}: "
                           f"{err.strerror}") from err
    return sockets


def serve_metrics_on(sockets: list[socket.socket], host: str, *, timeout_s: float = 10.0,
                     max_connections: int = 16, max_per_address: int = 4) -> MetricsServer:
    """`serve_metrics` on `metrics_sockets` made already: a `--workers` serve holds each
    engine worker's, so the port of one that dies is taken by no one until it is back."""
    server = MetricsServer(sockets, unbracketed(host), timeout_s=timeout_s,
                           max_connections=max_connections, max_per_address=max_per_address)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
