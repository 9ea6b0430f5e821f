"""The web port's request rate per client address (fourth audit, F3): a client flooding
8 KiB bodies that fail to decode made the engine's gRPC port 20 times slower, since the
gateway decoded each in serve's event loop and nothing bounded how often one address
asked. Past its burst a request is refused before its body is decoded, in the protocol the
client speaks; other addresses, behind a trusted proxy, keep their own budget."""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2

from battleline.v1 import game_pb2, lobby_pb2, watch_pb2
from battleline_engine.ratelimit import Rate
from battleline_gateway import bridge
from battleline_gateway.limits import WebLimits
from tests.engine.harness import SEATS, Engine

from .bridge_client import BridgeClient
from .conftest import GatewayThread
from .test_bridge import PROTOCOLS

LIST = "battleline.v1.LobbyService/ListOpenMatches"
SUBMIT = "/battleline.v1.GameService/SubmitAction"
PROXY = "127.0.0.0/8"  # every test client is a trusted proxy, naming its browser
TOO_MANY = "too many web requests: retry in "


def _limited(engine: Engine, burst: float, **options: Any) -> GatewayThread:
    """A gateway before `engine` whose clients get `burst` requests (and no refill to
    speak of during a test)."""
    return GatewayThread(engine.address, limits=WebLimits(request_rate=Rate(0.001, burst)),
                         **options)


@pytest.fixture
def proxied(engine: Engine) -> Iterator[GatewayThread]:
    """A gateway trusting loopback as its proxy, 3 requests per forwarded address."""
    running = _limited(engine, 3, trusted_proxies=(PROXY,))
    yield running
    running.stop()


def _late_failing_submit() -> bytes:
    """A SubmitAction of almost MAX_REQUEST_BYTES of JSON, invalid only at its end: all
    the decoding work, then INVALID_ARGUMENT (the audit's flood)."""
    tail = b'"a"], "expectedVersion": "x"}'
    head = b'{"matchId": "m", "actionId": "a", "actions": ['
    count = (bridge.MAX_REQUEST_BYTES - 64 - len(head) - len(tail)) // 5
    return head + b'"a", ' * count + tail


