"""The Redis connection every storage part shares, and the small helpers they all use.

No key names here: each part (matches, events, lobby, clocks, ai) owns its own.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import math
import re
import secrets
import string
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import redis.asyncio as aioredis
import redis.exceptions

from ..boot_clock import boot_clock
from ..fastredis import BATCH_INTERVAL_S, FastRedis
from ..listener_pin import ListenerPin

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

PREFIX: Final = "bl"  # every key of the engine starts "bl:"

_ID_RE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# Transient: the store (or, on Redis Cluster, the node of the match's slot) cannot answer
# now. ClusterDownError covers a restarting master; TryAgain a slot being migrated;
# RedisClusterUnreachableError no node answering (a re-test: INTERNAL, with a traceback).
STORE_UNAVAILABLE: Final = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError, redis.exceptions.TryAgainError,
    redis.exceptions.SlotNotCoveredError, redis.exceptions.RedisClusterUnreachableError,
)


def store_unwritable(err: Exception) -> bool:
    """Whether the store refused a write it cannot take now: a replica after a failover
    (READONLY), or a Redis whose last save failed, its disk full (MISCONF). Redis 6.2
    wraps a script's in a generic error."""
    text = str(err)
    return isinstance(err, redis.exceptions.ReadOnlyError) or (
        isinstance(err, redis.exceptions.ResponseError)
        and (text.startswith(("MISCONF", "READONLY")) or "-MISCONF" in text
             or "-READONLY" in text))


def store_full(err: Exception) -> bool:
    """Whether the store refused a write for its `maxmemory` (deploy/ sets one, with
    noeviction, so Redis refuses writes rather than its container being killed). A script
    is refused at its first write only, so nothing is half-written. Redis 7 names the
    error OOM; 6.2 (the embedded one) wraps a script's in a generic error."""
    return isinstance(err, redis.exceptions.OutOfMemoryError) or (
        isinstance(err, redis.exceptions.ResponseError)
        and "-OOM command not allowed" in str(err))


def log_failure(log: logging.Logger, what: str, err: Exception) -> None:
    """Log a background task's failure: the store being unreachable (expected while Redis
    restarts) in one line, anything else with its traceback."""
    if isinstance(err, STORE_UNAVAILABLE):
        log.warning("%s: the match store is unreachable: %s", what, err)
    else:
        log.error("%s failed", what, exc_info=err)  # inside an except clause or not


