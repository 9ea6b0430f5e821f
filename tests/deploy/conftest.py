"""Fixtures of the deployment tests: real Redis processes, stopped whatever happens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .procs import RedisCluster, RedisNode


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    """A fresh local 3-master Redis Cluster."""
    nodes = RedisCluster(tmp_path / "cluster")
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture
def single_redis(tmp_path: Path) -> Iterator[RedisNode]:
    """One redis-server, append-only with fsync on every write."""
    node = RedisNode(tmp_path / "redis", durable=True)
    try:
        node.start()
        yield node
    finally:
        node.stop()
