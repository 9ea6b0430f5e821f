"""The clock index: which matches have a running clock, and when it runs out.

    bl:clocks    zset    match id -> deadline (ms), read by the sweeper

An index only: the match hash's deadline is authoritative, and the sweeper
re-checks it (and commits with a version check) before acting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, cast

import redis.exceptions

from .connection import PREFIX, STORE_UNAVAILABLE, Connection, text

if TYPE_CHECKING:
    from redis.typing import ZSetScoredMembers

_KEY: Final = f"{PREFIX}:clocks"
log = logging.getLogger(__name__)


# Move an entry only if it still holds the deadline the sweeper saw due: a commit that
# wrote another meanwhile (even an earlier one: a per-game clock's next mover) wins.
_MOVE_IF_UNCHANGED_LUA: Final = """
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seen and tonumber(seen) == tonumber(ARGV[2]) then
  return redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 0
"""


class ClockIndex:
    """Deadlines of running clocks, by match."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self._move_if_unchanged = connection.register(_MOVE_IF_UNCHANGED_LUA)
        # Entries this process could not write (Redis Cluster: the index's node away),
        # by match: written again by each sweep (`write_kept`) until they land.
        self._kept: dict[str, int] = {}

    @property
    def key(self) -> str:
        """The index's key, for a match script that updates it in the same step (not
        on Redis Cluster, where it lives in another slot: see `index`)."""
        return _KEY

    async def index(self, match_id: str, deadline_ms: int) -> None:
        """Record a match's deadline (0: no clock running, so drop it)."""
        if deadline_ms:
            await self._conn.redis.zadd(_KEY, {match_id: deadline_ms})
        else:
            await self._conn.redis.zrem(_KEY, match_id)
        self._kept.pop(match_id, None)

    async def index_after_commit(self, match_id: str, deadline_ms: int) -> None:
        """`index`, outside and after a match's commit (Redis Cluster: another slot): a
        failure must not answer a committed action as failed. The entry written before
        the commit (`index_no_later`) wakes the sweeper early meanwhile, and a running
        clock's entry is kept for the next sweep to write; a stopped clock's entry left
        behind is dropped by the sweeper."""
        try:
            await self.index(match_id, deadline_ms)
        except redis.exceptions.RedisError as err:
            if deadline_ms:
                self._keep(match_id, deadline_ms)
            what = "its clock's deadline" if deadline_ms else "its stopped clock"
            log.warning("match %s: %s not written to the clock index (the sweeper writes "
                        "or drops it): %s", match_id, what, err)

    def _keep(self, match_id: str, deadline_ms: int) -> None:
        """Hold an entry that could not be written, for `write_kept`."""
        self._kept[match_id] = min(deadline_ms, self._kept.get(match_id, deadline_ms))

    async def index_no_later(self, match_id: str, deadline_ms: int) -> None:
        """Make sure the index wakes the sweeper by `deadline_ms` (an entry already
        earlier is kept): on Redis Cluster, written before a match's commit, so that a
        commit whose own index write fails after it (cancelled, or the index's node
        away) still has an entry, early at worst, which the sweeper then moves. With the
        index's node away the commit goes on (one node must not stop every clocked
        action of the cluster): the entry is kept, and written by a sweep once it can."""
        try:
            await self._conn.redis.zadd(_KEY, {match_id: deadline_ms}, lt=True)
        except STORE_UNAVAILABLE as err:
            self._keep(match_id, deadline_ms)
            log.warning("match %s: its clock is indexed once the store takes it: %s",
                        match_id, err)

    async def write_kept(self) -> None:
        """Write the entries this process kept (`_keep`), earliest first, until one fails."""
        for match_id, deadline_ms in sorted(self._kept.items(), key=lambda kept: kept[1]):
            await self._conn.redis.zadd(_KEY, {match_id: deadline_ms}, lt=True)
            if self._kept.get(match_id) == deadline_ms:
                del self._kept[match_id]

    async def move_if_unchanged(self, match_id: str, seen_ms: int, deadline_ms: int) -> None:
        """Move an entry found due to the match's own, later deadline, unless a commit
        rewrote the entry since it was read."""
        await self._move_if_unchanged(keys=[_KEY], args=[match_id, seen_ms, deadline_ms])

    async def due(self, at_ms: int, limit: int = 100) -> list[tuple[str, int]]:
        """Matches whose indexed deadline is <= `at_ms`: (match id, deadline ms).

        The index may be stale; the caller re-checks the match hash's deadline and
        version before acting (and commits with a version check anyway).
        """
        raw = cast("ZSetScoredMembers", await self._conn.redis.zrangebyscore(
            _KEY, "-inf", at_ms, start=0, num=limit, withscores=True
        ))
        return [(text(m), int(score)) for m, score in raw]

    async def unindex(self, match_id: str) -> None:
        """Drop a match from the index (gone, or its clock is not running)."""
        await self._conn.redis.zrem(_KEY, match_id)
