"""gRPC's health and reflection services with their streams capped per client address.

A health Watch or a reflection stream stays open for as long as its client likes, and
the stock servicers bound nothing: one client could fill every stream of each of its
connections (an audit held 2,842 idle reflection streams, 43 MB). Probes (Kubernetes,
Envoy) use Check, which is not limited.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha._async import ReflectionServicer

from .auth import Callers
from .ratelimit import OpenCounts

STREAMS_PER_ADDRESS = 8


class AddressCap:
    """At most `per_address` streams open per client address (the connection's peer: no
    proxy believed), checked and counted with no await between."""

    def __init__(self, per_address: int, what: str) -> None:
        self.per_address = per_address
        self.what = what
        self._callers = Callers()
        self._open = OpenCounts()

    @asynccontextmanager
    async def held(self, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[None]:
        """One stream of the caller's, or RESOURCE_EXHAUSTED if it holds its cap."""
        address = self._callers.key(context)
        if self._open.full(address, self.per_address):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"at most {self.per_address} {self.what} per address")
        self._open.take(address)
        try:
            yield
        finally:
            self._open.release(address)


class CappedReflectionServicer(ReflectionServicer):
    """Server reflection whose streams are capped per client address."""

    def __init__(self, service_names: list[str],
                 per_address: int = STREAMS_PER_ADDRESS) -> None:
        super().__init__(service_names)
        self._cap = AddressCap(per_address, "reflection streams")

    async def ServerReflectionInfo(  # type: ignore[override]
        self, request_iterator: AsyncIterable[reflection_pb2.ServerReflectionRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[reflection_pb2.ServerReflectionResponse]:
        async with self._cap.held(context):
            # An async generator, though its stub says a coroutine.
            replies = super().ServerReflectionInfo(request_iterator, context)
            async for response in replies:  # type: ignore[attr-defined]
                yield response


class CappedHealthServicer(health.aio.HealthServicer):
    """`grpc.health.v1.Health` whose Watch refuses a client address holding `per_address`
    streams already (RESOURCE_EXHAUSTED), checked and counted with no await between."""

    def __init__(self, per_address: int = STREAMS_PER_ADDRESS) -> None:
        super().__init__()
        self.per_address = per_address
        self._cap = AddressCap(per_address, "health watches")

    async def Watch(self, request: health_pb2.HealthCheckRequest,
                    context: grpc.aio.ServicerContext[Any, Any]) -> None:
        async with self._cap.held(context):
            await super().Watch(request, context)
