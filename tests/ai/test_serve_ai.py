"""`battleline serve` brings its hosted AI along (unless --no-ai), and takes it down with it."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from tests.ai.service_harness import AI_KEY, play_random
from tests.processes import (
    BATTLELINE,
    EMBEDDED_STORE,
    alive_after,
    children,
    command_line,
    free_port,
    is_alive,
    start_serve,
    stop_serve,
)


def _serve(tmp_path: Path, *extra: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    return start_serve("--no-web", "--data-dir", str(tmp_path), "--log-format", "text",
                       "--log-level", "warning", *extra, env=env)


def test_serve_starts_an_ai_that_plays_and_dies_with_it(tmp_path: Path) -> None:
    process, address = _serve(tmp_path, env={"BATTLELINE_AI_CLAIM_IDLE": "3"})
    try:
        with Client(address) as client:
            created = client.create(opponent="ai", ai_level=3, clock="per-move",
                                    clock_seconds=30)
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(3), until=2, timeout_s=60)
            while not is_my_turn(view := seat.view()):
                time.sleep(0.05)
            with grpc.insecure_channel(address) as channel:  # hints from the AI serve started
                hint = game_pb2_grpc.GameServiceStub(channel).GetHint(
                    game_pb2.GetHintRequest(match_id=created.match_id, budget_ms=200),
                    metadata=(("authorization", f"Bearer {created.seat.token}"),), timeout=30)
            assert hint.suggestion.action in view.legal_actions
            play_random(client, [seat], random.Random(3), timeout_s=90)
            assert is_finished(seat.view())
        ai = [p for p in children(process.pid) if "ai" in command_line(p)]
        assert len(ai) == 1
        workers = [p for p in children(ai[0])
                   if "battleline_ai.worker" in " ".join(command_line(p))]
        assert workers
        worker_args = command_line(workers[0])
        assert worker_args[worker_args.index("--claim-idle") + 1] == "3.0"  # env passed on
        assert worker_args[worker_args.index("--think") + 1] == "1.0"  # plays take a second
        # The workers log as serve was told to (a level given on serve's command line too).
        assert worker_args[worker_args.index("--log-level") + 1] == "warning"
        assert worker_args[worker_args.index("--log-format") + 1] == "text"
        # It reached the engine by a socket in a directory of serve's own, not the loopback
        # port another user could take once serve is gone (twenty-ninth audit: serve
        # SIGKILLed, the dying AI sent its key to a squatter there in 5 runs of 5).
        engine = worker_args[worker_args.index("--engine") + 1]
        assert engine.startswith("unix:"), engine
        folder = Path(engine.removeprefix("unix:")).parent.stat()
        assert folder.st_mode & 0o777 == 0o700 and folder.st_uid == os.geteuid()
        redis = [p for p in children(process.pid)
                 if EMBEDDED_STORE in " ".join(command_line(p))]
        assert redis  # the embedded Redis must not outlive serve either
    finally:
        process.send_signal(signal.SIGKILL)  # the harshest exit: no cleanup code runs
        process.wait(10)
    alive = alive_after([*ai, *workers, *redis], 20)
    assert not set(alive) & {*ai, *workers}, "AI processes outlived serve"
    assert not set(alive) & set(redis), "the embedded Redis outlived serve"


def test_an_ai_that_dies_is_started_again_and_plays(redis_url: str, tmp_path: Path) -> None:
    """Twenty-sixth session's walkthrough: a SIGKILLed AI child of serve stayed a zombie,
    nothing was logged, health said SERVING, and AI matches waited for a player that
    never came until serve was restarted. It is started again, and the exit logged."""
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process, address = start_serve("--no-web", "--data-dir", str(tmp_path / "data"),
                                       env={"REDIS_URL": redis_url}, stderr=log)
    try:
        def hosted_ai() -> list[int]:
            return [p for p in children(process.pid) if "ai" in command_line(p)]

        deadline = time.monotonic() + 30
        while not (first := hosted_ai()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(first) == 1
        os.kill(first[0], signal.SIGKILL)
        second = first
        while second in (first, []) and time.monotonic() < deadline:
            time.sleep(0.1)
            second = hosted_ai()
        assert second not in (first, []), "the AI was not started again"
        assert first[0] not in children(process.pid), "the killed AI was not reaped"
        with Client(address) as client:
            created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                    clock_seconds=30, seat="second")
            seat = client.seat(created.seat)
            deadline = time.monotonic() + 60
            while not is_my_turn(seat.view()):  # the new AI took its seat and moved
                assert time.monotonic() < deadline, "the AI never moved"
                time.sleep(0.1)
    finally:
        stop_serve(process)
    lines = [json.loads(line) for line in log_path.read_text().splitlines()
             if line.startswith("{")]
    assert any(line["message"] == "hosted AI exited: starting it again"
               and line["level"] == "error" and line["worker_pid"] == first[0]
               for line in lines), lines[-5:]


def test_serve_leaves_the_rotation_before_it_stops_its_ai(tmp_path: Path) -> None:
    """On SIGTERM health says NOT_SERVING first: serve stopped its web page and its AI
    (seconds) before saying so, and balancers kept sending it calls meanwhile."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    process, address = _serve(tmp_path)
    deadline = time.monotonic() + 30
    while not (ai := [p for p in children(process.pid) if "ai" in command_line(p)]) or not [
            p for p in children(ai[0]) if "battleline_ai.worker" in " ".join(command_line(p))]:
        assert time.monotonic() < deadline, "no hosted AI started"  # (its workers too: it
        time.sleep(0.1)  # takes a signal before its handlers are in place as an instant end)
    seen: list[tuple[str, bool]] = []  # each answer, and whether the AI was still there
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        health.Check(health_pb2.HealthCheckRequest(), timeout=5)  # connected before
        process.send_signal(signal.SIGTERM)
        while is_alive(ai[0]) and time.monotonic() < deadline:
            try:
                status = health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                seen.append((health_pb2.HealthCheckResponse.ServingStatus.Name(status),
                             is_alive(ai[0])))
            except grpc.RpcError as err:
                seen.append((err.code().name, is_alive(ai[0])))
            time.sleep(0.01)
    process.wait(30)
    assert not is_alive(ai[0]), "the AI outlived serve"
    assert ("NOT_SERVING", True) in seen, f"the AI stopped first: {seen[:3]}...{seen[-3:]}"


