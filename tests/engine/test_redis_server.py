"""The embedded Redis: a real child process with append-only data that outlives it."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from battleline_engine.redis_server import EmbeddedRedis, redis_executable


def test_bundled_binary_is_found() -> None:
    assert Path(redis_executable()).is_file()


def test_starts_persists_and_stops(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "data")
    url = server.start()
    pid = server._process.pid  # type: ignore[union-attr]
    try:
        client = redis.Redis.from_url(url)
        client.set("k", "v")
        info = client.info("persistence")
        assert info["aof_enabled"] == 1
        client.close()
        # The password is required: an unauthenticated local client is refused.
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port).set("x", "y")
    finally:
        server.stop()
    assert not server.running
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert (tmp_path / "data" / "appendonly.aof").exists()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()

    # A new server on the same data directory sees the data written before.
    with EmbeddedRedis(tmp_path / "data") as again:
        assert redis.Redis.from_url(again.url).get("k") == b"v"


def test_one_server_per_data_dir(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as first:
        with pytest.raises(RuntimeError, match="another process"):
            EmbeddedRedis(tmp_path).start()
        assert first.running
