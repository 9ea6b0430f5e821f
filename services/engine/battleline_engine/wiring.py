"""Which game services a server hosts: the one place that assembles them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from battleline.v1 import game_pb2_grpc, lobby_pb2_grpc, record_pb2_grpc, watch_pb2_grpc

from .game import GameServicer
from .lobby import LobbyServicer
from .record import RecordServicer
from .runtime import EngineConfig, Runtime
from .server import Service
from .storage import Storage
from .sweeper import Sweeper
from .watch import WatchServicer


@dataclass(frozen=True, slots=True)
class Hosted:
    """One servicer and the generated function that adds it to a server."""

    service_name: str
    servicer: Any
    add: Callable[[Any, grpc.aio.Server], None]

    def register(self, server: grpc.aio.Server) -> None:
        self.add(self.servicer, server)


class Background:
    """The per-process tasks (the store's time, the clock sweeper), started and stopped
    with the server. Hosted as a service without RPCs so the server's lifecycle drives
    it."""

    service_name = ""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.sweeper = Sweeper(runtime.storage, runtime.matches, runtime.config.sweep_interval_s)
        self._time: asyncio.Task[None] | None = None

    def register(self, server: grpc.aio.Server) -> None:
        del server

    async def start(self) -> None:
        self._time = await self.runtime.storage.keeping_time()  # before the first call
        self.sweeper.start()

    async def stop(self) -> None:
        await self.sweeper.stop()
        if self._time is not None:
            self._time.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._time
        await self.runtime.hub.stop()


def default_services(storage: Storage, config: EngineConfig | None = None) -> list[Service]:
    """The battleline.v1 servicers for a server backed by `storage`."""
    runtime = Runtime(storage, config or EngineConfig())
    return [
        Hosted("battleline.v1.LobbyService", LobbyServicer(runtime),
               lobby_pb2_grpc.add_LobbyServiceServicer_to_server),
        Hosted("battleline.v1.GameService", GameServicer(runtime),
               game_pb2_grpc.add_GameServiceServicer_to_server),
        Hosted("battleline.v1.WatchService", WatchServicer(runtime),
               watch_pb2_grpc.add_WatchServiceServicer_to_server),
        Hosted("battleline.v1.RecordService", RecordServicer(runtime),
               record_pb2_grpc.add_RecordServiceServicer_to_server),
        Background(runtime),
    ]
