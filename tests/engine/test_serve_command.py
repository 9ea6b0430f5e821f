"""`battleline serve` as a real process: embedded Redis, health, metrics, clean exit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import resource
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc

from battleline.v1 import lobby_pb2, lobby_pb2_grpc, types_pb2, watch_pb2, watch_pb2_grpc
from battleline_engine.runtime import EngineConfig
from battleline_host.commands.serve import WorkerFailed, Workers
from tests.processes import (
    BATTLELINE,
    EMBEDDED_STORE,
    calls_served,
    children,
    command_line,
    free_port,
    free_port_pair,
    is_alive,
    start_serve,
    stop_serve,
    taken_on,
    web_url,
)

from .harness import Client


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    return start_serve("--web-port", "0", *args, env={"REDIS_URL": ""}, stderr=subprocess.PIPE)


def _web_page(process: subprocess.Popen[str]) -> str:
    return urllib.request.urlopen(web_url(process), timeout=5).read().decode()


def _serving(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + 10
        status = health_pb2.HealthCheckResponse.UNKNOWN
        while time.monotonic() < deadline:
            status = stub.Check(health_pb2.HealthCheckRequest(), timeout=2).status
            if status == health_pb2.HealthCheckResponse.SERVING:
                break
            time.sleep(0.05)
        return int(status)


def _stop(process: subprocess.Popen[str]) -> str:
    err = stop_serve(process)
    assert process.returncode == 0, err
    return err


@pytest.mark.timeout(60)
def test_serve_with_embedded_redis(tmp_path: Path) -> None:
    metrics_port = free_port()
    process, address = _start("--data-dir", str(tmp_path / "data"),
                              "--metrics-port", str(metrics_port))
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{metrics_port}/metrics", timeout=5
        ).read().decode()
        assert "battleline_rpc_latency_seconds" in text
        assert "<script" in _web_page(process)
    finally:
        err = _stop(process)
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    started = [rec for rec in logs if rec["message"] == "embedded redis started"]
    assert started and started[0]["data_dir"] == str(tmp_path / "data")
    assert any(rec["message"] == "embedded redis stopped" for rec in logs)
    assert list((tmp_path / "data").rglob("appendonly*.aof"))  # (Valkey: appendonlydir/)
    with pytest.raises(redis.ConnectionError):
        redis.Redis(unix_socket_path=started[0]["socket"], socket_connect_timeout=1).ping()


@pytest.mark.timeout(60)
def test_the_metrics_port_binds_its_own_interface(redis_url: str) -> None:
    """`--metrics-host` keeps /metrics off the interface the game is served on (a serve
    on 0.0.0.0 exposed them to every client)."""
    metrics_port = free_port()
    process, address = _start("--redis-url", redis_url, "--no-web", "--metrics-port",
                              str(metrics_port), "--metrics-host", "127.0.0.2")
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        text = urllib.request.urlopen(f"http://127.0.0.2:{metrics_port}/metrics",
                                      timeout=5).read().decode()
        assert "battleline_rpc_latency_seconds" in text
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", metrics_port), timeout=5)
    finally:
        _stop(process)


@pytest.mark.timeout(60)
def test_serve_with_external_redis(redis_url: str, tmp_path: Path) -> None:
    process, address = _start("--redis-url", redis_url, "--data-dir", str(tmp_path))
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
    finally:
        err = _stop(process)
    assert "embedded redis" not in err
    assert not list(tmp_path.rglob("appendonly*.aof"))


@pytest.mark.timeout(60)
def test_serve_binds_an_ipv6_host(redis_url: str, tmp_path: Path) -> None:
    """`--host ::` (every address, IPv6 and IPv4): it used to build `:::PORT`, which gRPC
    cannot bind."""
    process, address = _start("--redis-url", redis_url, "--data-dir", str(tmp_path),
                              "--host", "::", "--no-web")
    try:
        assert address.startswith("[::]:")
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        port = address.rsplit(":", 1)[1]
        assert _serving(f"127.0.0.1:{port}") == health_pb2.HealthCheckResponse.SERVING
    finally:
        _stop(process)


@pytest.mark.timeout(90)
def test_a_killed_embedded_redis_is_restarted_from_its_data(tmp_path: Path) -> None:
    """SIGKILL of the embedded store (valkey-server): serve reaps it (no zombie), starts it again
    from the append-only file, health is SERVING again and the match is still there."""
    with (tmp_path / "serve.log").open("w") as log:
        process, address = start_serve("--web-port", "0", "--no-ai", "--data-dir",
                                       str(tmp_path / "data"), env={"REDIS_URL": ""}, stderr=log)
    client = Client.to(address)
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        created = client.create()
        time.sleep(1.5)  # appendfsync everysec: the match is on disk
        first = _redis_child(process.pid)
        assert first, "no embedded store"  # os.kill(0, ...) would kill this whole test run
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        second = first
        while time.monotonic() < deadline and second in (first, 0):
            time.sleep(0.1)
            second = _redis_child(process.pid)
        assert second not in (first, 0), "the store was not started again"
        assert first not in children(process.pid), "the killed store was not reaped"
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        view = client.view(created.match_id, created.seat_token)
        assert view.match_id == created.match_id
    finally:
        client.channel.close()
        _stop(process)


def _redis_child(pid: int) -> int:
    """The pid of serve's live embedded store (valkey-server), 0 if none."""
    for child in children(pid):
        if is_alive(child) and EMBEDDED_STORE in command_line(child)[0]:
            return child
    return 0