class Connection:
    """One Redis (or Redis Cluster) client, plus the lean connection for the commands of
    every action when there is one (`fast`; without it those go through `redis` too).

    `cluster`: on Redis Cluster a script may touch one slot only, so the parts write
    global indexes right after a match's script instead of inside it.
    """

    def __init__(self, client: aioredis.Redis | aioredis.RedisCluster, *,
                 cluster: bool = False, fast: FastRedis | None = None,
                 pin: ListenerPin | None = None) -> None:
        self.redis = client
        self.fast = fast
        self.cluster = cluster
        self.pin = pin or ListenerPin()  # who its TCP connections may go to

    @classmethod
    def from_url(cls, url: str, *, lean: bool = True,
                 batch_interval_s: float = BATCH_INTERVAL_S,
                 redis_owner: int | None = None) -> Connection:
        """Connect (lazily) to the Redis at `url`; hiredis parses replies when installed.

        A `redis+cluster://` (or `rediss+cluster://`) URL names any node of a Redis
        Cluster: the cluster client discovers the others and `cluster` mode is on.
        `lean`: the commands of every action go on a FastRedis connection (plain
        redis:// and unix:// URLs), batched by `batch_interval_s`; else on redis-py.
        Every TCP connection is checked by one `ListenerPin` before anything is sent:
        Redis's `redis_owner` (a uid) or, None, the first met at its port.
        """
        scheme, separator, rest = url.partition("://")
        url = scheme.lower() + separator + rest  # `REDIS://` read as redis-py reads it
        pin = ListenerPin(redis_owner)
        if is_cluster_url(url):
            cluster_client = aioredis.RedisCluster.from_url(
                url.replace("+cluster", "", 1), decode_responses=False, health_check_interval=30
            )
            # rediss: TLS connections (twenty-sixth audit: the plain class took TLS options
            # it has no use for, and no rediss cluster could be reached)
            tls = issubclass(cluster_client.connection_kwargs.get(
                "connection_class", aioredis.Connection), aioredis.SSLConnection)
            _use_connection_class(cluster_client,
                                  _ResetSafeSSLConnection if tls else _ResetSafeConnection,
                                  pin)
            return cls(cluster_client, cluster=True, pin=pin)
        # Bounded and blocking: under a burst of concurrent calls, commands wait for one
        # of the pooled connections instead of each opening a socket (which fails under
        # load with 1000 concurrent matches).
        checked = {"redis://": _CheckedConnection, "rediss://": _CheckedSSLConnection}.get(
            url.partition("://")[0] + "://")  # else the URL's own class: a unix socket
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=64, timeout=20, decode_responses=False,
            health_check_interval=30,
            **({"connection_class": checked} if checked else {}),
        )
        if checked:  # after the URL's own options: `?listener_pin=` there is not a pin
            pool.connection_kwargs["listener_pin"] = pin
        fast = (FastRedis(url, batch_interval_s, pin) if lean and FastRedis.supports(url)
                else None)
        return cls(aioredis.Redis(connection_pool=pool), fast=fast, pin=pin)

    def register(self, lua: str) -> AsyncScript:
        """A script, loaded on first use (and again after a Redis restart)."""
        return self.redis.register_script(lua)

    async def script(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        """Run a registered script, on the lean connection when there is one."""
        if self.fast is not None:
            return await self.fast.evalsha(script.sha, script.script, keys, args)
        return await script(keys=keys, args=args)

    async def command(self, *args: Any) -> Any:
        """One command on the lean connection when there is one (its raw reply)."""
        if self.fast is not None:
            return await self.fast.execute(*args)
        return await self.redis.execute_command(*args)

    async def close(self) -> None:
        if self.fast is not None:
            await self.fast.close()
        await self.redis.aclose()


class _CheckedConnection(aioredis.Connection):
    """A TCP connection that sends nothing (AUTH is its first command) before its
    `ListenerPin` has checked who accepted it."""

    def __init__(self, *, listener_pin: ListenerPin, **kwargs: Any) -> None:
        self.listener_pin = listener_pin
        super().__init__(**kwargs)

    async def _connect(self) -> None:
        await super()._connect()
        assert self._writer is not None  # set by a connection made
        try:
            self.listener_pin.admit(self._writer.transport)
        except redis.exceptions.ConnectionError:
            self._reader = self._writer = None
            raise


class _CheckedSSLConnection(_CheckedConnection, aioredis.SSLConnection):
    """`_CheckedConnection` over TLS (`rediss://`), checked once the handshake is done
    and before AUTH: a listener of another user's on a loopback port, met by a client that
    verifies no certificate (`ssl_cert_reqs=none`), got the password (a "Left" since the
    twenty-ninth audit)."""


class _ResetSafeConnection(_CheckedConnection):
    """A write on a connection that the peer reset (a restarted Redis Cluster node) can
    fail inside asyncio's transport with AttributeError or TypeError instead of
    ConnectionError (redis-py issue 4287), which skips the cluster client's retry and
    reaches the caller as an unknown error. Here it is the ConnectionError it is: the
    command was not sent, so the cluster client reconnects and retries it."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        try:
            await super().send_packed_command(command, check_health)
        except (AttributeError, TypeError) as err:
            with contextlib.suppress(Exception):
                await self.disconnect(nowait=True)
            raise redis.exceptions.ConnectionError(f"connection lost: {err}") from err


class _ResetSafeSSLConnection(_ResetSafeConnection, aioredis.SSLConnection):
    """`_ResetSafeConnection` over TLS (`rediss+cluster://`)."""


def _use_connection_class(client: aioredis.RedisCluster, connection_class: type,
                          pin: ListenerPin) -> None:
    """The async cluster client has no `connection_class` option: set it (and the pin its
    connections check with) on the shared node settings (nodes found later) and on the
    start-up nodes (made already)."""
    manager = client.nodes_manager
    for kwargs in (client.connection_kwargs, manager.connection_kwargs):
        kwargs.update(connection_class=connection_class, listener_pin=pin)
    for node in manager.startup_nodes.values():
        node.connection_class = connection_class
        node.connection_kwargs["listener_pin"] = pin


def is_cluster_url(url: str) -> bool:
    """Whether `url` asks for the Redis Cluster client (`redis+cluster://...`)."""
    return url.startswith(("redis+cluster://", "rediss+cluster://"))


def raise_lost_cancellation() -> None:
    """Raise CancelledError if the running task was cancelled but a Redis call lost it.

    redis-py's asyncio client can swallow a cancellation that lands mid-command (the
    call returns normally and the task runs on: redis/redis-py#2028, #2551; often in
    a blocking XREAD). A loop that waits on Redis calls this after each call, so a
    cancelled task stops instead of running (or waiting) on.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class StoreClock:
    """The store's time (Redis's TIME), in milliseconds, read between syncs from a clock of
    this machine that never steps and counts its sleep (`boot_clock`): the unit of every
    stored time.

    Why not this machine's wall clock: every engine of one store starts, charges and
    ends the same clocks, and an engine whose wall clock was a minute behind the others'
    gave a player a minute (one ahead timed moves out early); a wall clock stepped back
    on one machine did the same (thirty-fifth audit). Until the first sync it is the
    wall clock."""

    def __init__(self, clock: Callable[[], float] = boot_clock) -> None:
        self._clock = clock
        self._offset_ms = time.time() * 1000 - clock() * 1000
        self._round_trip_s = math.inf  # of the reading in use
        self.synced = False

    def now_ms(self) -> int:
        return int(self._clock() * 1000 + self._offset_ms)

    def wall_gap_s(self) -> float:
        """How far this machine's wall clock is ahead of the store's (behind: negative)."""
        return time.time() - self.now_ms() / 1000

    async def sync(self, redis: aioredis.Redis | aioredis.RedisCluster) -> float | None:
        """Take the store's time from the fastest of TIME_READINGS round trips, as of
        halfway through it; returns how far that moved this clock (s), or None if it
        was left: once synced, a reading much slower than the one in use. A reading's
        error is up to half its round trip, and a busy event loop reads an answer late
        (a 3 s stall put a clock 1.5 s off; the first reading of a loaded test run, 0.2 s
        off: re-tests and CI)."""
        round_trip_s, offset_ms = math.inf, self._offset_ms
        for _ in range(TIME_READINGS):
            sent = self._clock()
            seconds, micros = await redis.time()  # a cluster: its client's default node's
            received = self._clock()
            if received - sent < round_trip_s:
                round_trip_s = received - sent
                offset_ms = seconds * 1000 + micros / 1000 - (sent + received) / 2 * 1000
        if self.synced and round_trip_s > max(SLOW_TIME_READING_S, 2 * self._round_trip_s):
            return None
        moved_s = (offset_ms - self._offset_ms) / 1000 if self.synced else 0.0
        self._offset_ms, self._round_trip_s, self.synced = offset_ms, round_trip_s, True
        return moved_s


