"""The web port under a flood, through a real `battleline serve` and a real `battleline
web` on its own (as deploy/ runs it): connections past the cap are closed at once, a
request that does not arrive in time is cut, the engine's gRPC port keeps answering, and
the log does not repeat itself (issue #14). One address cannot hold the whole port."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from grpc_health.v1 import health_pb2

from battleline_gateway.limits import WebLimits
from tests.engine.harness import SEATS, Engine
from tests.engine.test_serve_command import _serving
from tests.processes import BATTLELINE, start_serve, stop_serve, web_url

from .bridge_client import BridgeClient
from .conftest import GatewayThread

CAP = 100
FLOOD = 300
# Loopback aliases (Linux answers all of 127/8): the flood comes from several addresses,
# each under the per-address cap, so that it is the port's own cap that refuses.
FLOODERS = [f"127.0.0.{n}" for n in range(1, 6)]


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (without waiting: a socket with a timeout
    waits that long for data even when read with MSG_DONTWAIT, and then counted as
    closed, so an open socket looked closed once the server's deadline had passed)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True
    finally:
        sock.settimeout(timeout)


@contextlib.contextmanager
def _web_front(kind: str, redis_url: str, log: Path, request_rate: str | None = None,
               ) -> Iterator[tuple[str, str]]:
    """A web port capped at CAP connections and a 2 s request deadline, logging to `log`:
    `serve`'s own, or a `battleline web` before a serve with no web port. `request_rate`
    goes to serve as --web-request-rate, to web as BATTLELINE_WEB_REQUEST_RATE. Yields
    the page's URL and the engine's address, and stops what it started."""
    started: list[subprocess.Popen[str]] = []
    rate = ["--web-request-rate", request_rate] if request_rate else []
    rate_env = {"BATTLELINE_WEB_REQUEST_RATE": request_rate} if request_rate else {}
    try:
        with log.open("w") as err:
            if kind == "serve":
                process, address = start_serve(
                    "--redis-url", redis_url, "--no-ai", "--web-port", "0",
                    "--web-max-connections", str(CAP), "--web-request-timeout", "2", *rate,
                    stderr=err)
                started.append(process)
                url = web_url(process)
            else:
                process, address = start_serve("--redis-url", redis_url, "--no-ai", "--no-web")
                started.append(process)
                web = subprocess.Popen(
                    [BATTLELINE, "web", "--engine", address, "--port", "0",
                     "--max-connections", str(CAP), "--request-timeout", "2"],
                    stdout=subprocess.PIPE, stderr=err, text=True,
                    env={**os.environ, **rate_env})
                started.append(web)
                assert web.stdout is not None
                line = web.stdout.readline()  # "battleline web page at URL (engine ADDRESS)"
                assert line.startswith("battleline web page at "), line
                url = line.split()[4]
        yield url, address
    finally:
        for process in reversed(started):
            stop_serve(process)
        assert all(process.returncode == 0 for process in started)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["serve", "web"])
def test_a_flooded_web_port_leaves_the_engine_serving(kind: str, redis_url: str,
                                                      tmp_path: Path) -> None:
    log = tmp_path / "web.log"
    with _web_front(kind, redis_url, log) as (page_url, address), contextlib.ExitStack() as held:
        url = urlsplit(page_url)
        target = (url.hostname or "127.0.0.1", url.port or 80)
        sockets = [held.enter_context(socket.create_connection(
            target, timeout=5, source_address=(FLOODERS[n % len(FLOODERS)], 0)))
                   for n in range(FLOOD)]
        time.sleep(1.0)
        refused = sum(_closed(s) for s in sockets)
        assert refused >= FLOOD - CAP - 5, refused  # past the cap: closed at once
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING

        slow = socket.create_connection(target, timeout=5)
        slow.sendall(b"GET / HTTP/1.1\r\n")
        started = time.monotonic()
        while not _closed(slow) and time.monotonic() - started < 10:
            slow.sendall(b"X-Slow: 1\r\n")  # a header line every 0.2 s, never finishing
            time.sleep(0.2)
        assert time.monotonic() - started < 5, "a request trickling in was never cut"

        deadline = time.monotonic() + 6
        while not all(_closed(s) for s in sockets) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_closed(s) for s in sockets), "idle connections were kept open"
        with socket.create_connection(target, timeout=5) as page:  # served again
            page.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert page.recv(12).startswith(b"HTTP/1.1 200")
        for _ in range(60):  # junk (a TLS hello) makes the web server warn each time
            with socket.create_connection(target, timeout=5) as junk:
                junk.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")
                junk.recv(100)
    lines = log.read_text().splitlines()
    refusals = [line for line in lines if "connection refused" in line]
    assert 1 <= len(refusals) <= 20, len(refusals)  # a flood of one warning is cut short
    invalid = [line for line in lines if "Invalid HTTP request" in line]
    assert 1 <= len(invalid) <= 20, len(invalid)  # uvicorn's own warnings too
    assert all(json.loads(line)["level"] for line in lines)  # for a log collector


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["serve", "web"])
def test_the_request_rate_reaches_the_web_port(kind: str, redis_url: str,
                                               tmp_path: Path) -> None:
    """1 request a second per address: a burst of 10 (the least), then 429."""
    with _web_front(kind, redis_url, tmp_path / "web.log", request_rate="1") as (url, _):
        codes = [_get(url)[0] for _ in range(14)]
    assert codes[:10] == [200] * 10 and 429 in codes[10:], codes


PER_ADDRESS = 64  # the per-address cap's default
NO_ENGINE = "127.0.0.1:9"  # the page needs none: nothing listens at the discard port


def _hold(stack: contextlib.ExitStack, url: str, source: str, count: int,
          ) -> list[socket.socket]:
    """`count` idle connections to the page at `url`, from the address `source`."""
    parts = urlsplit(url)
    target = (parts.hostname or "", parts.port or 80)
    return [stack.enter_context(socket.create_connection(
        target, timeout=5, source_address=(source, 0))) for _ in range(count)]


def _page(url: str, source: str) -> bytes:
    """The status line of the page fetched from `source` (b"" if refused)."""
    with contextlib.ExitStack() as stack:
        page = _hold(stack, url, source, 1)[0]
        with contextlib.suppress(OSError):
            page.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return page.recv(12)
        return b""


def test_one_address_cannot_hold_the_whole_web_port() -> None:
    """One client held every connection (reopening each the deadline closed) and locked
    every browser out; now an address holds at most its cap (another loopback address
    is the same local client: sixth audit), and at the cap its oldest connection that
    sent no request gives way to a new one (tenth audit: one local user's 64 idle
    connections refused every other local browser's page, 48 of 48): another local
    browser gets the page, as a trusted proxy's connection does, and a closed connection
    frees its place."""
    gateway = GatewayThread(NO_ENGINE, trusted_proxies=("127.0.0.3/32",),
                            limits=WebLimits(max_connections=100))
    try:
        with contextlib.ExitStack() as held:
            flood = _hold(held, gateway.url, "127.0.0.1", 120)
            time.sleep(0.5)
            assert sum(_closed(s) for s in flood) == 120 - PER_ADDRESS
            assert _page(gateway.url, "127.0.0.2").startswith(b"HTTP/1.1 200")
            assert sum(_closed(s) for s in flood) == 120 - PER_ADDRESS + 1
            assert _page(gateway.url, "127.0.0.3").startswith(b"HTTP/1.1 200")
            for sock in [s for s in flood if not _closed(s)][:10]:
                sock.close()
            deadline = time.monotonic() + 2
            while (not _page(gateway.url, "127.0.0.1").startswith(b"HTTP/1.1 200")
                   and time.monotonic() < deadline):
                time.sleep(0.05)  # the server sees the closes a moment later
            assert time.monotonic() < deadline, "closed connections kept their places"
    finally:
        gateway.stop()


def test_a_trusted_proxy_is_not_capped_per_address() -> None:
    """Behind a proxy every connection has the proxy's address."""
    gateway = GatewayThread(NO_ENGINE, trusted_proxies=("127.0.0.3/32",),
                            limits=WebLimits(max_connections_per_address=4))
    try:
        with contextlib.ExitStack() as held:
            proxy = _hold(held, gateway.url, "127.0.0.3", 10)
            client = _hold(held, gateway.url, "127.0.0.1", 10)
            time.sleep(0.5)
            assert not any(_closed(s) for s in proxy)
            assert sum(_closed(s) for s in client) == 10 - 4
    finally:
        gateway.stop()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _post(url: str, content_type: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"content-type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        body = b""
        with contextlib.suppress(ConnectionResetError):  # what a closing server's reset lost
            body = error.read()
        return error.code, dict(error.headers), body


def test_native_grpc_over_http1_is_refused_plainly(gateway: str,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A native gRPC call cannot be served over HTTP/1.1 (no trailers): 415 with
    UNIMPLEMENTED and where to go instead, not an internal error and a traceback."""
    url = gateway + "battleline.v1.LobbyService/ListOpenMatches"
    with caplog.at_level(logging.WARNING):
        status, headers, body = _post(url, "application/grpc", b"\0\0\0\0\0")
    assert status == 415 and headers["grpc-status"] == "12", (status, headers)
    # the message in its header: a reset as the connection closes can lose the body
    assert "HTTP/2" in unquote(headers["grpc-message"])
    assert body in (b"", unquote(headers["grpc-message"]).encode())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_request_framed_by_both_length_headers_closes_its_connection(gateway: str) -> None:
    """Ninth audit: a request with Content-Length and Transfer-Encoding was read by the
    latter and the connection kept, so a second request hidden in its Content-Length was
    answered too (smuggling, behind a proxy that frames by Content-Length). Now it gets
    400 and the connection is closed: the hidden request is never answered."""
    hidden = (b"POST /battleline.v1.RecordService/GetRecord HTTP/1.1\r\nHost: localhost\r\n"
              b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
    smuggling = (b"POST /battleline.v1.GameService/GetView HTTP/1.1\r\nHost: localhost\r\n"
                 b"content-type: application/json\r\ntransfer-encoding: chunked\r\n"
                 b"content-length: %d\r\n\r\n0\r\n\r\n" % (5 + len(hidden)) + hidden)
    answer = _answers(gateway, smuggling)
    assert answer.startswith(b"HTTP/1.1 400") and answer.count(b"HTTP/1.1 ") == 1, answer


def test_a_bad_page_token_through_the_gateway_is_invalid_argument(gateway: str) -> None:
    url = gateway + "battleline.v1.LobbyService/ListOpenMatches"
    status, _, body = _post(url, "application/json", json.dumps({"pageToken": "².abc"}).encode())
    assert status == 400 and json.loads(body)["code"] == "invalid_argument", (status, body)


def test_the_request_deadline_does_not_cut_a_long_watch(engine: Engine) -> None:
    """The deadline is for a request to arrive; a Watch's response may last for ever."""
    gateway = GatewayThread(engine.address, limits=WebLimits(request_timeout_s=0.5))
    try:
        web = BridgeClient(gateway.url, ProtocolType.CONNECT, json=True)
        created = web.create()
        stream = iter(web.watch(created.match_id, created.seat_token))
        view = next(stream).snapshot
        time.sleep(2.0)  # four deadlines pass with the stream open and quiet
        seat = SEATS.index(view.current_seat)
        token = (created.seat_token, created.other_seat_token)[seat]
        mine = web.view(created.match_id, token)
        web.submit(created.match_id, token, mine.version, [mine.legal_actions[0]])
        assert next(stream).HasField("event")
    finally:
        gateway.stop()


def _answers(gateway: str, raw: bytes) -> bytes:
    """Everything the web port answers to `raw`, sent in one write, until it closes."""
    parts = urlsplit(gateway)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(raw)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def _get_with(headers: list[bytes]) -> bytes:
    """A request for the page with these headers, after which the server closes."""
    return (b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            + b"".join(h + b"\r\n" for h in headers) + b"\r\n")


def test_a_request_head_past_the_limits_is_refused_even_in_one_piece(gateway: str) -> None:
    """Tenth audit: h11 bounded a head only while it was incomplete, so one arriving whole
    in a single read was parsed and served at any size (64 KiB, 1,092 headers), each
    costing the event loop the engine shares ten times a small request. Now a head past
    16 KiB or 100 headers is answered 400 and its connection closed, pipelined or not."""
    limits = WebLimits()
    assert _answers(gateway, _get_with([b"X-A: " + b"a" * 8000])).startswith(b"HTTP/1.1 200")
    assert _answers(gateway, _get_with([b"X-%d: 1" % n for n in range(90)])).startswith(
        b"HTTP/1.1 200")
    large = _get_with([b"X-A: " + b"a" * (limits.max_header_bytes + 1)])
    many = _get_with([b"X-%d: 1" % n for n in range(limits.max_headers + 1)])
    first = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"  # kept alive: the next is pipelined
    for refused in (large, many, first + large):
        answer = _answers(gateway, refused)
        assert answer.count(b"HTTP/1.1 400") == 1 and answer.count(b"HTTP/1.1 200") == (
            1 if refused.startswith(first) else 0), answer[:300]


def test_a_chunked_body_is_refused_with_the_ports_security_headers(
        gateway: str, caplog: pytest.LogCaptureFixture) -> None:
    """Eleventh audit: a chunked body's trailers and chunk extensions were parsed at any
    size in one piece (64 KiB, 1,080 fields: the tenth audit's head flood again), and the
    400s uvicorn writes itself had none of the port's security headers. No client of the
    port sends a chunked body: it is refused at its head, whatever follows, with the
    headers, and nothing is logged as an error."""
    trailers = b"".join(b"x-t%d: 1\r\n" % n for n in range(1080))
    chunked = (b"POST /battleline.v1.LobbyService/ListOpenMatches HTTP/1.1\r\nHost: localhost\r\n"
               b"content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
               b"2\r\n{}\r\n0\r\n" + trailers + b"\r\n")
    with caplog.at_level(logging.WARNING):
        answer = _answers(gateway, chunked)
        time.sleep(0.3)  # an answer of the app's, had it run, would come after ours
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert answer.startswith(b"HTTP/1.1 400") and answer.count(b"HTTP/1.1 ") == 1, answer[:300]
    assert b"content-security-policy: default-src 'self'" in head, head
    assert b"x-frame-options: deny" in head and b"x-content-type-options: nosniff" in head
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[:2000]


def test_watch_streams_hold_at_most_half_an_addresss_connections(engine: Engine) -> None:
    """Eleventh audit: a stream holds its connection while its match lasts, and one local
    user's 64 spectator streams kept every other local browser off the port (0 of 24
    page loads). An address holds at most `max_streams_per_address` Watch streams over
    the web port; the next is refused in the caller's protocol until one closes."""
    gateway = GatewayThread(engine.address, limits=WebLimits(max_streams_per_address=2))
    try:
        web = BridgeClient(gateway.url, ProtocolType.CONNECT, json=True)
        created = web.create()
        streams = [iter(web.watch(created.match_id)) for _ in range(2)]
        assert all(next(stream).HasField("snapshot") for stream in streams)
        with pytest.raises(ConnectError) as refused:
            next(iter(web.watch(created.match_id)))
        assert refused.value.code == Code.RESOURCE_EXHAUSTED, refused.value
        assert "Watch streams per client" in str(refused.value)
        for stream in streams:
            stream.close()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 5
        while True:  # the server sees the closes a moment later
            try:
                assert next(iter(web.watch(created.match_id))).HasField("snapshot")
                break
            except ConnectError:
                assert time.monotonic() < deadline, "closed streams kept their places"
                time.sleep(0.1)
    finally:
        gateway.stop()


def test_a_body_still_coming_a_second_after_its_head_gives_way(gateway: str) -> None:
    """Eleventh audit: connections sending a whole head, then their bodies a byte a second
    (each cut at the request deadline and opened again) held the address's places: 70
    of 90 other local page loads refused. At the cap, one whose body is still coming a
    second after its head gives way, as one that has sent nothing does."""
    head = (b"POST /battleline.v1.LobbyService/ListOpenMatches HTTP/1.1\r\nHost: localhost\r\n"
            b"content-type: application/json\r\ncontent-length: 8000\r\n\r\n{")
    with contextlib.ExitStack() as held:
        slow = _hold(held, gateway, "127.0.0.1", PER_ADDRESS)
        for sock in slow:
            sock.sendall(head)
        time.sleep(1.5)
        assert _page(gateway, "127.0.0.2").startswith(b"HTTP/1.1 200")
        assert sum(_closed(s) for s in slow) == 1
