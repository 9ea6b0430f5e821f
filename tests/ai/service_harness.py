"""Real hosted-AI worker processes and a random human through the client library.

Shared by the AI service tests and the `battleline play` test: no mocks, a
worker is `python -m battleline_ai.worker` on loopback against a real engine
and a real Redis.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import redis

from battleline_client.bots import choose
from battleline_client.client import Client, Seat
from battleline_client.common import is_finished, is_my_turn
from battleline_engine.storage.ai import GROUP, REQUESTS_KEY
from battleline_host.local import open_limits

AI_KEY = "tests-hosted-ai-key-0123456789"
# A local engine that admits the hosted AI with AI_KEY.
WITH_AI = replace(open_limits(), ai_key=AI_KEY)


def start_worker(engine: str, redis_url: str, log: Path, *, claim_idle: float = 30.0,
                 move_cap: float = 0.3, concurrency: int = 8, park_after: float = 60.0,
                 think: float = 0.0, key: str = AI_KEY) -> subprocess.Popen[bytes]:
    """One worker process; its log goes to `log` (appended). It plays as soon as it has
    chosen (`think` 0, not the service's second a play) unless told otherwise."""
    env = {**os.environ, "BATTLELINE_AI_KEY": key, "REDIS_URL": redis_url}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "battleline_ai.worker", "--engine", engine,
             "--claim-idle", str(claim_idle), "--move-cap", str(move_cap),
             "--concurrency", str(concurrency), "--park-after", str(park_after),
             "--think", str(think)],
            stdout=out, stderr=subprocess.STDOUT, env=env)


def wait_phase(client: Client, match_id: str, phase: int, timeout_s: float) -> bool:
    """Whether the match reaches `phase` within `timeout_s` (polled ten times a second)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.view(match_id).phase == phase:
            return True
        time.sleep(0.1)
    return False


def pending(store: redis.Redis) -> int:
    """AI requests a worker has read and not yet acknowledged."""
    return int(store.xpending(REQUESTS_KEY, GROUP)["pending"])


def wait_pending(store: redis.Redis, count: int, timeout_s: float = 10) -> None:
    """Wait until `count` AI requests are pending: a worker acknowledges a request it is
    done with (or drops) a moment after the engine's state shows it."""
    deadline = time.monotonic() + timeout_s
    while pending(store) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pending(store) == count, f"{pending(store)} AI requests pending, not {count}"


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def play_random(client: Client, seats: list[Seat], rng: random.Random, *,
                timeout_s: float = 120, until: int | None = None) -> list[int]:
    """Random moves for every seat whose turn it is, until all matches are over (or each
    seat made `until` requests); returns the requests per seat."""
    made = [0] * len(seats)
    deadline = time.monotonic() + timeout_s
    while True:
        busy = False
        for i, seat in enumerate(seats):
            view = seat.view()
            if is_finished(view) or (until is not None and made[i] >= until):
                continue
            busy = True
            if is_my_turn(view):
                seat.act(*choose(view, rng))
                made[i] += 1
        if not busy:
            return made
        if time.monotonic() > deadline:
            raise AssertionError(f"matches not over within {timeout_s} s")
        time.sleep(0.03)


def played_match(client: Client, seed: int) -> str:
    """A LOCAL match played to its end by random moves for both seats."""
    created = client.create(opponent="local", clock="none", seed=seed)
    assert created.other is not None
    play_random(client, [client.seat(created.seat), client.seat(created.other)],
                random.Random(seed))
    return created.match_id