TIME_READINGS = 3
SLOW_TIME_READING_S = 0.25  # a round trip always worth taking, if the fastest of its sync
STORE_CLOCK = StoreClock()  # one a process, as a wall clock is


def now_ms() -> int:
    """The store's time in milliseconds (`StoreClock`)."""
    return STORE_CLOCK.now_ms()


_ID_ALPHABET = string.ascii_letters + string.digits


def valid_id(value: str) -> bool:
    """Whether `value` can be an id inside a key (no braces, colons, spaces)."""
    return _ID_RE.fullmatch(value) is not None  # fullmatch: `$` alone lets a final newline in


def check_id(value: str, what: str = "match id") -> str:
    """Reject ids that could escape their key (braces, colons, spaces)."""
    if not valid_id(value):
        # The value is not echoed: a long one would not fit in the status's metadata.
        raise ValueError(f"bad {what} ({len(value)} characters): 1-64 of A-Z a-z 0-9 _ -")
    return value


def new_match_id() -> str:
    """A random match id (17 letters and digits, about 101 bits), safe inside a hash tag.
    Never a leading "-", which a command line would read as an option."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(17))


def secret_match_id(secret: str) -> str:
    """The match id a creator's own secret names (CreateMatchRequest.seat_secret), so
    that its create sent again finds the match it made: 17 letters and digits from the
    secret's SHA-256. The id is public; the secret cannot be worked back from it."""
    number = int.from_bytes(hashlib.sha256(b"battleline match id\0" + secret.encode()).digest())
    letters = []
    for _ in range(17):
        number, k = divmod(number, len(_ID_ALPHABET))
        letters.append(_ID_ALPHABET[k])
    return "".join(letters)


def other_seat_secret(secret: str) -> str:
    """A LOCAL match's second seat secret, derived from its creator's own (both seats are
    the creator's), so that the create sent again answers both tokens; "" (a random one)
    without a secret."""
    if not secret:
        return ""
    digest = hashlib.sha256(b"battleline other seat\0" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def new_seat_token(match_id: str, secret: str = "") -> str:
    """A bearer token for a seat: the match id plus 256 random bits (or the secret its
    creator or joiner chose, so that its create or join sent again names the same seat).

    The match id inside lets the server find the hash without a global index,
    so the token lives (and expires) in the match's own slot.
    """
    return f"{check_id(match_id)}.{secret or secrets.token_urlsafe(32)}"


def hash_token(token: str) -> str:
    """SHA-256 of a token; only this is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def text(value: bytes | str) -> str:
    """A reply item as text (the clients run with decode_responses=False)."""
    return value.decode() if isinstance(value, bytes) else value
