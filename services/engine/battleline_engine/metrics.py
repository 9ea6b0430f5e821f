"""Prometheus metrics of the engine, and the interceptor that records RPC outcomes
(`metrics_http` serves them).

Per-process metrics: scrape every replica. Servicers only increment the
domain counters (actions, subscribers); latency and error codes are recorded
once here for every RPC, so no servicer can forget them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .errors import invalid
from .status import abort
from .storage import STORE_CLOCK

REGISTRY: Final = CollectorRegistry(auto_describe=True)

RPC_LATENCY: Final = Histogram(
    "battleline_rpc_latency_seconds", "Time to answer an RPC (to the end of a stream).",
    ["method"], registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
)
RPC_ERRORS: Final = Counter(
    "battleline_rpc_errors_total", "RPCs that ended with a status other than OK.",
    ["method", "code"], registry=REGISTRY,
)
ACTIONS: Final = Counter(
    "battleline_actions_total", "SubmitAction calls, by outcome.",
    ["result"], registry=REGISTRY,  # applied (a replayed answer too), rejected, conflict
)
ACTIONS_APPLIED: Final = ACTIONS.labels("applied")  # every successful submit: resolved once
LIVE_MATCHES: Final = Gauge(
    "battleline_live_matches", "Matches not yet finished (from Redis, all replicas).",
    registry=REGISTRY,
)
SUBSCRIBERS: Final = Gauge(
    "battleline_stream_subscribers", "Open Watch streams on this process.", registry=REGISTRY,
)
WALL_CLOCK_GAP: Final = Gauge(
    "battleline_wall_clock_gap_seconds",
    "How far this machine's wall clock is ahead of the store's (Redis TIME), which match "
    "clocks keep.", registry=REGISTRY,
)
WALL_CLOCK_GAP.set_function(STORE_CLOCK.wall_gap_s)


def _code_name(context: grpc.aio.ServicerContext[Any, Any], error: BaseException | None) -> str:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(error, asyncio.CancelledError):  # the client hung up (or the server stopped)
        return grpc.StatusCode.CANCELLED.name
    if error is not None and not isinstance(error, grpc.aio.AbortError):
        return grpc.StatusCode.UNKNOWN.name
    return grpc.StatusCode.OK.name


@functools.lru_cache(maxsize=256)
def _latency(method: str) -> Any:
    return RPC_LATENCY.labels(method)  # resolving a label set costs more than observing


def _observe(method: str, started: float, context: Any, error: BaseException | None) -> None:
    _latency(method).observe(time.perf_counter() - started)
    code = _code_name(context, error)
    if code != "OK":
        RPC_ERRORS.labels(method, code).inc()


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Records latency and final status code of unary and server-streaming RPCs.

    The wrapped handler of each method is made once and reused: a server's handlers
    do not change, and building one per call was a measurable share of a call."""

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails],
                               Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        path = handler_call_details.method
        known = self._wrapped.get(path)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = _wrap(path.rsplit("/", 1)[-1], handler)
        if len(self._wrapped) < 1024:  # method paths come from callers: keep it bounded
            self._wrapped[path] = (handler, wrapped)
        return wrapped


def _wrap(method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    # Requests arrive as bytes and are decoded in the wrapper: gRPC's own decoding
    # answers bytes that are not the message with UNKNOWN and a logged traceback.
    decode = handler.request_deserializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            _wrap_unary(method, handler.unary_unary, decode),
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        # A stream handler is an async generator or a coroutine using context.write.
        stream = handler.unary_stream
        wrap = _wrap_stream if inspect.isasyncgenfunction(stream) else _wrap_unary
        return grpc.unary_stream_rpc_method_handler(
            wrap(method, stream, decode),
            response_serializer=handler.response_serializer,
        )
    return handler


Decode = Callable[[bytes], Any] | None


async def _decoded(request: Any, decode: Decode, context: Any) -> Any:
    """The request message, or INVALID_ARGUMENT `bad-request` for undecodable bytes."""
    if decode is None:
        return request
    try:
        return decode(request)
    except DecodeError:
        await abort(context, invalid("bad-request", "the request is not a valid protobuf "
                                     "message of this method's request type"))


def _wrap_unary(method: str, behaviour: Callable[..., Any], decode: Decode) -> Callable[..., Any]:
    async def wrapped(request: Any, context: Any) -> Any:
        started, error = time.perf_counter(), None
        try:
            return await behaviour(await _decoded(request, decode, context), context)
        except BaseException as err:
            error = err
            raise
        finally:
            _observe(method, started, context, error)

    return wrapped


def _wrap_stream(method: str, behaviour: Callable[..., Any], decode: Decode,
                 ) -> Callable[..., Any]:
    async def wrapped(request: Any, context: Any) -> AsyncIterator[Any]:
        started, error = time.perf_counter(), None
        try:
            async for item in behaviour(await _decoded(request, decode, context), context):
                yield item
        except BaseException as err:
            error = err
            raise
        finally:
            _observe(method, started, context, error)

    return wrapped
