"""Binding a server's port, and the one error every server of the service raises when it
cannot: the engine's and the AI's gRPC ports, the web page, the metrics endpoint."""

from __future__ import annotations

import grpc
import grpc.aio


class CannotListen(OSError):
    """A server could not bind its address: the port is taken, or the host is not one
    of this machine's. Commands say so in one line rather than with a traceback."""


def listen(server: grpc.aio.Server, address: str,
           credentials: grpc.ServerCredentials | None = None) -> int:
    """Bind `server` to `address` (with TLS given `credentials`); returns the port."""
    try:
        port = (server.add_insecure_port(address) if credentials is None
                else server.add_secure_port(address, credentials))
    except RuntimeError:  # grpc: "Failed to bind to address ..."
        port = 0
    if port == 0:
        raise CannotListen(f"cannot listen on {address}")
    return port
