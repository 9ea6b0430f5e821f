"""A server on 127.0.0.1 holds ::1 at its port too, so no other local user can serve there.

`localhost` leads browsers and gRPC clients to ::1 first. The web page and the engine
listened on 127.0.0.1 alone: another user serving [::1] at the same port got what was
meant for them, a page of the same origin (`http://localhost:PORT`, and so the seats'
tokens the page stores) included (the twenty-ninth audit's "Left").
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import grpc.aio
import pytest

from battleline_engine import listening, metrics_http
from battleline_engine.listening import (
    CannotListen,
    bound_sockets,
    listen,
    loopback_twin,
    refuse_if_bound,
)
from battleline_gateway import server as gateway_server
from tests.engine.harness import Client, Engine
from tests.gateway.plain_http import request
from tests.processes import taken_on

pytestmark = pytest.mark.skipif(loopback_twin("127.0.0.1") is None,
                                reason="this machine has no IPv6 loopback")


def test_the_web_page_on_ipv4_loopback_answers_on_ipv6_loopback_too(gateway: str) -> None:
    port = urlsplit(gateway).port
    assert port is not None and urlsplit(gateway).hostname == "127.0.0.1"
    status, _, body = request(f"http://[::1]:{port}/", "GET", "/",
                              headers={"Host": f"localhost:{port}"})
    assert status == 200 and b"<html" in body.lower()
    assert taken_on("::1", port)


def test_the_engine_on_ipv4_loopback_answers_on_ipv6_loopback_too(engine: Engine) -> None:
    host, _, port = engine.address.rpartition(":")
    assert host == "127.0.0.1"
    created = Client.to(f"[::1]:{port}").create()
    assert Client.to(engine.address).view(created.match_id, created.seat_token).match_id \
        == created.match_id
    assert taken_on("::1", int(port))


@pytest.mark.parametrize("start", [lambda port: bound_sockets("127.0.0.1", port),
                                   metrics_http.serve_metrics,
                                   lambda port: refuse_if_bound("[::1]", port)],
                         ids=["page", "metrics", "probe-of-a-bracketed-host"])
def test_a_port_taken_on_ipv6_loopback_is_refused_not_shared(
        start: Callable[[int], object]) -> None:
    """Another listener on [::1]:P: neither the page nor the metrics port starts on
    127.0.0.1:P beside it, and the refusal names [::1]:P."""
    for _ in range(5):  # a P that a test beside this one holds on 127.0.0.1 proves nothing
        with socket.socket(socket.AF_INET6) as other:
            other.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            other.bind(("::1", 0))
            other.listen()
            port = other.getsockname()[1]
            with pytest.raises(CannotListen) as refused:
                start(port)
        if f"127.0.0.1:{port}" not in str(refused.value):
            break
    assert f"[::1]:{port}" in str(refused.value)


def test_other_hosts_hold_nothing_beside_them() -> None:
    """`::` stays one dual-stack socket; a host not a loopback's own address holds no twin
    (gRPC binds `localhost` as both loopbacks itself: a twin beside it kept `serve --host
    localhost` from starting, a re-test)."""
    for host in ("::", "0.0.0.0", "127.0.0.2", "localhost"):
        assert loopback_twin(host) is None
    sockets = bound_sockets("::", 0)
    try:
        assert len(sockets) == 1
        assert sockets[0].getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
    finally:
        sockets[0].close()


def _with_grpc_server(address: str, check: Callable[[int], None]) -> None:
    """A gRPC server bound by `listen` to `address`, running while `check(its port)`."""
    async def serving() -> None:
        server = grpc.aio.server()
        port = listen(server, address)
        await server.start()
        try:
            check(port)
        finally:
            await server.stop(None)

    asyncio.run(serving())


def _answers_on_ipv4_loopback(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)):
        pass


def test_a_grpc_server_on_localhost_starts_on_both_loopbacks() -> None:
    def check(port: int) -> None:
        assert taken_on("::1", port)
        _answers_on_ipv4_loopback(port)

    _with_grpc_server("localhost:0", check)


def test_a_socket_that_listens_before_the_page_stops_its_start_in_one_line(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket of another's bound at [::1]:P with SO_REUSEADDR listens once the page has
    bound, before it listens (a re-test won that race 3 of 4 times, and serve ended in a
    traceback): the page does not start, and says so as CannotListen."""
    other = socket.socket(socket.AF_INET6)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    other.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    other.bind(("::1", 0))
    port = other.getsockname()[1]

    def bound_then_beaten(host: str, at: int) -> list[socket.socket]:
        made = bound_sockets(host, at)
        other.listen()
        return made

    async def start() -> None:
        await gateway_server.WebGateway(engine.address, port=port).start()

    monkeypatch.setattr(gateway_server, "bound_sockets", bound_then_beaten)
    try:
        with pytest.raises(CannotListen, match=f"cannot listen on 127.0.0.1:{port}"):
            asyncio.run(start())
    finally:
        other.close()


def test_ipv4_loopback_written_otherwise_holds_its_twin_too() -> None:
    """`--host ::ffff:127.0.0.1` left [::1] to another user (a re-test); `[::1]` in
    brackets, as a URL writes it, is bound as ::1 (it failed as a name)."""
    assert loopback_twin("::ffff:127.0.0.1") == "::1"
    sockets = bound_sockets("[::1]", 0)
    try:
        assert [sock.getsockname()[0] for sock in sockets] == ["::1", "127.0.0.1"]
    finally:
        for sock in sockets:
            sock.close()


