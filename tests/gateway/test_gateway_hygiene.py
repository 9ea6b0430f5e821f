"""Request bodies the web gateway refuses itself (fourth audit, F3 and F5): one past
MAX_REQUEST_BYTES before it is decoded, since decoding JSON costs the event loop that
serve's engine shares (256 KiB took 0.1 s of CPU); one that is not the method's request
with a fixed INVALID_ARGUMENT `bad-request`, never a decoder's text (json's, protobuf's,
Python's) nor more than 24 characters of the caller's value."""

from __future__ import annotations

import gzip
import json
import logging
import struct
import time
from collections.abc import Iterator
from urllib.parse import unquote

import pytest

from battleline_gateway.bridge import MAX_REQUEST_BYTES
from tests.engine.harness import Engine

from .conftest import GatewayThread
from .plain_http import request
from .test_header_hygiene import _code_and_reason

LIST = "/battleline.v1.LobbyService/ListOpenMatches"
SUBMIT = "/battleline.v1.GameService/SubmitAction"
WATCH = "/battleline.v1.WatchService/Watch"
JSON = "application/json"
GRPC_WEB = "application/grpc-web+proto"
CONNECT_STREAM = "application/connect+json"
# What a decoder's own text (or a traceback) would show.
INTERNALS = ("google.protobuf", "Traceback", "Failed to", "unmarshal", "decompress", "line ",
             "Error", "json.", "int()", "recursion", "literal", "ParseError")
LONG = "Z" * 5000
# JSON that is not a SubmitActionRequest, each once a decoder's message (the audit's F5).
NOT_A_SUBMIT = [
    pytest.param('{"matchId": ' + "[" * 3000 + "]" * 3000 + "}", id="deep-nesting"),
    pytest.param(json.dumps({"matchId": {"x": 1}}), id="wrong-type"),
    pytest.param(json.dumps({"matchId": "abc", "expectedVersion": LONG[:4000]}),
                 id="long-bad-integer"),
    pytest.param(json.dumps({"matchId": "abc", "expectedVersion": "1e999"}), id="bad-integer"),
    pytest.param(json.dumps({"matchId": LONG[:4000] + "\ud800"}), id="lone-surrogate"),
    pytest.param('{"matchId": "' + LONG[:4000], id="truncated"),
    # protobuf's JSON parser read these as an empty request (twenty-sixth session's
    # walkthrough: `[]` listed the lobby, and GetView answered `bad-match-id`)
    pytest.param("[]", id="array"),
    pytest.param(' "abc"', id="string"),
]


def _post(url: str, path: str, content_type: str, body: bytes,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """POST `body` as it is with its content type."""
    return request(url, "POST", path, body, {"content-type": content_type, **(headers or {})})


def _envelope(message: bytes) -> bytes:
    """One message of a stream (Connect streaming and gRPC-Web frame them alike)."""
    return struct.pack(">BI", 0, len(message)) + message


def _grpc_web_status(headers: dict[str, str], body: bytes) -> tuple[str, str]:
    """A gRPC-Web call's status and message: in the headers of a trailers-only answer,
    else in the trailer frame that ends the body."""
    if "grpc-status" not in headers:
        assert body[:1] == b"\x80", body[:100]  # the trailer frame
        fields = dict(line.split(":", 1) for line in body[5:].decode().split("\r\n") if line)
        headers = {name.strip().lower(): value.strip() for name, value in fields.items()}
    return headers["grpc-status"], unquote(headers.get("grpc-message", ""))


def _connect_error(status: int, body: bytes) -> dict[str, object]:
    """A Connect unary error; fails if the call was served."""
    assert status >= 400, (status, body[:200])
    error = json.loads(body)
    assert isinstance(error, dict), error
    return error


@pytest.fixture
def web(engine: Engine) -> Iterator[GatewayThread]:
    """A gateway in front of `engine`, whose event loop thread's CPU time can be read."""
    running = GatewayThread(engine.address)
    yield running
    running.stop()


def _loop_cpu_s(gateway: GatewayThread) -> float:
    """The CPU time of the gateway's event loop thread, where requests are decoded."""
    assert gateway.thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(gateway.thread.ident))


def test_a_body_past_the_cap_is_refused_before_it_is_decoded(web: GatewayThread) -> None:
    """Bytes that are no JSON at all, one past the cap, get RESOURCE_EXHAUSTED, not the
    INVALID_ARGUMENT decoding would give, in each protocol and however well they compress;
    250 KB of JSON costs the event loop a few ms, not the 0.1 s decoding it took."""
    junk = b"{" + b"!" * MAX_REQUEST_BYTES
    status, _, body = _post(web.url, SUBMIT, JSON, junk)
    assert status == 429, (status, body[:200])
    assert _connect_error(status, body)["code"] == "resource_exhausted"
    status, _, body = _post(web.url, SUBMIT, JSON, gzip.compress(junk * 4),
                            {"content-encoding": "gzip"})
    assert _connect_error(status, body)["code"] == "resource_exhausted"
    status, headers, body = _post(web.url, SUBMIT, GRPC_WEB, _envelope(b"\xff" + junk))
    assert status == 200 and _grpc_web_status(headers, body)[0] == "8", (headers, body[:200])
    status, _, body = _post(web.url, WATCH, CONNECT_STREAM, _envelope(junk))
    assert status == 200 and body[0] == 2, body[:200]  # the stream's end message
    assert json.loads(body[5:])["error"]["code"] == "resource_exhausted", body[:200]

    actions = json.dumps({"matchId": "AAAAAAAAAAAAAAAAA", "actionId": "a",
                          "actions": ["a"] * 48_000}).encode()
    assert 200_000 < len(actions) < 256 * 1024  # what the gateway decoded until now
    before = _loop_cpu_s(web)
    for _ in range(10):
        status, _, body = _post(web.url, SUBMIT, JSON, actions)
        assert _connect_error(status, body)["code"] == "resource_exhausted"
    assert (_loop_cpu_s(web) - before) / 10 < 0.02  # decoding each took 0.07-0.1 s