@pytest.mark.timeout(90)
def test_serve_starts_its_children_without_grpc_fork_warnings(tmp_path: Path) -> None:
    """Issue #15: gRPC printed "skipping fork() handlers" as serve started its AI, as the
    AI started its worker and as a killed Redis was started again (all after gRPC ran)."""
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process, address = start_serve("--no-web", "--data-dir", str(tmp_path / "data"),
                                       env={"REDIS_URL": ""}, stderr=log)
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        deadline = time.monotonic() + 30
        while "ai worker" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)  # the AI's worker process logs once it runs
        assert "ai worker" in log_path.read_text()
        first = _redis_child(process.pid)
        assert first, "no embedded store"  # os.kill(0, ...) would kill this whole test run
        os.kill(first, signal.SIGKILL)
        while _redis_child(process.pid) in (first, 0) and time.monotonic() < deadline + 30:
            time.sleep(0.1)
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
    finally:
        _stop(process)
    assert "fork() handlers" not in log_path.read_text()


@pytest.mark.timeout(90)
def test_a_stop_is_bounded_even_when_redis_hangs(tmp_path: Path) -> None:
    """SIGTERM while the embedded Redis is frozen (SIGSTOP): serve still exits within
    its grace period plus serve.SHUTDOWN_SLACK_S, and leaves no store process behind."""
    from battleline_host.commands.serve import SHUTDOWN_SLACK_S

    with (tmp_path / "serve.log").open("w") as log:
        process, address = start_serve("--web-port", "0", "--no-ai", "--data-dir",
                                       str(tmp_path / "data"), env={"REDIS_URL": ""}, stderr=log)
    assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
    frozen = _redis_child(process.pid)
    assert frozen, "no embedded store"  # os.kill(0, ...) would stop this whole test run
    os.kill(frozen, signal.SIGSTOP)
    started = time.monotonic()
    stop_serve(process, timeout=60)
    assert time.monotonic() - started < 1 + SHUTDOWN_SLACK_S  # --grace 1
    assert not is_alive(frozen)


