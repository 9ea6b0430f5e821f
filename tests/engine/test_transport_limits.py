"""The engine's transport limits through a real server on loopback (third audit, findings
1 and 5): requests announced and never finished, bytes sent after a request, RPCs and
idle connections; and the metrics port's timeout and connection caps.

Some tests speak HTTP/2 by hand (the preface, frames, HPACK literals): a gRPC channel
cannot leave a message half-sent or send past its request."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import grpc
import pytest

from battleline.v1 import game_pb2, lobby_pb2, types_pb2, watch_pb2
from battleline_client.bots import choose
from battleline_engine import listening, metrics_http
from battleline_engine.server import ServerConfig
from tests.processes import free_port

from .harness import FAST_SERVER, Client, Engine

DEFAULTS = ServerConfig()
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY, WINDOW_UPDATE = 0x0, 0x1, 0x4, 0x7, 0x8
END_HEADERS, ACK = 0x4, 0x1
MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE = 0x3, 0x4
CONNECTION_WINDOW = 65_535  # HTTP/2's initial connection window, not changed by SETTINGS


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(
        ">I", stream) + payload


class _Frames:
    """The frames a server sends on `sock`; a read that times out (the socket's timeout,
    TimeoutError) keeps what arrived of a frame for the next."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self) -> tuple[int, int, int, bytes] | None:
        """(type, flags, stream, payload), or None once the server has closed the connection."""
        while len(self.buffer) < 9 or len(self.buffer) < 9 + int.from_bytes(self.buffer[:3],
                                                                             "big"):
            try:
                chunk = self.sock.recv(65_536)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            self.buffer += chunk
        length = int.from_bytes(self.buffer[:3], "big")
        head, payload = self.buffer[:9], self.buffer[9:9 + length]
        self.buffer = self.buffer[9 + length:]
        return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFF_FFFF, payload


def _settings(payload: bytes) -> dict[int, int]:
    return {int.from_bytes(payload[i:i + 2], "big"): int.from_bytes(payload[i + 2:i + 6], "big")
            for i in range(0, len(payload), 6)}


def _literal(name: str, value: str) -> bytes:
    """One header as an HPACK literal without indexing (short strings, no Huffman)."""
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


def _grpc_message(body: bytes) -> bytes:
    return b"\x00" + len(body).to_bytes(4, "big") + body


