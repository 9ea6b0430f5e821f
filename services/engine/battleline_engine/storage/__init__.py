"""Persistence in Redis, in parts that each own their keys (the key tables are at
the top of each module)::

    matches.py   MatchStore    each match's hash, event stream, idempotency record,
                               seats; the live-match index
    events.py    EventStreams  reading match streams; which ones grew (`bl:moved`)
    lobby.py     Lobby         open-match listings, invite codes, places per client
    clocks.py    ClockIndex    deadlines of running clocks, for the sweeper
    ai.py        AiRequests    the stream of requests for a hosted AI to take a seat
    reviews.py   ReviewCache   each finished match's post-game review

Everything stored is opaque here (positions, events and responses are the
caller's text and bytes), and no grpc: callers map `CommitStatus` to their own
error codes. `Storage` is the one connection and its parts.
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis

from ..fastredis import BATCH_INTERVAL_S
from .ai import AiRequests
from .clocks import ClockIndex
from .connection import (
    STORE_CLOCK,
    STORE_UNAVAILABLE,
    Connection,
    check_id,
    hash_token,
    is_cluster_url,
    log_failure,
    new_match_id,
    new_seat_token,
    now_ms,
    other_seat_secret,
    raise_lost_cancellation,
    secret_match_id,
    store_full,
    store_unwritable,
    valid_id,
)
from .events import EventPage, EventStreams, StoredEvent
from .lobby import AI_PLACE_TTL_S, Lobby
from .matches import CommitResult, CommitStatus, MatchRecord, MatchStore
from .reviews import ReviewCache

__all__ = [
    "AI_PLACE_TTL_S", "STORE_CLOCK", "STORE_UNAVAILABLE", "CommitResult", "CommitStatus",
    "EventPage", "MatchRecord", "Storage", "StoredEvent", "check_id", "hash_token",
    "is_cluster_url", "log_failure", "new_match_id", "new_seat_token", "now_ms",
    "other_seat_secret", "raise_lost_cancellation", "secret_match_id", "store_full",
    "store_unwritable", "valid_id",
]

log = logging.getLogger(__name__)
# How often an engine takes the store's time again: a monotonic clock drifts from it by
# well under a millisecond a minute.
CLOCK_SYNC_S = 30.0
CLOCK_SYNC_TIMEOUT_S = 5.0  # a time that took longer to come is not worth taking
# A gap between this machine's clock and the store's worth a warning (and the gauge
# `battleline_wall_clock_gap_seconds`): time is the store's, but an engine of an
# earlier release beside this one keeps its machine's (thirty-sixth audit).
WALL_GAP_WARN_S = 1.0


class Storage:
    """One Redis connection and the parts that use it (`options`: see MatchStore)."""

    def __init__(self, connection: Connection, **options: int) -> None:
        self.connection = connection
        self.clocks = ClockIndex(connection)
        self.lobby = Lobby(connection)
        self.matches = MatchStore(connection, self.clocks, self.lobby, **options)
        self.events = EventStreams(connection)
        self.ai = AiRequests(connection)
        self.reviews = ReviewCache(connection)
        self._wall_gap_told = False  # whether the last sync warned of a gap

    @classmethod
    def from_url(cls, url: str, *, lean: bool = True,
                 batch_interval_s: float = BATCH_INTERVAL_S, redis_owner: int | None = None,
                 **options: int) -> Storage:
        """Connect (lazily) to the Redis at `url`; a `redis+cluster://` URL (or
        `rediss+cluster://`) names any node of a Redis Cluster. `lean`, `batch_interval_s`:
        how the commands of every action are sent; `redis_owner`: the user the password
        may go to (see Connection.from_url)."""
        return cls(Connection.from_url(url, lean=lean, batch_interval_s=batch_interval_s,
                                       redis_owner=redis_owner), **options)

    def redis_owner(self) -> int | None:
        """The user Redis's password may go to, as given or met so far (`ListenerPin`):
        what the processes a serve starts later keep to."""
        return self.connection.pin.known_owner()

    @property
    def redis(self) -> aioredis.Redis | aioredis.RedisCluster:
        """The client itself, for tests and tools that look at keys directly."""
        return self.connection.redis

    async def sync_time(self) -> None:
        """Take the store's time now (`StoreClock`); a failure is logged, and the time
        taken last kept. Says so when the store's time
        moved (a failover to a Redis whose machine's clock differs moves every running
        clock) and when this machine's own clock is off the store's (`WALL_GAP_WARN_S`)."""
        try:
            moved_s = await asyncio.wait_for(STORE_CLOCK.sync(self.connection.redis),
                                             CLOCK_SYNC_TIMEOUT_S)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            log.warning("store clock: no time from the store within %g s: keeping the last",
                        CLOCK_SYNC_TIMEOUT_S)
            return
        except Exception as err:
            log_failure(log, "store clock", err)
            return
        if moved_s is not None and abs(moved_s) > WALL_GAP_WARN_S:
            log.warning("the store's time moved %+.1f s since this process last took it (a "
                        "failover to a Redis whose machine's clock differs?): running "
                        "match clocks moved with it", moved_s)
        self._tell_wall_gap(STORE_CLOCK.wall_gap_s())

    def _tell_wall_gap(self, gap_s: float) -> None:
        """Warn once when this machine's clock goes off the store's, and say when it is
        back: match clocks keep the store's, but engines of releases before that kept
        their own, and beside them (a rollout, a rollback) time moves between players."""
        if (abs(gap_s) > WALL_GAP_WARN_S) == self._wall_gap_told:
            return
        self._wall_gap_told = not self._wall_gap_told
        if self._wall_gap_told:
            log.warning("this machine's clock is %.1f s %s the store's (Redis TIME): match "
                        "clocks keep the store's, but engines of releases before that kept "
                        "their own, and beside them (a rollout, a rollback) time moves "
                        "between players: set the clocks right first", abs(gap_s),
                        "ahead of" if gap_s > 0 else "behind")
        else:
            log.info("this machine's clock agrees with the store's again")

    async def keeping_time(self) -> asyncio.Task[None]:
        """Take the store's time now, then keep it (`keep_time`) in a task, the caller's
        to cancel: what an engine does before serving, and an AI worker before playing."""
        await self.sync_time()
        return asyncio.create_task(self.keep_time(), name="store-time")

    async def keep_time(self) -> None:
        """`sync_time` every CLOCK_SYNC_S (every second until a first sync is made),
        until cancelled."""
        while True:
            await asyncio.sleep(CLOCK_SYNC_S if STORE_CLOCK.synced else 1.0)
            await self.sync_time()
            raise_lost_cancellation()

    async def ping(self) -> bool:
        """Whether Redis answers (for health checks)."""
        return bool(await self.connection.redis.ping())

    async def close(self) -> None:
        """Close the connections."""
        await self.connection.close()