@pytest.mark.timeout(90)
def test_serve_workers_share_one_port(redis_url: str) -> None:
    """`serve --workers 2`: two engine processes on one port and one Redis; new
    connections are spread over both, and both answer calls (each counts its own in its
    /metrics, worker i on the metrics port + i), with serve's limits (a listing rate with a
    burst of one: at most one listing per process passes). A plain serve cannot take the
    port."""
    metrics_port = free_port_pair()
    process, address = start_serve(
        "--no-web", "--no-ai", "--workers", "2", "--metrics-port", str(metrics_port),
        "--create-rate", "1000", "--list-rate", "0.001", env={"REDIS_URL": redis_url},
        stderr=subprocess.PIPE)
    try:
        workers = children(process.pid)
        assert len([pid for pid in workers if "serve" in command_line(pid)]) == 1
        calls = 0
        for _ in range(40):  # a new connection each time: the kernel picks a process
            # A subchannel pool of its own: gRPC's global pool may otherwise hand this
            # channel the last one's connection, still open, to the same process.
            client = Client(grpc.insecure_channel(address,
                                                  [("grpc.use_local_subchannel_pool", 1)]))
            try:
                created = client.create()
                view = client.view(created.match_id, created.seat_token)
                assert view.match_id == created.match_id
                calls += 2
            finally:
                client.channel.close()
        served = [calls_served(metrics_port), calls_served(metrics_port + 1)]
        assert sum(served) == calls
        assert min(served) > 0, served
        listings: list[grpc.StatusCode] = []
        for _ in range(12):
            client = Client(grpc.insecure_channel(address,
                                                  [("grpc.use_local_subchannel_pool", 1)]))
            try:
                client.lobby.ListOpenMatches(lobby_pb2.ListOpenMatchesRequest(), timeout=10)
                listings.append(grpc.StatusCode.OK)
            except grpc.RpcError as error:
                listings.append(error.code())
            finally:
                client.channel.close()
        assert listings.count(grpc.StatusCode.OK) <= 2, listings
        assert set(listings) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
        with pytest.raises(AssertionError, match="serve did not start"):
            start_serve("--no-web", "--no-ai", "--port", address.rsplit(":", 1)[1],
                        env={"REDIS_URL": redis_url})
        # Nor can another serve's workers, though they too bind with SO_REUSEPORT (an
        # operator's second `serve --workers 2` shared the port, against its own Redis).
        with pytest.raises(AssertionError, match=r"cannot listen on 127\.0\.0\.1:"):
            start_serve("--no-web", "--no-ai", "--workers", "2", "--port",
                        address.rsplit(":", 1)[1], env={"REDIS_URL": redis_url},
                        stderr=subprocess.PIPE)
    finally:
        _stop(process)
    assert not any(is_alive(pid) for pid in workers)


@pytest.mark.timeout(90)
def test_a_worker_that_dies_is_started_again(redis_url: str, tmp_path: Path) -> None:
    """Nineteenth audit: a SIGKILLed engine of `serve --workers 2` was neither replaced
    nor logged, and serve ran on with one engine fewer. It is started again on the same
    port (and serves), and the exit is logged as an error. Its metrics port is no one
    else's meanwhile, on either loopback: serve holds it (a re-test's "Left": another
    user could take it and keep the worker from coming back)."""
    metrics_port = free_port_pair()
    with (tmp_path / "serve.log").open("w") as log:
        process, address = start_serve("--no-web", "--no-ai", "--workers", "2",
                                       "--metrics-port", str(metrics_port),
                                       "--create-rate", "1000",
                                       env={"REDIS_URL": redis_url}, stderr=log)
    try:
        first = _engine_workers(process.pid)
        assert len(first) == 1
        os.kill(first[0], signal.SIGKILL)
        deadline, second = time.monotonic() + 30, first
        while is_alive(first[0]):
            assert time.monotonic() < deadline, "the killed worker lives"
            time.sleep(0.01)
        assert taken_on("127.0.0.1", metrics_port + 1) and taken_on("::1", metrics_port + 1)
        while time.monotonic() < deadline and second in (first, []):
            time.sleep(0.1)
            second = _engine_workers(process.pid)
        assert second not in (first, []), "the engine worker was not started again"
        assert first[0] not in children(process.pid), "the killed worker was not reaped"
        served = 0
        while time.monotonic() < deadline and not served:  # the new one takes its calls
            client = Client(grpc.insecure_channel(address,
                                                  [("grpc.use_local_subchannel_pool", 1)]))
            try:
                client.create()
            finally:
                client.channel.close()
            with contextlib.suppress(OSError):
                served = calls_served(metrics_port + 1)
        assert served > 0
    finally:
        stop_serve(process)
    lines = [json.loads(line) for line in (tmp_path / "serve.log").read_text().splitlines()
             if line.startswith("{")]
    assert any(line["message"] == "engine worker exited: starting it again"
               and line["level"] == "error" and line["worker_pid"] == first[0]
               for line in lines), lines[-5:]


