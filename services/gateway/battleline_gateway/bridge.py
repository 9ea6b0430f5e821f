"""Connect and gRPC-Web endpoints that forward each call to the engine over gRPC.

The endpoints are built from the protos' service descriptors, so a method
added to the contract is bridged without code here. Calls carry the caller's
`authorization` header through; engine errors come back with their code,
message and rich details (google.rpc.ErrorInfo, RetryInfo) intact.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from types import ModuleType
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import descriptor, symbol_database
from google.rpc import status_pb2
from protobuf.wkt import Any as DetailAny

from battleline.v1 import game_pb2, lobby_pb2, record_pb2, watch_pb2
from battleline_engine.auth import GATEWAY_CLIENT, GATEWAY_SECRET

# The services a browser may call: the engine's public contract (not AiService).
PUBLIC_SERVICES: tuple[ModuleType, ...] = (lobby_pb2, game_pb2, watch_pb2, record_pb2)

# Request headers passed on to the engine: the seat token.
FORWARDED_HEADERS = ("authorization",)
_DETAILS_KEY = "grpc-status-details-bin"
# What a call cut by the gateway's shutdown gets: a Watch resumes from its last event.
RESTARTING = ConnectError(Code.UNAVAILABLE, "the web gateway is restarting: call again")


class Upstream:
    """The gRPC channel to the engine, and whether the gateway is shutting it down.

    With the engine's gateway secret, each call carries the browser's address, so the
    engine's per-client limits apply per browser, not to the gateway as a whole; the
    secret is what makes the engine believe it (see battleline_engine.auth.Callers).
    """

    def __init__(self, engine_address: str, secret: str = "") -> None:
        self.channel = grpc.aio.insecure_channel(engine_address)
        self.closing = False
        self.secret = secret

    async def close(self, grace_s: float) -> None:
        """Let running calls finish for `grace_s`, then cancel the rest (watch streams)."""
        self.closing = True
        await self.channel.close(grace=grace_s)


class EngineBridge(ConnectASGIApplication[Upstream]):
    """One ASGI app serving every public method at `/battleline.v1.Service/Method`."""

    path = "/"

    def __init__(self, upstream: Upstream, read_max_bytes: int = 256 * 1024) -> None:
        # connectrpc types `endpoints` with a private union of Endpoint's subclasses, not
        # with the public Endpoint its factories build
        super().__init__(service=upstream,
                         endpoints=forwarding_endpoints,  # type: ignore[arg-type]
                         codecs=google_protobuf_codecs(), read_max_bytes=read_max_bytes)


def public_methods() -> Iterator[descriptor.MethodDescriptor]:
    """Every method of the public services."""
    for module in PUBLIC_SERVICES:
        for service in module.DESCRIPTOR.services_by_name.values():
            yield from service.methods


def method_path(method: descriptor.MethodDescriptor) -> str:
    """The URL path (and gRPC method name) of `method`: `/package.Service/Method`."""
    return f"/{method.containing_service.full_name}/{method.name}"


def method_info(method: descriptor.MethodDescriptor) -> MethodInfo[Any, Any]:
    """What connectrpc needs to know of `method` (servers and clients alike)."""
    symbols = symbol_database.Default()
    return MethodInfo(
        name=method.name, service_name=method.containing_service.full_name,
        input=symbols.GetSymbol(method.input_type.full_name),
        output=symbols.GetSymbol(method.output_type.full_name),
        idempotency_level=IdempotencyLevel.UNKNOWN,
        stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
    )


def forwarding_endpoints(upstream: Upstream) -> Mapping[str, Endpoint[Any, Any]]:
    """An endpoint per public method, keyed by its URL path."""
    return {method_path(method): _forwarding_endpoint(upstream, method)
            for method in public_methods()}


def _forwarding_endpoint(upstream: Upstream,
                         method: descriptor.MethodDescriptor) -> Endpoint[Any, Any]:
    info = method_info(method)
    path = method_path(method)
    serializers = {"request_serializer": info.input.SerializeToString,
                   "response_deserializer": info.output.FromString}
    if method.server_streaming:
        stream_call = upstream.channel.unary_stream(path, **serializers)

        async def forward_stream(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
            try:
                async for response in stream_call(request, metadata=_metadata(ctx, upstream),
                                                  timeout=_timeout_s(ctx)):
                    yield response
            except grpc.aio.AioRpcError as error:
                raise connect_error(error) from None
            except asyncio.CancelledError:
                if not upstream.closing:
                    raise  # the browser hung up
                raise RESTARTING from None  # cut by the gateway's shutdown: reconnect

        return Endpoint.server_stream(info, forward_stream)

    unary_call = upstream.channel.unary_unary(path, **serializers)

    async def forward_unary(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        try:
            return await unary_call(request, metadata=_metadata(ctx, upstream),
                                    timeout=_timeout_s(ctx))
        except grpc.aio.AioRpcError as error:
            raise connect_error(error) from None

    return Endpoint.unary(info, forward_unary)


def _metadata(ctx: RequestContext[Any, Any], upstream: Upstream) -> tuple[tuple[str, str], ...]:
    headers = ctx.request_headers
    passed = tuple((name, headers[name]) for name in FORWARDED_HEADERS if name in headers)
    client = ctx.client_address  # "host:port", or None (unknown transport)
    if client is None or not upstream.secret:
        return passed
    return (*passed, (GATEWAY_SECRET, upstream.secret),
            (GATEWAY_CLIENT, client.rsplit(":", 1)[0].strip("[]")))


def _timeout_s(ctx: RequestContext[Any, Any]) -> float | None:
    timeout_ms = ctx.timeout_ms
    return None if timeout_ms is None else timeout_ms / 1000


def connect_error(error: grpc.aio.AioRpcError) -> ConnectError:
    """The engine's status as a Connect error: same code, message and details."""
    details: list[ErrorDetail] = []
    for key, value in error.trailing_metadata() or ():
        if key == _DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            details = [ErrorDetail(DetailAny(type_url=item.type_url, value=item.value))
                       for item in status.details]
    return ConnectError(Code[error.code().name], error.details() or "", details)
