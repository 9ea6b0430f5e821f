"""Per-client limits behind the gateway: the engine counts each browser, not the gateway,
and nobody else can choose the address they are counted under.

The engine believes a forwarded address only from a configured proxy (none by default)
or from a gateway presenting the deployment's secret: under `battleline serve` the
gateway shares loopback with every local user, so its address proves nothing. The
gateway believes x-forwarded-for only from its own configured proxies (none by default).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from battleline.v1 import lobby_pb2, types_pb2
from battleline_engine.auth import GATEWAY_CLIENT, GATEWAY_SECRET, address_key
from battleline_engine.ratelimit import Rate
from battleline_engine.runtime import EngineConfig
from tests.engine.harness import OPEN_LIMITS, Client, Engine

from .bridge_client import BridgeClient
from .conftest import GatewayThread

SECRET = "test-gateway-secret-0123456789"
TWO_CREATES = dataclasses.replace(OPEN_LIMITS, create_rate=Rate(per_s=0.001, burst=2),
                                  gateway_secret=SECRET)
LOCAL_MATCH = lobby_pb2.CreateMatchRequest(
    options=types_pb2.MatchOptions(ruleset="standard"),
    opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL))
OK, EXHAUSTED = grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.fixture
def engine(redis_url: str) -> Iterator[Engine]:
    """An engine allowing each client two matches, trusting no proxy (the default)."""
    running = Engine(redis_url, config=TWO_CREATES)
    yield running
    running.close()


def _creates(client: Client, metadata: list[tuple[str, str]], times: int,
             ) -> list[grpc.StatusCode]:
    codes = []
    for _ in range(times):
        try:
            client.lobby.CreateMatch(LOCAL_MATCH, metadata=metadata, timeout=10)
            codes.append(OK)
        except grpc.RpcError as error:
            codes.append(error.code())  # type: ignore[attr-defined]
    return codes


def test_no_proxy_is_trusted_by_default() -> None:
    assert EngineConfig().trusted_proxies == ()


def test_a_loopback_peer_cannot_choose_its_address(engine: Engine) -> None:
    """The report's bypass: a fresh x-forwarded-for per call from 127.0.0.1."""
    client = Client.to(engine.address)
    codes = [code for n in range(3)
             for code in _creates(client, [("x-forwarded-for", f"203.0.113.{n}")], 1)]
    assert codes == [OK, OK, EXHAUSTED]
    client.channel.close()


def test_a_wrong_gateway_secret_is_no_proof(engine: Engine) -> None:
    client = Client.to(engine.address)
    codes = [code for n in range(3) for code in _creates(
        client, [(GATEWAY_SECRET, "guessed-" + SECRET[8:]), (GATEWAY_CLIENT, f"203.0.113.{n}")],
        1)]
    assert codes == [OK, OK, EXHAUSTED]
    client.channel.close()


def test_the_gateway_secret_gets_a_budget_per_client(engine: Engine) -> None:
    client = Client.to(engine.address)
    first = [(GATEWAY_SECRET, SECRET), (GATEWAY_CLIENT, "203.0.113.1")]
    assert _creates(client, first, 3) == [OK, OK, EXHAUSTED]
    assert _creates(client, [(GATEWAY_SECRET, SECRET), (GATEWAY_CLIENT, "203.0.113.2")], 1) == [OK]
    client.channel.close()


def test_a_configured_proxy_gets_a_budget_per_forwarded_address(redis_url: str) -> None:
    proxied = Engine(redis_url, config=dataclasses.replace(
        TWO_CREATES, trusted_proxies=("127.0.0.0/8",)))
    client = Client.to(proxied.address)
    # The proxy appends the peer it saw: the last entry counts, not the client's own.
    assert _creates(client, [("x-forwarded-for", "198.51.100.9, 203.0.113.1")], 3) == [
        OK, OK, EXHAUSTED]
    assert _creates(client, [("x-forwarded-for", "203.0.113.2")], 1) == [OK]
    assert _creates(client, [("x-forwarded-for", "not an address")], 3) == [OK, OK, EXHAUSTED]
    client.channel.close()
    proxied.close()


def test_an_ipv6_client_counts_as_its_whole_64(redis_url: str) -> None:
    """A subscriber holds a whole /64: a new address in it is no new budget."""
    proxied = Engine(redis_url, config=dataclasses.replace(
        TWO_CREATES, trusted_proxies=("127.0.0.0/8",)))
    client = Client.to(proxied.address)
    codes = [code for n in range(1, 4)
             for code in _creates(client, [("x-forwarded-for", f"2001:db8:1:2::{n:x}")], 1)]
    assert codes == [OK, OK, EXHAUSTED]
    assert _creates(client, [("x-forwarded-for", "2001:db8:1:3::1")], 1) == [OK]
    client.channel.close()
    proxied.close()


def test_every_loopback_address_is_one_client(redis_url: str) -> None:
    """Sixth audit: any local user may send from any of 127.0.0.0/8's 16 million
    addresses, and each was a new budget (120 creates in 6 s from six of them)."""
    proxied = Engine(redis_url, config=dataclasses.replace(
        TWO_CREATES, trusted_proxies=("127.0.0.0/8",)))
    client = Client.to(proxied.address)
    codes = [code for host in ("127.0.0.5", "127.1.2.3", "::1")
             for code in _creates(client, [("x-forwarded-for", host)], 1)]
    assert codes == [OK, OK, EXHAUSTED]
    client.channel.close()
    proxied.close()


@pytest.mark.parametrize(("host", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
    ("::1", "loopback"),
    ("127.0.0.1", "loopback"),
    ("127.45.6.7", "loopback"),
    ("::ffff:127.0.0.9", "loopback"),
    ("unix:/tmp/socket", "unix:/tmp/socket"),
])
def test_the_limiter_key_of_an_address(host: str, key: str) -> None:
    assert address_key(host) == key


def _web_creates(url: str, forwarded_for: str, times: int) -> list[Code | None]:
    web = BridgeClient(url, ProtocolType.CONNECT, json=True)
    out: list[Code | None] = []
    for _ in range(times):
        try:
            web.lobby.CreateMatch(LOCAL_MATCH, metadata=[("x-forwarded-for", forwarded_for)])
            out.append(None)
        except ConnectError as error:
            out.append(error.code)
    return out


def test_the_gateway_forwards_each_browser_address(engine: Engine) -> None:
    """Browsers behind an ingress the gateway is told to trust each get their own budget."""
    gateway = GatewayThread(engine.address, engine_secret=SECRET,
                            trusted_proxies=("127.0.0.0/8",))
    try:
        assert _web_creates(gateway.url, "203.0.113.10", 3) == [
            None, None, Code.RESOURCE_EXHAUSTED]
        assert _web_creates(gateway.url, "203.0.113.11", 1) == [None]
    finally:
        gateway.stop()


def test_a_browser_cannot_choose_its_address_at_the_gateway(engine: Engine) -> None:
    """Without a configured proxy the gateway ignores x-forwarded-for (uvicorn believed
    it from 127.0.0.1 by default): every call here comes from the one local client."""
    gateway = GatewayThread(engine.address, engine_secret=SECRET)
    try:
        codes = [code for n in range(3) for code in _web_creates(gateway.url, f"203.0.113.{n}", 1)]
        assert codes == [None, None, Code.RESOURCE_EXHAUSTED]
    finally:
        gateway.stop()
