"""`battleline serve` brings its hosted AI along (unless --no-ai), and takes it down with it."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc

from battleline.v1 import game_pb2, game_pb2_grpc
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from tests.ai.service_harness import play_random

BATTLELINE = shutil.which("battleline") or str(Path(sys.executable).parent / "battleline")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(p) for p in text]
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _serve(tmp_path: Path, *extra: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [BATTLELINE, "serve", "--port", "0", "--no-web", "--data-dir", str(tmp_path),
         "--log-format", "text", "--log-level", "warning", *extra],
        stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on" in line, line
    return process, line.split()[-1]


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
        ai = [p for p in _children(process.pid) if "ai" in Path(f"/proc/{p}/cmdline")
              .read_text().split("\0")]
        assert len(ai) == 1
        workers = [p for p in _children(ai[0])
                   if "battleline_ai.worker" in Path(f"/proc/{p}/cmdline").read_text()]
        assert workers
        worker_args = Path(f"/proc/{workers[0]}/cmdline").read_text().split("\0")
        assert worker_args[worker_args.index("--claim-idle") + 1] == "3.0"  # env passed on
        redis = [p for p in _children(process.pid)
                 if "redis-server" in Path(f"/proc/{p}/cmdline").read_text()]
        assert redis  # the embedded Redis must not outlive serve either
    finally:
        process.send_signal(signal.SIGKILL)  # the harshest exit: no cleanup code runs
        process.wait(10)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in [*ai, *workers, *redis]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in [*ai, *workers]), "AI processes outlived serve"
    assert not any(_alive(p) for p in redis), "the embedded Redis outlived serve"


def test_serve_with_no_ai_starts_none(tmp_path: Path) -> None:
    process, _address = _serve(tmp_path, "--no-ai")
    try:
        time.sleep(1.0)
        assert _children(process.pid) == [] or all(
            "ai" not in Path(f"/proc/{p}/cmdline").read_text().split("\0")
            for p in _children(process.pid))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)


def test_serve_on_a_redis_cluster_plays_an_ai_match(tmp_path: Path) -> None:
    """The AI's stream, consumer group and vault on Redis Cluster (REDIS_CLUSTER=1)."""
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