@pytest.mark.timeout(120)
def test_a_worker_that_cannot_be_started_is_tried_again(redis_url: str, tmp_path: Path) -> None:
    """Twentieth audit: a restart whose process could not even be made (no descriptor
    left: Popen raised) ended the supervision for good, silently. It is logged and
    tried again until it works."""
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process, _ = start_serve("--no-web", "--no-ai", "--workers", "2",
                                 env={"REDIS_URL": redis_url}, stderr=log)
    soft, hard = resource.prlimit(process.pid, resource.RLIMIT_NOFILE)
    try:
        first = _engine_workers(process.pid)
        open_now = len(os.listdir(f"/proc/{process.pid}/fd"))
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (open_now, hard))
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while "could not be started" not in log_path.read_text():
            assert time.monotonic() < deadline, "no failed start logged"
            time.sleep(0.2)
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (soft, hard))
        deadline, second = time.monotonic() + 90, []
        while time.monotonic() < deadline and second in (first, []):
            time.sleep(0.2)
            second = _engine_workers(process.pid)
        assert second not in (first, []), "the engine worker was not started again"
    finally:
        with contextlib.suppress(OSError):
            resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (soft, hard))
        stop_serve(process)


def test_a_worker_whose_start_hangs_is_killed_and_started_again(
        redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Twentieth audit: a restarted worker that never came to listen (stopped, or stuck on
    a lock) held its supervision for good. One not listening within the start timeout
    (60 s in serve; 3 s here) is killed, logged, and started again."""
    workers = Workers(1, ["--workers", "1", "--no-ai", "--no-web", "--shared-port"],
                      redis_url, EngineConfig(), start_timeout_s=3.0)

    async def scenario() -> None:
        await workers.start(free_port(), lambda: None)
        supervising = asyncio.create_task(workers.supervise(interval_s=0.1))
        try:
            first = workers.processes[0].pid
            os.kill(first, signal.SIGKILL)
            hung = await _next_worker(workers, first)
            os.kill(hung, signal.SIGSTOP)  # well before it can listen (it takes a second)
            workers.start_timeout_s = 60.0  # for the one after it (the hung one's is running)
            started = await _next_worker(workers, hung, timeout_s=40)
            assert not is_alive(hung)
            for _ in range(300):  # the new one comes to listen: the supervision goes on
                if "engine worker listening" in caplog.text.split("not listening")[-1]:
                    break
                await asyncio.sleep(0.1)
            assert workers.processes[0].pid == started and workers.processes[0].poll() is None
        finally:
            supervising.cancel()
            workers.terminate()
            workers.wait()

    with caplog.at_level(logging.INFO, logger="battleline.serve"):
        asyncio.run(scenario())
    assert "could not be started: not listening within 3 s" in caplog.text
    assert "engine worker listening" in caplog.text.split("not listening within 3 s")[-1]


async def _next_worker(workers: Workers, before: int, timeout_s: float = 20) -> int:
    """The pid of the worker started in place of `before`."""
    deadline = time.monotonic() + timeout_s
    while workers.processes[0].pid == before:
        assert time.monotonic() < deadline, "no worker started in its place"
        await asyncio.sleep(0.01)
    return workers.processes[0].pid


def _engine_workers(pid: int) -> list[int]:
    """The other engine processes of serve `pid`."""
    return [child for child in children(pid) if "serve" in command_line(child)]


@pytest.mark.parametrize(("command", "flag"), [
    ("serve", "--port"), ("serve", "--web-port"), ("serve", "--metrics-port"),
    ("web", "--port"), ("ai", "--port"),
])
def test_a_port_in_use_is_said_in_one_line(command: str, flag: str, redis_url: str) -> None:
    """A second `battleline serve` on a taken port (or any server command) says which
    address it cannot listen on and which options choose another, exits 1, and prints no
    traceback (the engine's port once ended in a page of grpc internals), nor a line
    of gRPC's own log (its failed bind wrote one before ours)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        others = {"serve": ["--port", "0", "--no-ai", "--web-port", "0"],
                  "web": ["--engine", "127.0.0.1:1"],
                  "ai": ["--engine", "127.0.0.1:1", "--workers", "0"]}[command]
        result = subprocess.run(
            [BATTLELINE, command, *others, flag, port], capture_output=True, text=True,
            timeout=60, env={**os.environ, "REDIS_URL": redis_url,
                             "BATTLELINE_AI_KEY": "tests-hosted-ai-key-0123456789"})
    assert result.returncode == 1, (result.returncode, result.stderr)
    said = [line for line in result.stderr.splitlines() if line.startswith("battleline ")]
    assert len(said) == 1, result.stderr
    what = "serve metrics on" if flag == "--metrics-port" else "listen on"
    assert f"cannot {what} 127.0.0.1:{port}" in said[0], said
    assert flag in said[0] and "Traceback" not in result.stderr, result.stderr
    assert not re.search(r"^[DIWEF]\d{4} \d\d:\d\d", result.stderr, re.M), result.stderr


def test_a_workers_metrics_port_in_use_is_said_in_one_line(redis_url: str) -> None:
    """`serve --workers 2 --metrics-port M` with M + 1 taken (the second engine's) ended
    in a traceback once that engine failed (twenty-ninth audit): now it is found first."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        second = taken.getsockname()[1]
        result = subprocess.run(
            [BATTLELINE, "serve", "--port", "0", "--no-ai", "--no-web", "--workers", "2",
             "--metrics-port", str(second - 1)], capture_output=True, text=True,
            timeout=60, env={**os.environ, "REDIS_URL": redis_url})
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert f"cannot serve metrics on 127.0.0.1:{second}" in result.stderr, result.stderr
    assert "--metrics-port" in result.stderr and "Traceback" not in result.stderr


def test_a_worker_that_does_not_start_is_said_in_one_line(redis_url: str) -> None:
    """A second engine that could not listen at serve's start (its metrics port taken
    after serve's probe, which serve now holds from the start instead) printed its own
    line, then serve a traceback (a re-test, 5 of 5 with a squatter timed so): now one
    line with its exit status."""
    workers = Workers(1, ["--no-ai", "--no-web", "--shared-port", "--clock", "never"],
                      redis_url, EngineConfig())
    with pytest.raises(WorkerFailed, match=r"^an engine worker did not start \(exit 2; "):
        asyncio.run(workers.start(free_port(), lambda: None))


@pytest.mark.parametrize(("ports", "said"), [
    (lambda p: ["--port", str(p + 1), "--metrics-port", str(p), "--no-web"],
     lambda p: f"engine 1's metrics port would be --port {p + 1}"),
    (lambda p: ["--port", "0", "--web-port", str(p + 1), "--metrics-port", str(p)],
     lambda p: f"engine 1's metrics port would be --web-port {p + 1}"),
    (lambda p: ["--port", "0", "--metrics-port", "65535", "--no-web"],
     lambda p: "2 engines need ports 65535-65536, past 65535"),
], ids=["grpc-port", "web-port", "past-65535"])
def test_metrics_ports_that_clash_are_said_in_one_line(
        redis_url: str, ports: Callable[[int], list[str]], said: Callable[[int], str]) -> None:
    """`--metrics-port M --workers 2` with M + 1 the gRPC or the web port, or past 65535:
    one line, before anything binds (the worker's metrics sockets, held by serve, took the
    gRPC port first and gRPC printed a line of its log; the web port's clash blamed
    another program; past 65535, a traceback: a re-test)."""
    port = free_port_pair()
    result = subprocess.run(
        [BATTLELINE, "serve", "--no-ai", "--workers", "2", *ports(port)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "REDIS_URL": redis_url})
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert said(port) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "add_port" not in result.stderr


def test_two_serves_started_at_once_cannot_both_claim_a_shared_port(tmp_path: Path) -> None:
    """Two `serve --workers 2` started 0.3 s apart both passed the probe before either
    bound (eighteenth audit: 8 of 12 matches read back unknown): the first holds a lock
    of the port while it runs, which the second cannot take."""
    from battleline_engine.listening import CannotListen, claim_shared_port

    port, folders = free_port(), [tmp_path / "locks"]
    first = claim_shared_port("127.0.0.1", port, folders)
    assert len(first) == 1
    try:
        with pytest.raises(CannotListen, match="another serve holds it"):
            claim_shared_port("127.0.0.1", port, folders)
    finally:
        first[0].close()
    again = claim_shared_port("127.0.0.1", port, folders)  # free once the first is gone
    assert len(again) == 1
    again[0].close()


def test_a_lock_directory_another_user_made_first_leaves_the_runtime_ones_lock(
        tmp_path: Path) -> None:
    """Twenty-eighth audit: the lock's directory has a fixed name in /tmp, so another
    user who made it first switched the lock off without a word. The user's runtime
    directory ($XDG_RUNTIME_DIR), which no one else can write, holds one too."""
    from battleline_engine.listening import CannotListen, claim_shared_port, port_lock_dirs

    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory as another user")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    folders = port_lock_dirs({"XDG_RUNTIME_DIR": str(runtime)})
    assert folders[-1] == runtime / "battleline-ports"
    squatted = tmp_path / "squatted"
    squatted.mkdir(mode=0o777)
    os.chown(squatted, 65534, 65534)  # another user's, as if made first in /tmp
    port = free_port()
    assert claim_shared_port("127.0.0.1", port, [squatted]) == []  # no lock of its own
    first = claim_shared_port("127.0.0.1", port, [squatted, folders[-1]])
    try:
        assert len(first) == 1
        with pytest.raises(CannotListen, match="another serve holds it"):
            claim_shared_port("127.0.0.1", port, [squatted, folders[-1]])
    finally:
        first[0].close()


@pytest.mark.parametrize(("command", "args"), [
    ("serve", ["--port", "70000"]), ("serve", ["--port", "-1"]),
    ("serve", ["--web-port", "70000"]), ("serve", ["--metrics-port", "65536"]),
    ("serve", ["--clock-s", "-5"]), ("serve", ["--retention", "-1"]),
    ("serve", ["--grace", "-1"]), ("serve", ["--action-rate", "0"]),
    ("serve", ["--create-rate", "0"]), ("serve", ["--streams-per-seat", "0"]),
    ("web", ["--port", "70000"]), ("ai", ["--port", "70000"]),
    ("ai", ["--move-cap", "0"]),
])
def test_numbers_out_of_range_are_refused_before_anything_starts(
        command: str, args: list[str]) -> None:
    """An operator's `--port 70000` listened on 4464 (the port modulo 65536), `--port -1`
    on 65535, `--web-port 70000` failed with a traceback after the engine had started, and
    `--clock-s -5` made every new match end as it was created."""
    from typer.testing import CliRunner

    from battleline_client.cli import app

    result = CliRunner().invoke(app, [command, *args])
    assert result.exit_code == 2, result.output
    assert args[0] in result.output and "Traceback" not in result.output


def test_metrics_descriptors_that_are_no_sockets_are_refused_in_one_line(
        tmp_path: Path) -> None:
    """`--metrics-fds` (hidden, written by `serve --workers` for its extra engines) ended
    in a traceback when malformed or not a socket (the last read of a change)."""
    from typer.testing import CliRunner

    from battleline_client.cli import app

    with (tmp_path / "file").open("w") as file:
        for value, said in (("x,1", "is not descriptors a,b"), ("999", "999 is not an open"),
                            (str(file.fileno()), f"{file.fileno()} is not an open socket")):
            result = CliRunner().invoke(app, ["serve", "--metrics-fds", value])
            assert result.exit_code == 2, result.output
            assert said in result.output and "Traceback" not in result.output


def test_a_data_directory_another_serve_runs_is_refused_in_one_line(tmp_path: Path) -> None:
    """A second serve on a running serve's data directory ended in a 34-line traceback."""
    data = str(tmp_path / "data")
    process, _ = _start("--data-dir", data, "--no-ai", "--no-web")
    try:
        second = subprocess.run(
            [BATTLELINE, "serve", "--port", "0", "--no-web", "--no-ai", "--data-dir", data],
            env={**os.environ, "REDIS_URL": ""}, capture_output=True, text=True, timeout=30)
    finally:
        _stop(process)
    assert second.returncode == 2, second.stderr
    assert "another process runs Redis on" in second.stderr
    assert "--data-dir" in second.stderr and "Traceback" not in second.stderr


def test_the_other_engines_get_every_shared_option() -> None:
    """`serve --workers N` passes its settings to its other engines by rebuilding its own
    command line: parsed again, every option outside NOT_SHARED has the value given."""
    from typer.main import get_command

    from battleline_client.cli import app
    from battleline_host.commands.serve import NOT_SHARED, shared_options

    serve = get_command(app).commands["serve"]  # type: ignore[attr-defined]
    given = ["--host", "0.0.0.0", "--list-rate", "0.25", "--log-level", "warning",
             "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "::1/128", "--open-limits",
             "--tls-cert", "c.pem", "--tls-key", "k.pem", "--workers", "3", "--port", "7"]
    original = serve.make_context("serve", list(given))
    rebuilt = serve.make_context("serve", shared_options(original))
    shared = {name for name in original.params if name not in NOT_SHARED}
    assert {"list_rate", "trusted_proxy", "open_limits", "tls_cert", "log_level"} <= shared
    assert {name: rebuilt.params[name] for name in shared} == {
        name: original.params[name] for name in shared}
    assert rebuilt.params["workers"] == 1 and rebuilt.params["port"] != 7  # not passed on


@pytest.mark.parametrize("command", ["serve", "ai"])
def test_the_manifests_placeholder_secrets_are_refused(command: str) -> None:
    """deploy/'s manifests ship `change-me...` keys: a service started with one would let
    anyone who read them act for the hosted AI, so it refuses to start."""
    env = {**os.environ, "BATTLELINE_AI_KEY": "change-me-to-a-long-random-key",
           "REDIS_URL": "redis://127.0.0.1:1/0"}
    args = {"serve": ["--no-web", "--port", "0"], "ai": ["--engine", "127.0.0.1:1"]}[command]
    result = subprocess.run([BATTLELINE, command, *args], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert "placeholder" in result.stderr and "change-me-to-a-long" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "ai"])