def test_servers_on_ipv6_loopback_hold_ipv4_loopback_too() -> None:
    """`--host ::1` left 127.0.0.1 at its ports to another user, where a client of
    `localhost` that tries IPv4 first would go (a second re-test): the engine, the page's
    sockets and the metrics port each hold it, and answer there."""
    assert loopback_twin("::1") == "127.0.0.1"

    def check(port: int) -> None:
        assert taken_on("127.0.0.1", port)
        _answers_on_ipv4_loopback(port)

    _with_grpc_server("[::1]:0", check)
    sockets = bound_sockets("::1", 0)  # bound, not listening: the page listens on them
    try:
        assert [sock.getsockname()[0] for sock in sockets] == ["::1", "127.0.0.1"]
        assert len({sock.getsockname()[1] for sock in sockets}) == 1
    finally:
        for sock in sockets:
            sock.close()
    server = metrics_http.serve_metrics(0, "::1")
    try:
        port = server.server_address[1]
        assert taken_on("127.0.0.1", port)
        status, _, body = request(f"http://127.0.0.1:{port}/", "GET", "/metrics",
                                  headers={"Host": f"localhost:{port}"})
        assert status == 200 and b"# HELP" in body
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _ipv4_loopback_crowded(ports: int = 5000) -> Iterator[None]:
    """Another's listeners on `ports` of 127.0.0.1's ephemeral ports (about one in six)."""
    held: list[socket.socket] = []
    try:
        for _ in range(ports):
            sock = socket.socket(socket.AF_INET)
            held.append(sock)
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        yield
    finally:
        for sock in held:
            sock.close()


def test_port_zero_on_ipv6_loopback_picks_a_port_free_on_both_loopbacks() -> None:
    """Port 0 on ::1 picked a port free there that another held on 127.0.0.1, and the
    server did not start (one CI run in four, where the tests beside it held many)."""
    with _ipv4_loopback_crowded():
        for _ in range(40):  # the page's sockets, and the metrics port's listening
            for sock in metrics_http.metrics_sockets(0, "::1"):
                sock.close()
        for _ in range(10):
            _with_grpc_server("[::1]:0", lambda port: None)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_metrics_port_on_ipv4_loopback_answers_on_ipv6_loopback_too(host: str) -> None:
    """A scraper of `localhost:M` may try ::1 first: another user serving there would
    feed it made-up figures. The twin's connections pass the same counts: with room for
    one connection, one held on ::1 leaves none on 127.0.0.1."""
    server = metrics_http.serve_metrics(0, host, timeout_s=2, max_connections=1)
    port = server.server_address[1]
    try:
        assert taken_on("::1", port)
        with socket.create_connection(("::1", port)):  # holds the one place
            time.sleep(0.3)
            with socket.create_connection(("127.0.0.1", port)) as refused:
                refused.settimeout(2)
                assert refused.recv(100) == b""  # closed at once
        deadline = time.monotonic() + 10
        while True:  # once the held connection's thread has let its place go
            try:
                status, _, body = request(f"http://[::1]:{port}/", "GET", "/metrics",
                                          headers={"Host": f"localhost:{port}"})
                break
            except ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 200 and b"# HELP" in body
    finally:
        server.shutdown()
        server.server_close()
    assert not taken_on("::1", port)


def _a_name_of_ipv4_loopback_alone() -> str | None:
    """A name /etc/hosts gives 127.0.0.1 alone (`localhost` aside), if it has one."""
    names = {name for line in Path("/etc/hosts").read_text().splitlines()
             if line.split()[:1] == ["127.0.0.1"] for name in line.split()[1:]}
    for name in sorted(names - {"localhost"}):
        with contextlib.suppress(OSError):
            found = {info[4][0] for info in socket.getaddrinfo(name, None,
                                                               type=socket.SOCK_STREAM)}
            if found == {"127.0.0.1"}:
                return name
    return None


@pytest.mark.skipif(_a_name_of_ipv4_loopback_alone() is None,
                    reason="/etc/hosts names 127.0.0.1 alone by no name but localhost")
def test_a_name_of_one_loopback_holds_the_other_too() -> None:
    """`--host NAME`, a name /etc/hosts gives 127.0.0.1 alone, left [::1] at the gRPC
    port to another user (a second re-test's "Left"): the engine, the page's sockets and
    the metrics port hold it."""
    name = _a_name_of_ipv4_loopback_alone()
    assert name is not None and loopback_twin(name) == "::1"

    def check(port: int) -> None:
        assert taken_on("::1", port)

    _with_grpc_server(f"{name}:0", check)
    sockets = bound_sockets(name, 0)
    try:
        assert [sock.getsockname()[0] for sock in sockets] == ["127.0.0.1", "::1"]
    finally:
        for sock in sockets:
            sock.close()
    server = metrics_http.serve_metrics(0, name)
    try:
        assert taken_on("::1", server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_taken_between_its_pick_and_grpcs_bind_is_picked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean-clone CI run: an engine on 127.0.0.1:0 failed to start, the port picked
    free on both loopbacks taken (an outgoing connection's ephemeral port) before gRPC
    bound it. Here another socket takes the first port picked, right after the pick."""
    picked = listening.bound_sockets
    racers: list[socket.socket] = []

    def taken_after_the_pick(host: str, port: int) -> list[socket.socket]:
        sockets = picked(host, port)
        if not racers:  # the first pick: a listener beside the picking socket (both
            racer = socket.socket()  # with SO_REUSEADDR), there once it is closed
            racers.append(racer)
            racer.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            racer.bind(("127.0.0.1", sockets[0].getsockname()[1]))
            racer.listen()
        return sockets

    monkeypatch.setattr(listening, "bound_sockets", taken_after_the_pick)
    try:
        ports: list[int] = []
        _with_grpc_server("127.0.0.1:0", ports.append)
        assert ports and ports[0] != racers[0].getsockname()[1]
    finally:
        for racer in racers:
            racer.close()