@contextlib.contextmanager
def _http2(address: str) -> Iterator[tuple[_Frames, dict[int, int]]]:
    """A connection that has sent the preface and acknowledged the server's SETTINGS."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(PREFACE + _frame(SETTINGS, 0, 0))
        frames = _Frames(sock)
        while True:
            frame = frames.next()
            assert frame is not None, "the server closed the connection"
            kind, flags, _, payload = frame
            if kind == SETTINGS and not flags & ACK:
                sock.sendall(_frame(SETTINGS, ACK, 0))
                yield frames, _settings(payload)
                return


def test_requests_are_capped_at_8_kib_and_the_largest_legit_one_fits_four_times() -> None:
    """Names are at most 40 characters, ids and action texts 64, actions 16 a request: the
    largest request the engine accepts is a SubmitActionRequest of 1.2 KB."""
    assert DEFAULTS.max_request_bytes == 8 * 1024
    submit = game_pb2.SubmitActionRequest(
        match_id="m" * 64, expected_version=2**64 - 1, action_id="a" * 64,
        actions=["x" * 64] * 16, include_position=True)
    create = lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset="x" * 64, hand_size=2**32 - 1,
                                       series_games=2**32 - 1),
        seat_options=types_pb2.SeatOptions(auto_claim=True, display_name="\U0001F600" * 40),
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_AI, ai_level=5, private=True),
        seed=2**64 - 1)
    join = lobby_pb2.JoinMatchRequest(invite_code="i" * 64, seat_options=create.seat_options)
    for request in (submit, create, join):
        assert 4 * request.ByteSize() <= DEFAULTS.max_request_bytes, request


def test_a_request_just_over_the_cap_is_refused_and_one_at_the_cap_passes(
        engine: Engine) -> None:
    cap = FAST_SERVER.max_request_bytes

    def padded(size: int) -> bytes:
        """A ListOpenMatchesRequest of exactly `size` bytes: an unknown field (15) of filler."""
        for filler in range(size, 0, -1):
            field = b"\x7a" + _varint(filler) + b"x" * filler
            if len(field) == size:
                return field
        raise AssertionError(size)

    with grpc.insecure_channel(engine.address) as channel:
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/battleline.v1.LobbyService/ListOpenMatches")
        assert lobby_pb2.ListOpenMatchesResponse.FromString(call(padded(cap), timeout=10))
        with pytest.raises(grpc.RpcError) as refused:
            call(padded(cap + 1), timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # The largest SubmitAction the engine accepts is refused for what it says, not its size.
        game: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            "/battleline.v1.GameService/SubmitAction")
        with pytest.raises(grpc.RpcError) as answered:
            game(game_pb2.SubmitActionRequest(
                match_id="m" * 64, expected_version=1, action_id="a" * 64,
                actions=["x" * 64] * 16).SerializeToString(), timeout=10)
        assert answered.value.code() != grpc.StatusCode.RESOURCE_EXHAUSTED


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def test_the_engine_announces_its_stream_limit_and_a_one_request_window(engine: Engine) -> None:
    """600 streams a connection (the web gateway carries up to 512 calls on one), and a
    receive window of one request that does not grow (no BDP probing)."""
    assert DEFAULTS.max_concurrent_streams == 600
    with _http2(engine.address) as (_, settings):
        assert settings[MAX_CONCURRENT_STREAMS] == DEFAULTS.max_concurrent_streams
        assert settings[INITIAL_WINDOW_SIZE] == DEFAULTS.max_request_bytes


def test_bytes_sent_after_a_watch_request_stay_within_one_window(
        engine: Engine, client: Client) -> None:
    """A Watch reads its one request; what a client sends after it is never read. The
    audit's client kept sending: BDP probing grew the window to 64 MiB, and 256 such
    streams held 1 GB. Now a stream may send about one window (8 KiB) in all."""
    match_id = client.create().match_id
    with _http2(engine.address) as (frames, settings):
        sock = frames.sock
        window = settings[INITIAL_WINDOW_SIZE]
        host = engine.address
        sock.sendall(_frame(HEADERS, END_HEADERS, 1, b"".join([
            _literal(":method", "POST"), _literal(":scheme", "http"),
            _literal(":path", "/battleline.v1.WatchService/Watch"),
            _literal(":authority", host), _literal("content-type", "application/grpc"),
            _literal("te", "trailers")])))
        request = _grpc_message(watch_pb2.WatchRequest(match_id=match_id).SerializeToString())
        # Then a second message announced and never finished, sent as fast as allowed.
        unread = b"\x00" + (1 << 20).to_bytes(4, "big") + b"x" * (1 << 20)
        pending, sent, answered = request + unread, 0, False
        stream_window, connection_window = window, CONNECTION_WINDOW
        sock.settimeout(0.2)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            n = min(stream_window, connection_window, 16_384, len(pending) - sent)
            if n > 0:
                sock.sendall(_frame(DATA, 0, 1, pending[sent:sent + n]))
                sent += n
                stream_window -= n
                connection_window -= n
            try:
                frame = frames.next()
            except TimeoutError:
                continue
            assert frame is not None, "the server closed the connection"
            kind, flags, stream, payload = frame
            if kind == WINDOW_UPDATE:
                increment = int.from_bytes(payload, "big") & 0x7FFF_FFFF
                if stream == 0:
                    connection_window += increment
                else:
                    stream_window += increment
            elif kind == SETTINGS and not flags & ACK:
                new = _settings(payload).get(INITIAL_WINDOW_SIZE, window)
                stream_window += new - window
                window = new
                sock.sendall(_frame(SETTINGS, ACK, 0))
            elif kind == DATA and stream == 1:
                answered = True  # the snapshot: the request was read, the stream is open
        assert answered
        # One window, and what gRPC hands back for the bytes it parsed (a few hundred).
        assert len(request) < sent <= 2 * DEFAULTS.max_request_bytes


def test_rpcs_past_the_process_cap_are_refused_at_once(redis_url: str) -> None:
    """Every half-sent request holds about 28 KB; the process holds at most
    `max_concurrent_rpcs` RPCs of any kind, Watch streams included."""
    assert DEFAULTS.max_concurrent_rpcs == 32_768
    engine = Engine(redis_url, server=dataclasses.replace(FAST_SERVER, max_concurrent_rpcs=4))
    client = Client.to(engine.address)
    try:
        match_id = client.create().match_id
        streams = [client.watch(match_id) for _ in range(4)]
        for stream in streams:
            next(stream)
        with pytest.raises(grpc.RpcError) as refused:
            client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        for stream in streams:
            stream.cancel()
        deadline = time.monotonic() + 5
        while True:  # the cancelled streams end on the server a moment later
            try:
                client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(), timeout=10)
                break
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline, "the cap stayed full"
                time.sleep(0.05)
    finally:
        client.channel.close()
        engine.close()


@pytest.fixture
def quick_idle(redis_url: str) -> Iterator[Engine]:
    """An engine closing connections idle for 0.5 s, and those that send no HTTP/2
    preface within 0.5 s."""
    running = Engine(redis_url, server=dataclasses.replace(FAST_SERVER, idle_s=0.5,
                                                           handshake_s=0.5))
    yield running
    running.close()


def _closed_within(frames: _Frames, seconds: float) -> tuple[bool, set[int]]:
    """Whether the server closed the connection within `seconds`, and the frame types it
    sent."""
    frames.sock.settimeout(seconds)
    kinds: set[int] = set()
    try:
        while (frame := frames.next()) is not None:
            kinds.add(frame[0])
    except TimeoutError:
        return False, kinds
    return True, kinds


def test_connections_without_a_preface_or_a_call_are_closed(quick_idle: Engine) -> None:
    host, _, port = quick_idle.address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as silent:
        started = time.monotonic()
        assert _closed_within(_Frames(silent), 5)[0]  # after its SETTINGS, unanswered
        assert time.monotonic() - started < 3
    with _http2(quick_idle.address) as (frames, _):
        closed, kinds = _closed_within(frames, 5)
        assert closed and GOAWAY in kinds


def _own_channel(address: str) -> grpc.Channel:
    """A channel with a connection of its own (channels share them by default)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