def test_the_cap_is_exact_and_far_above_what_a_client_sends(web: GatewayThread) -> None:
    """A body of exactly MAX_REQUEST_BYTES is served, one byte more refused; the largest
    request the engine takes (16 actions, every id and text at its longest) is a
    fraction of it."""
    empty = b"{}"
    just = empty[:1] + b" " * (MAX_REQUEST_BYTES - len(empty)) + empty[1:]
    status, _, body = _post(web.url, LIST, JSON, just)
    assert status == 200 and isinstance(json.loads(body), dict), (status, body[:200])
    status, _, body = _post(web.url, LIST, JSON, b" " + just)
    assert _connect_error(status, body)["code"] == "resource_exhausted"

    largest = json.dumps({"matchId": "m" * 64, "expectedVersion": "18446744073709551615",
                          "actionId": "a" * 64, "actions": ["x" * 64] * 16,
                          "includePosition": True}, indent=2).encode()
    assert len(largest) * 4 < MAX_REQUEST_BYTES
    status, _, body = _post(web.url, SUBMIT, JSON, largest)
    error = _connect_error(status, body)  # decoded and forwarded: the engine's refusal
    assert error["code"] != "resource_exhausted", error
    assert _code_and_reason(error)[1] != "bad-request", error


def _assert_plain(message: str, value: str) -> None:
    """`message` shows no decoder text and at most 24 characters of `value`."""
    assert not any(word in message for word in INTERNALS), message
    assert not any(value[i:i + 25] in message for i in range(len(value) - 24)), message


@pytest.mark.parametrize("body", NOT_A_SUBMIT)
def test_json_that_is_not_the_request_gets_a_fixed_message(
        web: GatewayThread, body: str, caplog: pytest.LogCaptureFixture) -> None:
    """Each of these once got json's or protobuf's text, one with 199 of its characters."""
    with caplog.at_level(logging.WARNING):
        status, _, answer = _post(web.url, SUBMIT, JSON, body.encode())
    error = _connect_error(status, answer)
    assert status == 400 and _code_and_reason(error) == ("invalid_argument", "bad-request")
    assert error["message"] == (
        "request body is not a valid battleline.v1.SubmitActionRequest in JSON"), error
    _assert_plain(str(error["message"]), body)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_other_undecodable_bodies_get_a_fixed_message(web: GatewayThread) -> None:
    """Binary protobuf, a Watch stream's message, gRPC-Web, gzip: the same plain refusal."""
    junk = b"\xff" * 20 + LONG.encode()[:4000]
    status, _, body = _post(web.url, SUBMIT, "application/proto", junk)
    error = _connect_error(status, body)
    assert _code_and_reason(error) == ("invalid_argument", "bad-request")
    assert error["message"] == (
        "request body is not a valid battleline.v1.SubmitActionRequest in binary protobuf")

    status, _, body = _post(web.url, WATCH, CONNECT_STREAM, _envelope(b'{"matchId": 7}'))
    assert status == 200 and body[0] == 2, body[:200]
    error = json.loads(body[5:])["error"]
    assert _code_and_reason(error) == ("invalid_argument", "bad-request")
    assert error["message"] == "request body is not a valid battleline.v1.WatchRequest in JSON"

    status, headers, body = _post(web.url, SUBMIT, GRPC_WEB, _envelope(junk))
    code, message = _grpc_web_status(headers, body)
    assert (status, code) == (200, "3"), (headers, body[:200])
    _assert_plain(message, junk.decode("latin-1"))

    status, _, body = _post(web.url, SUBMIT, JSON, b"\x1f\x8b" + junk,
                            {"content-encoding": "gzip"})
    error = _connect_error(status, body)
    assert _code_and_reason(error) == ("invalid_argument", "bad-request")
    assert error["message"] == "request body is not valid gzip"


@pytest.mark.parametrize("header", ["connect-timeout-ms", "connect-protocol-version",
                                    "content-encoding"])
def test_a_bad_protocol_header_is_refused_without_its_value(web: GatewayThread,
                                                            header: str) -> None:
    """Tenth audit, F4: connectrpc refuses these itself, and its message quoted the whole
    value (15,000 of 15,000 characters): now at most a short plain token of it."""
    value = "<img src=x onerror=alert(1)>" + LONG[:4000]
    status, _, body = _post(web.url, LIST, JSON, b"{}", {header: value})
    assert status >= 400, (status, body[:200])
    message = str(json.loads(body)["message"])
    _assert_plain(message, value)
    assert "<img" not in message, message
    # A plain value connectrpc does not know is still named in its refusal.
    status, _, body = _post(web.url, LIST, JSON, b"{}", {header: "x9"})
    assert status >= 400 and "x9" in str(json.loads(body)["message"]), body[:200]
