"""The clock index: which matches have a running clock, and when it runs out.

    bl:clocks    zset    match id -> deadline (ms), read by the sweeper

An index only: the match hash's deadline is authoritative, and the sweeper
re-checks it (and commits with a version check) before acting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast

from .connection import PREFIX, Connection, text

if TYPE_CHECKING:
    from redis.typing import ZSetScoredMembers

_KEY: Final = f"{PREFIX}:clocks"


class ClockIndex:
    """Deadlines of running clocks, by match."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection

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