def _status(url: str, path: str = LIST, forwarded_for: str | None = None, *,
            body: bool = True) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body of a POST of `{}` (a GET of a page file: any other
    path) from the proxy, for the browser `forwarded_for` if given. `body=False`: left
    unread (b""), as a refusal's can be lost to a reset: the gateway answers 429 before
    it reads the request's body, and closing with that body unread resets the connection
    (seen in about 1 run in 7 since the page binds its own sockets)."""
    headers = {"x-forwarded-for": forwarded_for} if forwarded_for else {}
    request = urllib.request.Request(url + path, headers=headers)
    if path.startswith("battleline.v1."):
        request.data, request.method = b"{}", "POST"
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read() if body else b""
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read() if body else b""


def _codes(url: str, forwarded_for: str | None, times: int) -> list[int]:
    """The statuses alone (see `_status`'s `body`)."""
    return [_status(url, forwarded_for=forwarded_for, body=False)[0] for _ in range(times)]


def test_past_the_burst_a_call_is_refused_before_its_body_is_decoded(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[str] = []
    decode = bridge._PlainCodec.decode

    def counted(codec: Any, data: bytes | bytearray, message_class: Any) -> Any:
        decoded.append(message_class.DESCRIPTOR.name)
        return decode(codec, data, message_class)

    monkeypatch.setattr(bridge._PlainCodec, "decode", counted)
    gateway = _limited(engine, 6)
    body = _late_failing_submit()
    parts = urlsplit(gateway.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)

    def submit() -> tuple[int, dict[str, Any]]:
        connection.request("POST", SUBMIT, body=body, headers={"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    try:
        assert submit()[0] == 400  # the first request: connectrpc's set-up out of the timing
        answers = [submit() for _ in range(5)]
        refusals = [submit() for _ in range(100)]  # on the same connection: bodies skipped
    finally:
        connection.close()
        gateway.stop()
    assert all(status == 400 and error["code"] == "invalid_argument"
               for status, error in answers), answers[0]
    assert all(status == 429 and error["code"] == "resource_exhausted"
               and error["message"].startswith(TOO_MANY) for status, error in refusals), (
        refusals[0])
    assert [detail["type"] for detail in refusals[0][1]["details"]] == [
        "google.rpc.ErrorInfo", "google.rpc.RetryInfo"]
    assert len(decoded) == 6  # the burst's, none of the refused bodies


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_refusal_speaks_the_callers_protocol(engine: Engine, name: str) -> None:
    """Connect (JSON and binary) and gRPC-Web clients read RESOURCE_EXHAUSTED with the
    engine's reason and a RetryInfo, for a unary call and a Watch alike."""
    gateway = _limited(engine, 2)
    web = BridgeClient(gateway.url, *PROTOCOLS[name])
    try:
        for _ in range(2):
            web.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest())
        with pytest.raises(ConnectError) as unary:
            web.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest())
        with pytest.raises(ConnectError) as stream:
            next(iter(web.watch("no-such-match")))
    finally:
        gateway.stop()
    for error in (unary.value, stream.value):
        assert error.code == Code.RESOURCE_EXHAUSTED and str(error).startswith(TOO_MANY)
        infos = [error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
                 for detail in error.details if detail.type_name == "google.rpc.ErrorInfo"]
        assert [(info.domain, info.reason) for info in infos] == [
            ("battleline.v1", "rate-limited")]
        assert any(detail.type_name == "google.rpc.RetryInfo" for detail in error.details)


def test_each_forwarded_address_has_its_own_budget(proxied: GatewayThread) -> None:
    """Behind a trusted proxy each browser counts on its own (an IPv6 one as its /64),
    and the proxy's own requests are not counted."""
    url = proxied.url
    assert _codes(url, "203.0.113.1", 4) == [200, 200, 200, 429]
    assert _codes(url, "203.0.113.2", 1) == [200]
    assert _codes(url, None, 10) == [200] * 10
    assert _codes(url, "2001:db8:1:2::1", 2) + _codes(url, "2001:db8:1:2::2", 2) == [
        200, 200, 200, 429]
    assert _codes(url, "2001:db8:1:3::1", 1) == [200]


def test_a_watch_counts_once_when_opened(proxied: GatewayThread) -> None:
    """However many events a stream brings, it took one request of the budget."""
    web = BridgeClient(proxied.url, ProtocolType.CONNECT, json=True)
    browser = [("x-forwarded-for", "203.0.113.7")]
    created = web.create()  # by the proxy itself: not counted
    stream = iter(web.watcher.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                    metadata=browser))
    assert next(stream).HasField("snapshot")
    tokens = (created.seat_token, created.other_seat_token)
    for _ in range(4):
        seat = SEATS.index(web.view(created.match_id, None).current_seat)
        mine = web.view(created.match_id, tokens[seat])
        web.submit(created.match_id, tokens[seat], mine.version, [mine.legal_actions[0]])
    assert all(next(stream).HasField("event") for _ in range(4))
    views: list[Code | None] = []
    for _ in range(3):
        try:
            web.game.GetView(game_pb2.GetViewRequest(match_id=created.match_id),
                             metadata=browser)
            views.append(None)
        except ConnectError as error:
            views.append(error.code)
    assert views == [None, None, Code.RESOURCE_EXHAUSTED]


def test_the_page_loads_while_another_address_is_refused(engine: Engine) -> None:
    """Page files count too, refused with a plain 429 and Retry-After; a flood from one
    address leaves another the whole page."""
    gateway = _limited(engine, 10, trusted_proxies=(PROXY,))
    url = gateway.url
    try:
        assert _codes(url, "203.0.113.1", 12) == [200] * 10 + [429] * 2
        status, headers, body = _status(url, "", "203.0.113.1")
        assert status == 429 and headers["content-type"] == "text/plain", (status, headers)
        assert int(headers["retry-after"]) >= 1 and body.decode().startswith(TOO_MANY)
        status, _, page = _status(url, "", "203.0.113.2")
        assets = re.findall(r'(?:src|href)="\.?/(assets/[^"]+)"', page.decode())
        files = [_status(url, asset, "203.0.113.2")[0] for asset in assets]
    finally:
        gateway.stop()
    assert status == 200 and assets and files == [200] * len(assets)


def test_calls_the_bridge_refuses_itself_count_too(proxied: GatewayThread) -> None:
    """An unknown method or a verb the bridge does not serve is answered before its
    interceptors run: counted at the door instead (the fifth audit sent 250 of each)."""
    browser = "203.0.113.70"
    codes = [_status(proxied.url, "battleline.v1.GameService/NoSuchMethod", browser,
                     body=False)[0] for _ in range(5)]
    assert codes[:3] != [429] * 3 and codes[3:] == [429, 429]
    request = urllib.request.Request(proxied.url + LIST, method="OPTIONS",
                                     headers={"x-forwarded-for": "203.0.113.71"})
    options = []
    for _ in range(5):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                options.append(response.status)
        except urllib.error.HTTPError as error:
            options.append(error.code)
    assert options[3:] == [429, 429]
