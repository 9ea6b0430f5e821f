"""Client test fixtures: a real engine (LocalService) over the engine tests' real Redis.

The session redis-server fixture is the shared one of tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from battleline_client.client import Client
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI
from tests.processes import free_port


@pytest.fixture(scope="session")
def service(redis_server: str) -> Iterator[LocalService]:
    """One engine for the session, with a local service's open rate limits (and the
    hosted AI admitted, though no AI worker runs)."""
    running = LocalService(redis_server, config=WITH_AI)
    running.start()
    yield running
    running.stop()


@pytest.fixture
def client(service: LocalService) -> Iterator[Client]:
    """A sync client of the session engine."""
    with Client(service.address) as made:
        yield made


@pytest.fixture
def port() -> int:
    """A free port, for an engine a test stops and restarts on the same address."""
    return free_port()