def test_a_redis_password_on_the_command_line_is_refused(command: str) -> None:
    """`--redis-url redis://:PASSWORD@...` would show the password to every local user
    (`ps`): it is refused, without repeating it."""
    url = "redis://:a-password-in-ps@127.0.0.1:1/0"
    env = {**os.environ, "BATTLELINE_AI_KEY": "k" * 32}
    env.pop("REDIS_URL", None)
    extra = {"serve": ["--no-web", "--port", "0"], "ai": ["--engine", "127.0.0.1:1"]}[command]
    typed = subprocess.run([BATTLELINE, command, "--redis-url", url, *extra], env=env,
                           capture_output=True, text=True, timeout=60)
    assert typed.returncode != 0 and "by REDIS_URL" in typed.stderr
    assert "a-password-in-ps" not in typed.stderr


@pytest.mark.parametrize("command", ["serve", "ai"])
def test_a_placeholder_redis_password_is_refused(command: str) -> None:
    """A REDIS_URL still holding deploy/'s `change-me` password is a published password."""
    env = {**os.environ, "BATTLELINE_AI_KEY": "k" * 32,
           "REDIS_URL": "redis://:change-me@127.0.0.1:1/0"}
    extra = {"serve": ["--no-web", "--port", "0"], "ai": ["--engine", "127.0.0.1:1"]}[command]
    result = subprocess.run([BATTLELINE, command, *extra], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0 and "placeholder" in result.stderr


@pytest.mark.parametrize("command", ["serve", "ai"])
def test_an_unreachable_redis_is_logged_in_one_line_not_a_traceback_each_time(
        command: str) -> None:
    """A Redis that is down (restarting, misconfigured) is expected: the engine's sweeper
    and an AI worker say so in a line, where each printed a traceback of 40 lines (the
    engine's every half second)."""
    env = {**os.environ, "BATTLELINE_AI_KEY": "k" * 32, "REDIS_URL": "redis://127.0.0.1:1/0"}
    extra = {"serve": ["--no-web", "--no-ai", "--port", "0"],
             "ai": ["--engine", "127.0.0.1:1"]}[command]
    process = subprocess.Popen([BATTLELINE, command, *extra, "--log-format", "text"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    process.terminate()
    _, err = process.communicate(timeout=30)
    assert "unreachable" in err or "cannot reach Redis" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("url", ["redis://127.0.0.1:99999/0", "http://127.0.0.1:6379/0",
                                 " redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0\t"])
def test_a_malformed_redis_url_is_refused_in_one_line(url: str) -> None:
    env = {**os.environ, "REDIS_URL": url}
    result = subprocess.run([BATTLELINE, "serve", "--no-web", "--port", "0"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--redis-url" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "ai"])
def test_a_cluster_of_a_unix_socket_is_refused_in_one_line(command: str) -> None:
    """Second round of the twenty-sixth audit: `unix://` with REDIS_CLUSTER=1 became
    `unix+cluster://`, on which `ai`'s workers failed over and over, a traceback each."""
    env = {**os.environ, "BATTLELINE_AI_KEY": "k" * 32, "REDIS_CLUSTER": "1",
           "REDIS_URL": "unix:///tmp/nowhere.sock"}
    extra = {"serve": ["--no-web", "--port", "0"], "ai": ["--engine", "127.0.0.1:1"]}[command]
    result = subprocess.run([BATTLELINE, command, *extra], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "--redis-cluster needs a redis://" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(60)
def test_max_calls_refuses_calls_past_it(redis_url: str) -> None:
    """`--max-calls` (a pod's memory) caps the calls one engine holds, streams included:
    the next is refused at once, not queued."""
    process, address = _start("--redis-url", redis_url, "--no-web", "--max-calls", "3")
    try:
        assert _serving(address) == health_pb2.HealthCheckResponse.SERVING
        with grpc.insecure_channel(address) as channel:
            created = lobby_pb2_grpc.LobbyServiceStub(channel).CreateMatch(
                lobby_pb2.CreateMatchRequest(
                    options=types_pb2.MatchOptions(ruleset="standard"),
                    opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL)),
                timeout=10)
            watch = watch_pb2_grpc.WatchServiceStub(channel)
            streams = [watch.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                   timeout=30) for _ in range(3)]
            for stream in streams:
                next(stream)  # each holds one of the three calls
            with pytest.raises(grpc.RpcError) as refused:
                next(watch.Watch(watch_pb2.WatchRequest(match_id=created.match_id),
                                 timeout=10))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            for stream in streams:
                stream.cancel()
    finally:
        _stop(process)
