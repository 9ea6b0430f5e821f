"""Per-client limits behind the gateway: the engine counts each browser, not the gateway.

The gateway forwards the browser's address in x-forwarded-for; the engine believes
it only from a trusted proxy (loopback by default), so nobody else can pick an
address to dodge a limit."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from battleline.v1 import lobby_pb2, types_pb2
from battleline_engine.ratelimit import Rate
from tests.engine.harness import OPEN_LIMITS, Client, Engine

from .bridge_client import BridgeClient

TWO_CREATES = dataclasses.replace(OPEN_LIMITS, create_rate=Rate(per_s=0.001, burst=2))
LOCAL_MATCH = lobby_pb2.CreateMatchRequest(
    options=types_pb2.MatchOptions(ruleset="standard"),
    opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL))


@pytest.fixture
def engine(redis_url: str) -> Iterator[Engine]:
    """An engine allowing each client two matches (the default trusts loopback proxies)."""
    running = Engine(redis_url, config=TWO_CREATES)
    yield running
    running.close()


def _creates(client: Client, forwarded_for: str, times: int) -> list[grpc.StatusCode]:
    codes = []
    for _ in range(times):
        try:
            client.lobby.CreateMatch(LOCAL_MATCH, metadata=[("x-forwarded-for", forwarded_for)],
                                     timeout=10)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            codes.append(error.code())  # type: ignore[attr-defined]
    return codes


def test_a_trusted_proxy_gets_a_budget_per_forwarded_address(engine: Engine) -> None:
    client = Client.to(engine.address)
    exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _creates(client, "203.0.113.1", 3) == [grpc.StatusCode.OK] * 2 + [exhausted]
    assert _creates(client, "203.0.113.2", 1) == [grpc.StatusCode.OK]
    client.channel.close()


def test_an_untrusted_peer_cannot_choose_its_address(redis_url: str) -> None:
    untrusting = Engine(redis_url, config=dataclasses.replace(TWO_CREATES, trusted_proxies=()))
    client = Client.to(untrusting.address)
    codes = [*_creates(client, "203.0.113.3", 1), *_creates(client, "203.0.113.4", 1),
             *_creates(client, "203.0.113.5", 1)]
    assert codes == [grpc.StatusCode.OK] * 2 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
    client.channel.close()
    untrusting.close()


def test_the_gateway_forwards_each_browser_address(gateway: str, engine: Engine) -> None:
    """Browsers behind a local ingress (which the gateway believes, like uvicorn's
    default) each get their own budget at the engine."""
    web = BridgeClient(gateway, ProtocolType.CONNECT, json=True)

    def create(browser: str) -> Code | None:
        try:
            web.lobby.CreateMatch(LOCAL_MATCH, metadata=[("x-forwarded-for", browser)])
            return None
        except ConnectError as error:
            return error.code

    assert [create("203.0.113.10") for _ in range(3)] == [None, None, Code.RESOURCE_EXHAUSTED]
    assert create("203.0.113.11") is None
