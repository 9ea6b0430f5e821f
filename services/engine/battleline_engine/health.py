"""gRPC's health service with its Watch streams capped per client address.

A health Watch stays open for as long as its client likes, and the stock servicer
bounds nothing: one client could hold 1,000 streams on each of its connections. Probes
(Kubernetes, Envoy) use Check, which is not limited.
"""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2

from .auth import Callers
from .ratelimit import OpenCounts

WATCHES_PER_ADDRESS = 8


class CappedHealthServicer(health.aio.HealthServicer):
    """`grpc.health.v1.Health` whose Watch refuses a client address holding `per_address`
    streams already (RESOURCE_EXHAUSTED), checked and counted with no await between."""

    def __init__(self, per_address: int = WATCHES_PER_ADDRESS) -> None:
        super().__init__()
        self.per_address = per_address
        self._callers = Callers()  # the connection's peer address: no proxy believed
        self._open = OpenCounts()

    async def Watch(self, request: health_pb2.HealthCheckRequest,
                    context: grpc.aio.ServicerContext[Any, Any]) -> None:
        address = self._callers.key(context)
        if self._open.full(address, self.per_address):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"at most {self.per_address} health watches per address")
        self._open.take(address)
        try:
            await super().Watch(request, context)
        finally:
            self._open.release(address)