def test_serve_with_no_ai_starts_none(tmp_path: Path) -> None:
    process, _address = _serve(tmp_path, "--no-ai")
    try:
        time.sleep(1.0)
        assert all("ai" not in command_line(p) for p in children(process.pid))
    finally:
        stop_serve(process)


def test_serve_on_a_redis_cluster_plays_an_ai_match(tmp_path: Path) -> None:
    """The AI's stream, consumer group and key on Redis Cluster (REDIS_CLUSTER=1)."""
    from tests.deploy.procs import EngineProcess, RedisCluster

    cluster = RedisCluster(tmp_path / "cluster")
    cluster.start()
    engine = EngineProcess(cluster.url, extra_env={"REDIS_CLUSTER": "1"})
    try:
        engine.start()
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=5, clock="per-move",
                                    clock_seconds=30)
            seat = client.seat(created.seat)
            play_random(client, [seat], random.Random(4), timeout_s=90)
            assert is_finished(seat.view())
    finally:
        engine.stop()
        cluster.stop()


def test_every_process_of_serve_logs_one_json_object_per_line(tmp_path: Path) -> None:
    """serve, its AI service and the AI's workers write the same structured lines, so one
    log collector reads them all (the workers once wrote plain text whatever serve used)."""
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        process, _ = start_serve("--no-web", "--data-dir", str(tmp_path / "data"), stderr=err)
    try:
        deadline = time.monotonic() + 30
        while "ai worker" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop_serve(process)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    loggers = {record["logger"] for record in records}
    assert {"battleline_engine.server", "battleline.ai"} <= loggers, loggers
    worker = [r for r in records if r["logger"] == "battleline.ai" and "ai worker" in r["message"]]
    assert worker and worker[0]["level"] == "info"


@pytest.mark.parametrize("store", ["redis", "cluster"])
def test_engines_without_an_ai_play_against_an_ai_service_run_apart(
        store: str, redis_url: str, tmp_path: Path) -> None:
    """The deployed split (deploy/: engines `serve --no-ai` with BATTLELINE_AI_ADDRESS, AI
    pods `battleline ai --port`): the AI run apart takes the seat and moves, and answers the
    engine's hints; the engine starts no AI of its own. On a Redis Cluster both read
    REDIS_CLUSTER=1 beside a node's plain URL, as the production overlay sets them (`ai`
    ignored it: its workers exited on the first MOVED, over and over)."""
    from tests.deploy.procs import RedisCluster

    shared = {"REDIS_URL": redis_url, "BATTLELINE_AI_KEY": AI_KEY}
    cluster = None
    if store == "cluster":
        cluster = RedisCluster(tmp_path / "cluster")
        cluster.start()
        node = cluster.url.replace("redis+cluster://", "redis://")  # as the overlay names it
        shared = {**shared, "REDIS_URL": node, "REDIS_CLUSTER": "1"}
    engine_port = free_port()
    ai = subprocess.Popen([BATTLELINE, "ai", "--engine", f"127.0.0.1:{engine_port}",
                           "--port", "0", "--log-level", "warning"],
                          stdout=subprocess.PIPE, text=True, env={**os.environ, **shared})
    try:
        assert ai.stdout is not None
        line = ai.stdout.readline()  # "battleline ai service listening on HOST:PORT"
        assert "listening on" in line, line
        process, address = start_serve(
            "--port", str(engine_port), "--no-ai", "--no-web", "--log-level", "warning",
            env={**shared, "BATTLELINE_AI_ADDRESS": line.split()[-1]})
        try:
            assert not [p for p in children(process.pid) if "ai" in command_line(p)]
            with Client(address) as client:
                created = client.create(opponent="ai", ai_level=1, clock="per-move",
                                        clock_seconds=30, seat="second")
                seat = client.seat(created.seat)
                deadline = time.monotonic() + 60
                while not is_my_turn(view := seat.view()):  # the AI run apart moved first
                    assert time.monotonic() < deadline, "the AI never moved"
                    time.sleep(0.1)
                with grpc.insecure_channel(address) as channel:
                    hint = game_pb2_grpc.GameServiceStub(channel).GetHint(
                        game_pb2.GetHintRequest(match_id=created.match_id, budget_ms=200),
                        metadata=(("authorization", f"Bearer {created.seat.token}"),),
                        timeout=30)
                assert hint.suggestion.action in view.legal_actions
        finally:
            stop_serve(process)
    finally:
        stop_serve(ai)
        if cluster is not None:
            cluster.stop()
