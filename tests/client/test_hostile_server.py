"""A server's error details are its own bytes: the client library turns whatever a broken
or hostile server sends into its typed errors, never a traceback (the seventh audit made
a RetryInfo of -5 s raise ValueError, and undecodable details DecodeError)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_client.client import Client
from battleline_client.common import RATE_WAITS_S
from battleline_client.errors import BattleLineError, RateLimited

ANSWERS: dict[str, Any] = {}


class Hostile(game_pb2_grpc.GameServiceServicer):
    """Refuses every GetView the way `ANSWERS["mode"]` says."""

    def GetView(self, request: game_pb2.GetViewRequest,
                context: grpc.ServicerContext) -> game_pb2.GetViewResponse:
        if ANSWERS["mode"] == "garbage":
            context.set_trailing_metadata((("grpc-status-details-bin", b"\xff\xff\xff\x00junk"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy")
        info, retry = any_pb2.Any(), any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason="rate-limited", domain="battleline.v1"))
        retry.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=-5)))
        context.abort_with_status(rpc_status.to_status(status_pb2.Status(
            code=code_pb2.RESOURCE_EXHAUSTED, message="slow down", details=[info, retry])))
        raise AssertionError("abort raises")


@pytest.fixture
def hostile() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(2))
    game_pb2_grpc.add_GameServiceServicer_to_server(Hostile(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


@pytest.mark.parametrize("mode", ["negative-delay", "garbage"])
def test_a_hostile_servers_errors_reach_the_caller_typed(hostile: str, mode: str) -> None:
    ANSWERS["mode"] = mode
    started = time.monotonic()
    with Client(hostile, timeout=5) as client, pytest.raises(BattleLineError) as raised:
        client.view("A" * 16)
    assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    if mode == "negative-delay":  # waited 50 ms a time (not 0) for 15 s, then given up
        assert isinstance(raised.value, RateLimited) and raised.value.retry_after == 0
        assert time.monotonic() - started < RATE_WAITS_S + 5
    else:
        assert raised.value.reason == ""