def test_an_idle_client_calls_again_and_a_quiet_watch_is_not_cut(quick_idle: Engine) -> None:
    """Idle connections are closed gracefully (the next call reconnects), and a Watch is a
    call: a match quiet for longer than the idle time keeps its stream."""
    client = Client(_own_channel(quick_idle.address))
    watcher = Client(_own_channel(quick_idle.address))
    try:
        created = client.create()
        tokens = (created.seat_token, created.other_seat_token)
        stream = watcher.watch(created.match_id)
        next(stream)  # the snapshot
        time.sleep(1.5)  # three idle times for both connections
        view = client.view(created.match_id, tokens[0])  # reconnects
        seat = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND).index(view.current_seat)
        view = client.view(created.match_id, tokens[seat])
        client.game.SubmitAction(game_pb2.SubmitActionRequest(
            match_id=created.match_id, expected_version=view.version, action_id="a1",
            actions=choose(view, random.Random(1), True)),
            metadata=(("authorization", f"Bearer {tokens[seat]}"),), timeout=10)
        assert next(stream).HasField("event")  # the same stream, still open
        stream.cancel()
    finally:
        client.channel.close()
        watcher.channel.close()


@pytest.fixture
def small_metrics() -> Iterator[tuple[int, metrics_http.MetricsServer]]:
    """A metrics server with a 0.5 s connection timeout, 4 connections, 2 per address."""
    port = free_port()
    server = metrics_http.serve_metrics(port, timeout_s=0.5, max_connections=4, max_per_address=2)
    yield port, server
    server.shutdown()
    server.server_close()


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def _handler_threads() -> int:
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_metrics_are_scraped_in_prometheus_text(
        small_metrics: tuple[int, metrics_http.MetricsServer]) -> None:
    text = _scrape(small_metrics[0])
    assert "# TYPE battleline_live_matches gauge" in text
    assert "battleline_rpc_latency_seconds" in text


