"""Header bytes a gRPC channel cannot carry, sent to a real `battleline serve`'s web port:
each is refused with a precise Connect error (the engine's code and ErrorInfo reason),
never with grpc's or Python's internal text, a traceback, or grpc's own stderr block.
A failure of grpc itself (an engine out of reach) passes on its code, not its text."""

from __future__ import annotations

import base64
import http.client
import json
import struct
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2

from .bridge_client import BridgeClient
from .conftest import GatewayThread
from .test_web_limits import _web_front

VIEW = "/battleline.v1.GameService/GetView"
WATCH = "/battleline.v1.WatchService/Watch"
MATCH = json.dumps({"matchId": "AAAAAAAAAAAAAAAAA"}).encode()
BAD_TOKEN = ("unauthenticated", "bad-token")
# (header, value, expected Connect code and ErrorInfo reason)
BAD_HEADERS = [
    ("authorization", b"Bearer \xff\xfe", BAD_TOKEN),  # not UTF-8
    ("authorization", b"Bearer a\x01b", BAD_TOKEN),  # control characters
    ("authorization", b"Bearer a\x7fb", BAD_TOKEN),
    ("authorization", b"Bearer " + b"x" * 16_000, BAD_TOKEN),  # past gRPC's metadata size
    ("user-agent", b"caf\xe9", ("invalid_argument", "bad-header")),  # not forwarded, not UTF-8
]
INTERNALS = ("grpc", "0x", "execute_batch", "codec", "x-battleline", "Traceback")


def _post(url: str, path: str, content_type: str, body: bytes, header: tuple[str, bytes],
          ) -> tuple[int, bytes]:
    """POST with one raw header value (http.client sends the bytes as they are)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.putrequest("POST", path)
        connection.putheader("content-type", content_type)
        connection.putheader(*header)
        connection.putheader("content-length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _code_and_reason(error: dict[str, object]) -> tuple[object, str]:
    """A Connect JSON error's code and its ErrorInfo reason, checking the domain."""
    details = error.get("details")
    assert isinstance(details, list) and len(details) == 1, error
    assert details[0]["type"] == "google.rpc.ErrorInfo", error
    info = error_details_pb2.ErrorInfo.FromString(
        base64.b64decode(details[0]["value"] + "=="))
    assert info.domain == "battleline.v1", info
    return error["code"], info.reason


@pytest.mark.timeout(60)
def test_headers_grpc_cannot_carry_get_a_precise_refusal(redis_url: str,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with _web_front("serve", redis_url, log) as (url, _):
        for name, value, expected in BAD_HEADERS:
            status, body = _post(url, VIEW, "application/json", MATCH, (name, value))
            assert status in (400, 401), (name, value[:20], status, body[:300])
            error = json.loads(body)
            assert _code_and_reason(error) == expected, (name, value[:20])
            assert not any(word in error["message"] for word in INTERNALS), error["message"]
        # a Watch stream over Connect: the refusal is the stream's end message
        envelope = struct.pack(">BI", 0, len(MATCH)) + MATCH
        status, body = _post(url, WATCH, "application/connect+json", envelope,
                             ("authorization", b"Bearer a\x01b"))
        assert status == 200 and body[0] == 2, body[:100]  # end of stream
        assert _code_and_reason(json.loads(body[5:])["error"]) == BAD_TOKEN
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI" not in text
    assert all(json.loads(line)["level"] for line in text.splitlines())  # no grpc block


def test_a_grpc_failure_passes_on_its_code_not_its_text() -> None:
    """grpc's own text for an engine out of reach names the engine's address."""
    gateway = GatewayThread("127.0.0.1:9")  # the discard port: nothing listens
    try:
        with pytest.raises(ConnectError) as failed:
            BridgeClient(gateway.url, ProtocolType.CONNECT, json=True).view(
                "AAAAAAAAAAAAAAAAA", None)
        assert failed.value.code == Code.UNAVAILABLE
        assert "127.0.0.1" not in failed.value.message and "ipv4" not in failed.value.message
    finally:
        gateway.stop()
