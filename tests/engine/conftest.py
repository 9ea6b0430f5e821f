"""Engine test fixtures: a client of the shared in-process engine (tests/conftest.py
starts Redis and the engine)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .harness import Client, Engine


@pytest.fixture
def client(engine: Engine) -> Iterator[Client]:
    """A client connected to `engine`."""
    c = Client.to(engine.address)
    yield c
    c.channel.close()