def test_a_loopback_metrics_port_answers_its_own_names_only(
        small_metrics: tuple[int, metrics_http.MetricsServer]) -> None:
    """Twenty-sixth audit: a page whose own name points at 127.0.0.1 (DNS rebinding)
    read the metrics of a loopback metrics port; it answered any Host."""
    port = small_metrics[0]

    def status(host: str) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                         headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return int(err.code)

    for host in ("evil.example", f"evil.example:{port}", "localhost.evil.example",
                 "127.0.0.1.nip.io"):
        assert status(host) == 421, host
    for host in ("localhost", f"LOCALHOST:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert status(host) == 200, host


@pytest.mark.parametrize("bound", ["127.0.0.1", "LOCALHOST", "localhost.", "127.1", "0x7f.1",
                                   "::ffff:127.0.0.1", "[::1]", "127.0.0.2"])
def test_every_spelling_of_a_loopback_bind_answers_loopback_names_only(bound: str) -> None:
    """Twenty-sixth audit, second round: the rule read the bind's text, so `LOCALHOST`,
    `127.1` or `::ffff:127.0.0.1` bound loopback yet answered any Host."""
    names = listening.answered_names(bound)
    assert names is not None and "evil.example" not in names, bound
    assert {"localhost", "127.0.0.1", "[::1]"} <= names


@pytest.mark.parametrize("bound", ["0.0.0.0", "::", "192.0.2.7", "example.invalid"])
def test_a_bind_beyond_loopback_answers_any_name(bound: str) -> None:
    assert listening.answered_names(bound) is None


def test_a_stalled_metrics_connection_is_closed_after_the_timeout(
        small_metrics: tuple[int, metrics_http.MetricsServer]) -> None:
    """Silent, or sending its request a byte at a time (each read on time, the whole
    not): either is closed once its 0.5 s are up."""
    port = small_metrics[0]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as silent:
        started = time.monotonic()
        assert silent.recv(1) == b""
        assert 0.4 < time.monotonic() - started < 2
    with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
        started = time.monotonic()
        with contextlib.suppress(OSError):  # reset once closed
            for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 100:
                slow.sendall(bytes([byte]))
                time.sleep(0.05)
        assert time.monotonic() - started < 2
        with contextlib.suppress(ConnectionResetError):
            assert slow.recv(1) == b""


def _closed_of(port: int, count: int, held: contextlib.ExitStack) -> int:
    """How many of `count` connections, from 127.0.0.1, .2 and .3 in turn, the server
    closed at once."""
    socks = []
    for i in range(count):
        sock = held.enter_context(socket.socket())
        sock.bind((f"127.0.0.{1 + i % 3}", 0))
        sock.connect(("127.0.0.1", port))
        socks.append(sock)
    time.sleep(0.2)  # within the 0.5 s the served ones are kept
    closed = 0
    for sock in socks:
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            closed += sock.recv(1) == b""
    return closed


def test_metrics_connections_past_the_caps_are_closed_without_a_thread(
        small_metrics: tuple[int, metrics_http.MetricsServer]) -> None:
    """Every loopback address is one client (sixth audit: a local user held all the
    connections from four of them), so 2 of 12 are kept. A scrape still gets through:
    the oldest held connection that sent no request gives way (tenth audit: 4 such
    connections, reopened as they timed out, refused 24 of 24 scrapes)."""
    port = small_metrics[0]
    before = _handler_threads()
    with contextlib.ExitStack() as held:
        assert _closed_of(port, 12, held) == 10
        assert _handler_threads() - before <= 2
        assert "battleline_live_matches" in _scrape(port)  # full of idle ones: one gives way
    time.sleep(0.8)  # the held ones time out
    assert _handler_threads() == before
    assert "battleline_live_matches" in _scrape(port)


def test_metrics_connections_past_the_servers_cap_are_closed() -> None:
    port = free_port()
    server = metrics_http.serve_metrics(port, timeout_s=0.5, max_connections=2,
                                        max_per_address=4)
    try:
        with contextlib.ExitStack() as held:
            assert _closed_of(port, 6, held) == 4
    finally:
        server.shutdown()
        server.server_close()
