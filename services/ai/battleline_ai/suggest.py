"""battleline.v1.AiService: the hosted AI's decision as an RPC (hints, outside harnesses).

Why a service of its own rather than a function the engine imports: the
search is CPU-heavy and runs in this service's process pool, so engines stay
responsive and hints scale with AI capacity, not engine capacity.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import grpc
import grpc.aio

from battleline.v1 import ai_pb2, ai_pb2_grpc

from .decide import decide, level_spec

DEFAULT_BUDGET_MS = 2000
MAX_BUDGET_MS = 30_000
MAX_ITERATIONS = 100_000


def request_spec(request: ai_pb2.SuggestRequest) -> str:
    """The bot spec a request asks for, with its iteration budget."""
    spec = request.bot.strip() or level_spec(5)
    if request.iterations:
        if not spec.startswith("ismcts"):
            raise ValueError("iterations apply to ismcts bots only")
        spec += f"{',' if ':' in spec else ':'}iterations={request.iterations}"
    return spec


class AiServicer(ai_pb2_grpc.AiServiceServicer):
    """Suggest: one search per call, in the process pool."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool

    async def Suggest(self, request: ai_pb2.SuggestRequest,
                      context: grpc.aio.ServicerContext[Any, Any]) -> ai_pb2.SuggestResponse:
        position = request.view.position if request.HasField("view") else request.position
        if not position:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "give view (with its position) or position")
        budget_ms = request.budget_ms or DEFAULT_BUDGET_MS
        if budget_ms > MAX_BUDGET_MS or request.iterations > MAX_ITERATIONS:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"budget: at most {MAX_BUDGET_MS} ms and "
                                f"{MAX_ITERATIONS} iterations")
        seed = request.seed or random.SystemRandom().getrandbits(63)
        try:
            spec = request_spec(request)
            decision = await asyncio.get_running_loop().run_in_executor(
                self.pool, decide, position, spec, budget_ms / 1000, seed)
        except ValueError as err:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        return ai_pb2.SuggestResponse(
            action=decision.action, win_estimate=decision.value,
            iterations=decision.iterations, seconds=decision.seconds, bot=spec,
            top_actions=[ai_pb2.ActionStats(action=a, visits=v, value=m)
                         for a, v, m in decision.top],
        )


class AiServer:
    """AiService on host:port (0: any) with its own search pool."""

    def __init__(self, host: str, port: int, processes: int = 1) -> None:
        self.host, self.port, self.processes = host, port, processes
        self.server: grpc.aio.Server | None = None
        self.pool: ProcessPoolExecutor | None = None

    async def start(self) -> str:
        """Start serving; returns host:port actually bound."""
        # spawn: the gRPC server's threads must not be copied into search processes.
        self.pool = ProcessPoolExecutor(self.processes,
                                        mp_context=multiprocessing.get_context("spawn"))
        self.server = grpc.aio.server()
        ai_pb2_grpc.add_AiServiceServicer_to_server(AiServicer(self.pool), self.server)
        self.port = self.server.add_insecure_port(f"{self.host}:{self.port}")
        await self.server.start()
        return f"{self.host}:{self.port}"

    async def stop(self, grace: float = 1.0) -> None:
        if self.server is not None:
            await self.server.stop(grace)
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
