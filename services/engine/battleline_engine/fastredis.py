"""A lean Redis connection for the commands on every action's path.

redis-py's asyncio client spends most of an engine call's Redis time in
Python around the command: a pooled connection checked out and back under a
lock, a timeout context, a retry wrapper, a stream reader. The few commands
that every GetView and SubmitAction sends (one HGETALL or one EVALSHA), and
a new match's live-index entry and a first seat-token lookup, go here
instead: one connection, commands pipelined across concurrent calls, replies
handed back in order, parsed by hiredis.

Batching is adaptive. A command sent while none is in flight (a lone few
matches) leaves at the end of this turn of the event loop: no latency price.
A command sent while others are in flight waits for them: it leaves with the
rest of its batch when their replies are all in, or after `BATCH_INTERVAL_S`
at the latest. Under load one write and one read then serve many calls, which
costs far less CPU (here and in Redis) than one per call.
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
from itertools import islice
from typing import Any

import hiredis
import redis.exceptions
from redis.asyncio.connection import parse_url

from battleline_client.backoff import backoff

from .listener_pin import ListenerPin

CONNECT_TIMEOUT_S = 5.0
# While commands are in flight, the next batch waits for their replies at most this long
# (0: every command leaves at the end of its turn of the event loop, batched or not).
BATCH_INTERVAL_S = 0.002
RETRIES = 6  # a command is sent at most 1 + RETRIES times (about 4 s of waits in all)


class _Protocol(asyncio.Protocol):
    """Replies are matched to commands in order: Redis answers one connection in order."""

    def __init__(self, batch_interval_s: float) -> None:
        self.reader = hiredis.Reader()
        # Callers of the commands sent (in flight), then of those of the next batch.
        self.waiters: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._interval = batch_interval_s
        self._outgoing: list[bytes] = []  # commands of the next batch
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        reader, waiters = self.reader, self.waiters
        reader.feed(data)
        while True:
            reply = reader.gets()
            if reply is False:
                break
            if len(waiters) <= len(self._outgoing):  # a reply nobody asked for
                self._fail(redis.exceptions.ConnectionError("unexpected reply from Redis"))
                return
            waiter = waiters.popleft()
            if not waiter.done():  # a cancelled caller's reply is dropped
                waiter.set_result(reply)
        if self._outgoing and len(waiters) == len(self._outgoing):
            self._flush()  # nothing in flight any more: the waiting batch leaves now

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(redis.exceptions.ConnectionError(f"connection to Redis lost: {exc}"))

    def _fail(self, error: Exception) -> None:
        self.lost = True
        self._outgoing = []
        if self.transport is not None:
            self.transport.close()
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        """Queue a command for the next batch: it leaves at the end of this turn of the
        event loop if nothing is in flight, else once the replies in flight are in (or
        `batch_interval_s` has passed)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        if not self._outgoing:
            if self._interval > 0 and self.waiters:  # commands in flight: batch behind them
                self._timer = loop.call_later(self._interval, self._flush)
            else:
                loop.call_soon(self._flush)
        self.waiters.append(waiter)
        self._outgoing.append(packed)
        return waiter

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._outgoing:  # already sent (its replies came in before the timer)
            return
        data, self._outgoing = b"".join(self._outgoing), []
        if self.transport is not None and not self.lost:
            self.transport.write(data)


# Error replies whose first word names a redis-py exception (as redis-py maps them);
# any other error reply is a ResponseError.
_ERRORS: dict[str, type[redis.exceptions.RedisError]] = {
    "LOADING": redis.exceptions.BusyLoadingError,  # a restarted Redis reading its data
    "NOSCRIPT": redis.exceptions.NoScriptError,
    "READONLY": redis.exceptions.ReadOnlyError,
    "OOM": redis.exceptions.OutOfMemoryError,
    "MASTERDOWN": redis.exceptions.MasterDownError,
    "WRONGPASS": redis.exceptions.AuthenticationError,
    "NOAUTH": redis.exceptions.AuthenticationError,
    "NOPERM": redis.exceptions.NoPermissionError,
}


def _error(reply: hiredis.ReplyError) -> redis.exceptions.RedisError:
    """The exception redis-py raises for this error reply: LOADING is a BusyLoadingError,
    a ConnectionError, so it is retried and answered UNAVAILABLE like an unreachable
    Redis; NOSCRIPT is a NoScriptError. Written here, not taken from redis-py's private
    parser module, which moves between releases."""
    message = str(reply)
    code, _, rest = message.partition(" ")
    kind = _ERRORS.get(code)
    if kind is not None:
        return kind(rest)
    if message == "ERR max number of clients reached":
        return redis.exceptions.ConnectionError(message)
    return redis.exceptions.ResponseError(message)


class FastRedis:
    """One pipelined connection to a (non-cluster, non-TLS) Redis, made on first use."""

    def __init__(self, url: str, batch_interval_s: float = BATCH_INTERVAL_S,
                 pin: ListenerPin | None = None) -> None:
        """`pin`: who may have accepted a TCP connection before AUTH is sent on it."""
        options = parse_url(url)
        self.batch_interval_s = batch_interval_s
        self.pin = pin or ListenerPin()
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
            def made() -> _Protocol:
                return _Protocol(self.batch_interval_s)

            try:
                if self.path:
                    opening = loop.create_unix_connection(made, self.path)
                else:
                    opening = loop.create_connection(made, self.host, self.port)
                transport, protocol = await asyncio.wait_for(opening, CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as err:
                raise redis.exceptions.ConnectionError(f"cannot reach Redis: {err}") from err
            self.pin.admit(transport)
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
        for delay in (*islice(backoff(0.25, 2.0), RETRIES), None):
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
