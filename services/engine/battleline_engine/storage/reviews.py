"""Post-game reviews, kept with their match (RecordService.GetReview)::

    bl:{id}:review   string  the encoded review of a finished match; expires with
                             the match's hash

A finished match never changes, so neither does its review: it is computed
once (by the AI service) and read from here afterwards.
"""

from __future__ import annotations

from typing import cast

from .connection import Connection
from .matches import match_key


class ReviewCache:
    """Each finished match's review, as the caller encoded it."""

    def __init__(self, connection: Connection) -> None:
        self._redis = connection.redis

    async def get(self, match_id: str) -> bytes | None:
        """The stored review, or None when none is stored (or the match expired)."""
        data = await self._redis.get(match_key(match_id, "review"))
        return cast("bytes | None", data)  # the connection never decodes replies

    async def put(self, match_id: str, data: bytes) -> None:
        """Keep a review for as long as its match is kept (no longer: nothing would
        delete it), or not at all once the match has expired."""
        ttl = await self._redis.ttl(match_key(match_id, "m"))
        if ttl == -2:  # the match is gone
            return
        await self._redis.set(match_key(match_id, "review"), data,
                              ex=ttl if ttl > 0 else None)
