"""The gRPC server over loopback with a real Redis: health, reflection, metrics, TLS, shutdown."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from battleline.v1 import lobby_pb2, lobby_pb2_grpc
from battleline_engine import metrics, metrics_http
from battleline_engine.server import EngineServer, ServerConfig, start_server
from battleline_engine.storage import Storage
from tests.processes import free_port

from .harness import LoopThread

FAST = ServerConfig(port=0, drain_s=0.2, grace_s=1.0, health_interval_s=0.1)


@dataclass
class LobbyStub:
    """A Service whose RPCs are all UNIMPLEMENTED: enough to test the plumbing."""

    service_name: str = "battleline.v1.LobbyService"

    def register(self, server: grpc.aio.Server) -> None:
        servicer = lobby_pb2_grpc.LobbyServiceServicer()
        lobby_pb2_grpc.add_LobbyServiceServicer_to_server(servicer, server)


class Running(LoopThread):
    """A server with a stub service on its own event loop thread."""

    call_timeout_s = 30.0

    def __init__(self, redis_url: str, config: ServerConfig) -> None:
        super().__init__()
        self.storage: Storage = self.call(self._storage(redis_url))
        self.engine: EngineServer = self.call(start_server(config, self.storage, [LobbyStub()]))

    async def _storage(self, url: str) -> Storage:
        return Storage.from_url(url)

    def close(self) -> None:
        self.call(self.engine.stop(0))
        self.call(self.storage.close())
        self.end()


@pytest.fixture
def engine(redis_url: str) -> Iterator[Running]:
    running = Running(redis_url, FAST)
    yield running
    running.close()


def wait_status(channel: grpc.Channel, want: int, service: str = "", timeout: float = 5) -> None:
    """Poll Health.Check until it reports `want`."""
    stub = health_pb2_grpc.HealthStub(channel)
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2).status
        if last == want:
            return
        time.sleep(0.05)
    raise AssertionError(f"health stayed {last}, wanted {want}")


def test_health_serving_for_all_services(engine: Running) -> None:
    with grpc.insecure_channel(engine.engine.address) as channel:
        wait_status(channel, health_pb2.HealthCheckResponse.SERVING)
        wait_status(channel, health_pb2.HealthCheckResponse.SERVING, "battleline.v1.LobbyService")
        with pytest.raises(grpc.RpcError) as err:
            health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="no.Such"), timeout=2
            )
        assert err.value.code() is grpc.StatusCode.NOT_FOUND


def test_reflection_lists_services(engine: Running) -> None:
    with grpc.insecure_channel(engine.engine.address) as channel:
        db = ProtoReflectionDescriptorDatabase(channel)
        services = set(db.get_services())
        assert {"battleline.v1.LobbyService", "grpc.health.v1.Health",
                "grpc.reflection.v1alpha.ServerReflection"} <= services
        # The whole contract is reachable, including the shared messages.
        desc = db.FindFileContainingSymbol("battleline.v1.LobbyService")
        assert desc.package == "battleline.v1"
        assert "battleline/v1/types.proto" in desc.dependency


def test_oversized_request_is_refused(engine: Running) -> None:
    """Requests are capped at 8 KiB (responses at 256 KiB): what a stalled, half-sent
    request can hold is bounded by it."""
    with grpc.insecure_channel(engine.engine.address) as channel:
        call = channel.unary_unary("/battleline.v1.LobbyService/ListOpenMatches")
        for size in (FAST.max_request_bytes + 10, FAST.max_message_bytes + 10):
            with pytest.raises(grpc.RpcError) as err:
                call(b"\x1a" + b"\xff\xff\x7f" + b"x" * size, timeout=5)
            assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_metrics_count_errors_by_code(engine: Running) -> None:
    before = metrics.REGISTRY.get_sample_value(
        "battleline_rpc_errors_total", {"method": "JoinMatch", "code": "UNIMPLEMENTED"}
    ) or 0
    with grpc.insecure_channel(engine.engine.address) as channel:
        stub = lobby_pb2_grpc.LobbyServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.JoinMatch(lobby_pb2.JoinMatchRequest(match_id="x"), timeout=5)
    after = metrics.REGISTRY.get_sample_value(
        "battleline_rpc_errors_total", {"method": "JoinMatch", "code": "UNIMPLEMENTED"}
    )
    assert after == before + 1
    port = free_port()
    metrics_http.serve_metrics(port)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert "battleline_rpc_latency_seconds_bucket" in text
    assert "battleline_live_matches" in text


def test_graceful_stop_announces_not_serving(redis_url: str) -> None:
    running = Running(redis_url, replace(FAST, drain_s=1.0))
    try:
        with grpc.insecure_channel(running.engine.address) as channel:
            wait_status(channel, health_pb2.HealthCheckResponse.SERVING)
            stopping = asyncio.run_coroutine_threadsafe(running.engine.stop(), running.loop)
            wait_status(channel, health_pb2.HealthCheckResponse.NOT_SERVING, timeout=0.9)
            stopping.result(10)
        with grpc.insecure_channel(running.engine.address) as channel, pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
    finally:
        running.call(running.storage.close())
        running.loop.call_soon_threadsafe(running.loop.stop)
        running.thread.join(10)


def test_not_serving_while_redis_is_unreachable() -> None:
    running = Running(f"redis://127.0.0.1:{free_port()}/0", FAST)
    try:
        with grpc.insecure_channel(running.engine.address) as channel:
            wait_status(channel, health_pb2.HealthCheckResponse.NOT_SERVING)
    finally:
        running.close()


def test_tls(redis_url: str, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    running = Running(redis_url, replace(FAST, tls_cert=cert, tls_key=key))
    try:
        creds = grpc.ssl_channel_credentials(cert.read_bytes())
        target = f"localhost:{running.engine.port}"
        with grpc.secure_channel(target, creds) as channel:
            wait_status(channel, health_pb2.HealthCheckResponse.SERVING)
        with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
    finally:
        running.close()
