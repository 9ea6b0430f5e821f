"""A lean Redis connection for the commands on every action's path.

redis-py's asyncio client spends most of an engine call's Redis time in
Python around the command: a pooled connection checked out and back under a
lock, a timeout context, a retry wrapper, a stream reader. The few commands
that every GetView and SubmitAction sends (one HGETALL or one EVALSHA), and
a new match's live-index entry and a first seat-token lookup, go here
instead: one connection, commands written in batches (pipelined across
concurrent calls, at most one write per `BATCH_INTERVAL_S`) and replies handed
back in order, parsed by hiredis.
Everything else (blocking reads, pipelines, Redis Cluster, TLS) stays on
redis-py.

A lost connection fails the commands waiting on it with redis-py's
ConnectionError (the servicers answer UNAVAILABLE) after the same command
has been tried again on a new connection: every command sent here is a read
or a version-checked, idempotent script, so a repeat is safe. Error replies
become redis-py's exceptions (a Redis still loading its data after a restart
is a ConnectionError too).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import hiredis
import redis.exceptions
from redis._parsers.base import BaseParser
from redis.asyncio.connection import parse_url

CONNECT_TIMEOUT_S = 5.0
# Under load (the last batch carried several commands), commands leave in batches at
# most this often: a write, and the read of its replies, then serve many calls, which
# costs far less CPU (here and in Redis) than one per call or two. A command then waits
# at most this long; otherwise it leaves at the end of this turn of the event loop.
BATCH_INTERVAL_S = 0.002
RETRY_DELAYS_S = (0.05, 0.2, 0.5, 1.0, 2.0)  # a command is sent at most 1 + len(...) times


class _Protocol(asyncio.Protocol):
    """Replies are matched to commands in order: Redis answers one connection in order."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiters: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._outgoing: list[bytes] = []  # commands of the next batch
        self._last_batch = float("-inf")  # when the last batch left (event loop time)
        self._last_size = 0  # how many commands it carried

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        reader, waiters = self.reader, self.waiters
        reader.feed(data)
        while True:
            reply = reader.gets()
            if reply is False:
                return
            if not waiters:  # a reply nobody asked for: the stream is out of step
                self._fail(redis.exceptions.ConnectionError("unexpected reply from Redis"))
                return
            waiter = waiters.popleft()
            if not waiter.done():  # a cancelled caller's reply is dropped
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(redis.exceptions.ConnectionError(f"connection to Redis lost: {exc}"))

    def _fail(self, error: Exception) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        """Queue a command for the next batch: at the end of this turn of the event loop,
        or under load once `BATCH_INTERVAL_S` has passed since the last batch."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self.waiters.append(waiter)
        if not self._outgoing:
            wait = self._last_batch + BATCH_INTERVAL_S - loop.time()
            if wait > 0 and self._last_size > 1:
                loop.call_later(wait, self._flush)
            else:
                loop.call_soon(self._flush)
        self._outgoing.append(packed)
        return waiter

    def _flush(self) -> None:
        self._last_batch = asyncio.get_running_loop().time()
        self._last_size = len(self._outgoing)
        data, self._outgoing = b"".join(self._outgoing), []
        if self.transport is not None and not self.lost:
            self.transport.write(data)


def _error(reply: hiredis.ReplyError) -> redis.exceptions.RedisError:
    """The exception redis-py raises for this error reply: LOADING (a restarted Redis
    reading its data) is a BusyLoadingError, a ConnectionError, so it is retried and
    answered UNAVAILABLE like an unreachable Redis; NOSCRIPT is a NoScriptError."""
    error: redis.exceptions.RedisError = BaseParser.parse_error(str(reply))
    return error


class FastRedis:
    """One pipelined connection to a (non-cluster, non-TLS) Redis, made on first use."""

    def __init__(self, url: str) -> None:
        options = parse_url(url)
        self.host: str = options.get("host", "localhost")
        self.port: int = int(options.get("port", 6379))
        self.path: str | None = options.get("path")
        self.db = int(options.get("db", 0) or 0)
        self.username: str | None = options.get("username")
        self.password: str | None = options.get("password")
        self._protocol: _Protocol | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connecting: asyncio.Lock | None = None

    @staticmethod
    def supports(url: str) -> bool:
        """Whether `url` is a plain redis:// or unix:// URL (no TLS, no cluster)."""
        return url.startswith(("redis://", "unix://"))

    async def _connect(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new event loop (tests)
            self._protocol, self._loop, self._connecting = None, loop, asyncio.Lock()
        assert self._connecting is not None
        async with self._connecting:
            current = self._protocol
            if current is not None and not current.lost:
                return current
            try:
                if self.path:
                    opening = loop.create_unix_connection(_Protocol, self.path)
                else:
                    opening = loop.create_connection(_Protocol, self.host, self.port)
                _, protocol = await asyncio.wait_for(opening, CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as err:
                raise redis.exceptions.ConnectionError(f"cannot reach Redis: {err}") from err
            setup: list[tuple[Any, ...]] = []
            if self.password is not None:
                setup.append(("AUTH", self.username, self.password) if self.username
                             else ("AUTH", self.password))
            if self.db:
                setup.append(("SELECT", self.db))
            for command in setup:
                reply = await protocol.send(hiredis.pack_command(command))
                if isinstance(reply, hiredis.ReplyError):
                    error = _error(reply)
                    protocol._fail(redis.exceptions.ConnectionError(str(reply)))
                    if isinstance(error, redis.exceptions.ConnectionError):
                        raise error  # still loading: retried
                    raise redis.exceptions.AuthenticationError(str(reply))
            self._protocol = protocol
            return protocol

    async def execute(self, *args: Any) -> Any:
        """Send one command; its reply (bytes, int, list or None) or ResponseError."""
        packed = hiredis.pack_command(args)
        for delay in (*RETRY_DELAYS_S, None):
            protocol = self._protocol
            if (protocol is None or protocol.lost
                    or self._loop is not asyncio.get_running_loop()):
                try:
                    protocol = await self._connect()
                except redis.exceptions.ConnectionError:
                    if delay is None:
                        raise
                    await asyncio.sleep(delay)
                    continue
            try:
                reply = await protocol.send(packed)
            except redis.exceptions.ConnectionError:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            if isinstance(reply, hiredis.ReplyError):
                error = _error(reply)
                if isinstance(error, redis.exceptions.ConnectionError) and delay is not None:
                    await asyncio.sleep(delay)  # LOADING: the command did not run
                    continue
                raise error
            return reply
        raise AssertionError("unreachable")

    async def evalsha(self, sha: str, script: str | bytes | memoryview, keys: list[str],
                      args: list[Any]) -> Any:
        """EVALSHA, loading the script first if Redis does not have it (a restart)."""
        try:
            return await self.execute("EVALSHA", sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            await self.execute("SCRIPT", "LOAD", script)
            return await self.execute("EVALSHA", sha, len(keys), *keys, *args)

    async def close(self) -> None:
        """Close the connection (commands waiting on it fail)."""
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            with contextlib.suppress(Exception):
                protocol.transport.close()
