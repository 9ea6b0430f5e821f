"""The engine's gRPC port under a connection flood, through a real `battleline serve`
(issue #14: 2 x 9,990 held connections took serve to its 20,000 descriptors; new calls
timed out, the web page with them). Here serve's descriptor limit is lowered to 600 so
a flood of 700 would exhaust it the same way; with `--max-connections 50` the
connections past the cap are closed at once, the descriptors stay few, and the web page,
an existing channel and, once the flood ends, new clients are served."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from battleline_host.commands.serve import DESCRIPTOR_RESERVE, connection_cap
from tests.processes import start_serve, stop_serve, web_url

CAP = 50
DESCRIPTORS = 600  # serve's limit in the test: FLOOD alone would use them all
FLOOD = 700
# The client's half of an HTTP/2 handshake: a flood of connections gRPC keeps (not cut
# by its handshake timeout), as real clients' are.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SERVING = health_pb2.HealthCheckResponse.SERVING


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (non-blocking); what it sent (its SETTINGS)
    is read."""
    try:
        while sock.recv(65_536):
            pass
        return True
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def _flood(target: tuple[str, int], held: contextlib.ExitStack) -> list[socket.socket]:
    """FLOOD connections to `target`, each sending the HTTP/2 preface, held by `held`."""
    sockets = []
    for _ in range(FLOOD):
        sock = held.enter_context(socket.create_connection(target, timeout=5))
        with contextlib.suppress(OSError):  # already closed by the server
            sock.sendall(PREFACE)
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


def _health(channel: grpc.Channel) -> int:
    """The engine's health through `channel`; a failed call fails the test."""
    try:
        return int(health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=2).status)
    except grpc.RpcError as err:
        pytest.fail(f"health check failed: {err.code()}")


def _serving_again(address: str, within_s: float) -> bool:
    """Whether a new connection gets SERVING within `within_s`: the server learns of the
    flood's closed sockets when its loop gets to them (later on a loaded machine)."""
    deadline = time.monotonic() + within_s
    while True:
        with _new_channel(address) as fresh:
            try:
                return int(health_pb2_grpc.HealthStub(fresh).Check(
                    health_pb2.HealthCheckRequest(), timeout=2).status) == SERVING
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    return False
        time.sleep(0.2)


def _new_channel(address: str) -> grpc.Channel:
    """A channel with a connection of its own (not shared with an existing channel)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


@contextlib.contextmanager
def _serve(redis_url: str, log: Path, *args: str) -> Iterator[tuple[int, str, str]]:
    """serve with the gRPC port capped at CAP and DESCRIPTORS descriptors; yields its pid,
    gRPC address and page URL (none with --no-web), and stops it."""
    with log.open("w") as err:
        process, address = start_serve("--redis-url", redis_url, "--no-ai", "--max-connections",
                                       str(CAP), *args, stderr=err)
    try:
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))
        yield process.pid, address, "" if "--no-web" in args else web_url(process)
    finally:
        stop_serve(process)
    assert process.returncode == 0


@pytest.mark.timeout(60)
def test_a_connection_flood_leaves_the_process_serving(redis_url: str, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with (_serve(redis_url, log, "--web-port", "0") as (pid, address, page),
          _new_channel(address) as existing, contextlib.ExitStack() as held):
        # serve says it listens before its first ping of Redis: NOT_SERVING till then
        deadline = time.monotonic() + 10
        while _health(existing) != SERVING:
            assert time.monotonic() < deadline, "serve never became SERVING"
            time.sleep(0.1)
        before = _descriptors(pid)
        host, port = address.rsplit(":", 1)
        sockets = _flood((host, int(port)), held)
        time.sleep(0.5)
        assert _descriptors(pid) <= before + CAP + 10, "the flood took descriptors past the cap"
        assert sum(not _closed(s) for s in sockets) < CAP  # the existing channel holds one
        assert _health(existing) == SERVING
        with urllib.request.urlopen(page, timeout=5) as response:
            assert response.status == 200
        with _new_channel(address) as fresh:  # the port is full: refused at once
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as refused:
                health_pb2_grpc.HealthStub(fresh).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert time.monotonic() - started < 2
        held.close()
        assert _serving_again(address, within_s=10)  # the flood's places are free again
    text = log.read_text()
    assert "File descriptor limit" not in text and "out of system resource" not in text


@pytest.mark.timeout(60)
def test_every_engine_of_serve_workers_is_capped(redis_url: str, tmp_path: Path) -> None:
    """`--workers 2`: the other engine gets the cap too (the kernel spreads the flood over
    both), so the port holds at most two caps of it."""
    with (_serve(redis_url, tmp_path / "serve.log", "--no-web", "--workers", "2")
          as (_, address, _), contextlib.ExitStack() as held):
        host, port = address.rsplit(":", 1)
        sockets = _flood((host, int(port)), held)
        time.sleep(0.5)
        assert sum(not _closed(s) for s in sockets) <= 2 * CAP


def test_the_cap_fits_the_descriptor_limit(caplog: pytest.LogCaptureFixture) -> None:
    """Where the descriptor limit could not hold the cap beside the web port's
    connections, the cap is lowered (and said so): the flood must not reach the limit."""
    assert connection_cap(4096, 512, 20_000) == 4096
    assert connection_cap(4096, 512, resource.RLIM_INFINITY) == 4096
    with caplog.at_level(logging.WARNING):
        assert connection_cap(4096, 512, 1024) == 1024 - 512 - DESCRIPTOR_RESERVE
    assert "capped at 256" in caplog.text
