"""Post-game reviews, kept with their match (RecordService.GetReview)::

    bl:{id}:review   string  the encoded review of a finished match; expires with
                             the match's hash

A finished match never changes, so neither does its review: it is computed
once (by the AI service) and read from here afterwards.
"""

from __future__ import annotations

from typing import Final, cast

from .connection import Connection
from .matches import match_key

# KEYS: the match hash, the review. ARGV: 1 the review. The review takes the hash's
# expiry in the same step (so it never outlives the match); nothing once the match is gone.
_PUT_LUA: Final = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl > 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
else redis.call('SET', KEYS[2], ARGV[1]) end
return 1
"""


class ReviewCache:
    """Each finished match's review, as the caller encoded it."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._put = connection.register(_PUT_LUA)

    async def get(self, match_id: str) -> bytes | None:
        """The stored review, or None when none is stored (or the match expired)."""
        data = await self._connection.redis.get(match_key(match_id, "review"))
        return cast("bytes | None", data)  # the connection never decodes replies

    async def put(self, match_id: str, data: bytes) -> None:
        """Keep a review for as long as its match is kept, not longer."""
        await self._connection.script(
            self._put, [match_key(match_id, "m"), match_key(match_id, "review")], [data])
