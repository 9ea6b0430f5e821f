"""The lobby: open public matches, invite codes, and each client's held places.

    bl:lobby           zset    open public matches by creation time (ms)
    bl:lobby:<ruleset> zset    the same, one ruleset's (a filtered listing reads only these)
    bl:invite:<code>   string  match id
    bl:ai:client:<h>   zset    a client's unfinished AI matches (h: hash of its address)
    bl:open:client:<h> zset    a client's unjoined OPEN matches

Indexes and hints only: the match hash stays authoritative, and readers drop
entries whose match turns out joined, finished or gone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, cast

from .connection import PREFIX, Connection, check_id, now_ms, text, valid_id

if TYPE_CHECKING:
    from redis.typing import ZSetScoredMembers

_LOBBY: Final = f"{PREFIX}:lobby"

AI_PLACE_TTL_S: Final = 8 * 24 * 3600  # a client's AI match list outlives its matches

# KEYS: the client's set of one kind. ARGV: cap, match id, now ms, ttl s. 1 if counted.
_HOLD_PLACE_LUA: Final = """
local places, cap, match, now, ttl = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not redis.call('ZSCORE', places, match)  -- counted already: one place, taken anew
    and redis.call('ZCARD', places) >= tonumber(cap) then return 0 end
redis.call('ZADD', places, now, match)
redis.call('EXPIRE', places, ttl)
return 1
"""

# KEYS: the client's set of one kind. ARGV: taken-before ms, then match ids. Each id is
# removed only if its place was taken before then (not taken anew meanwhile).
_FREE_STALE_LUA: Final = """
local cutoff = tonumber(ARGV[1])
for i = 2, #ARGV do
  local taken = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if taken and tonumber(taken) < cutoff then redis.call('ZREM', KEYS[1], ARGV[i]) end
end
"""


def _lobby_key(ruleset: str) -> str:
    """The lobby index of one ruleset ("": all of them)."""
    return f"{_LOBBY}:{ruleset}" if ruleset else _LOBBY


def _invite_key(code: str) -> str:
    return f"{PREFIX}:invite:{check_id(code, 'invite code')}"


def _places_key(kind: str, client: str) -> str:
    """A client's matches of one kind ("ai", "open"); the address hashed, since a
    forwarded address is the caller's text."""
    return f"{PREFIX}:{kind}:client:{hashlib.sha256(client.encode()).hexdigest()[:32]}"


class Lobby:
    """Listing, invites and per-client places."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self._hold_place = connection.register(_HOLD_PLACE_LUA)
        self._free_stale = connection.register(_FREE_STALE_LUA)

    # -- the listing -------------------------------------------------------------

    async def list_open(self, limit: int, after: tuple[int, str] | None = None,
                        ruleset: str = "") -> list[tuple[str, int]]:
        """Up to `limit` open public matches (of `ruleset`, "": any) as (match id, created
        ms), newest first, after the cursor `after` = (created ms, match id) of the last
        one seen. Equal times are ordered by descending id (the sorted set's order)."""
        redis, key = self._conn.redis, _lobby_key(ruleset)
        out: list[tuple[str, int]] = []
        if after is not None:  # the rest of after's millisecond first: ids below its id
            same = cast("list[bytes]", await redis.zrevrangebyscore(key, after[0], after[0]))
            out = [(m, after[0]) for m in map(text, same) if m < after[1]][:limit]
        if len(out) < limit:
            top = "+inf" if after is None else f"({after[0]}"
            raw = cast("ZSetScoredMembers", await redis.zrevrangebyscore(
                key, top, "-inf", start=0, num=limit - len(out), withscores=True))
            out += [(text(m), int(score)) for m, score in raw]
        return out

    async def add_open(self, match_id: str, created_ms: int, ruleset: str,
                       ttl_s: int) -> None:
        """List a match in the lobby (all rulesets and its own), and drop entries older
        than `ttl_s`: their matches expired unjoined."""
        async with self._conn.redis.pipeline(transaction=False) as pipe:
            for key in (_LOBBY, _lobby_key(check_id(ruleset, "ruleset"))):
                pipe.zadd(key, {check_id(match_id): created_ms})
                pipe.zremrangebyscore(key, "-inf", f"({created_ms - ttl_s * 1000}")
            await pipe.execute()

    async def remove_open(self, match_ids: Sequence[str], rulesets: Iterable[str] = ()) -> None:
        """Unlist matches (full, finished, or found gone) from the lobby and from the
        indexes of `rulesets` (those it may be in: a gone match's is unknown)."""
        if match_ids:
            async with self._conn.redis.pipeline(transaction=False) as pipe:
                for key in [_LOBBY, *(_lobby_key(r) for r in rulesets)]:
                    pipe.zrem(key, *match_ids)
                await pipe.execute()

    # -- invites -------------------------------------------------------------------

    async def set_invite(self, code: str, match_id: str, ttl_s: int) -> bool:
        """Map an invite code to a match; False if the code is in use."""
        return bool(await self._conn.redis.set(_invite_key(code), check_id(match_id),
                                               nx=True, ex=ttl_s))

    async def resolve_invite(self, code: str) -> str | None:
        """The match id of an invite code."""
        if not valid_id(code):
            return None
        value = await self._conn.redis.get(_invite_key(code))
        return text(value) if value is not None else None

    async def delete_invite(self, code: str) -> None:
        """Forget an invite code (its match was withdrawn)."""
        await self._conn.redis.delete(_invite_key(code))

    # -- places held by a client -----------------------------------------------------

    async def places_of(self, kind: str, client: str) -> list[str]:
        """The matches of `kind` ("ai", "open") counted against a client (some may have
        ended or been joined since)."""
        raw = cast("list[bytes]", await self._conn.redis.zrange(_places_key(kind, client), 0, -1))
        return [text(m) for m in raw]

    async def hold_place(self, kind: str, client: str, match_id: str, cap: int,
                         ttl_s: int = AI_PLACE_TTL_S) -> bool:
        """Count `match_id` against the client's matches of `kind` if fewer than `cap`
        are counted (checked and counted in one script; one counted already is taken
        anew, at this time); False when full. The count
        expires `ttl_s` after its last addition (longer than its matches live)."""
        key = _places_key(kind, client)
        return bool(await self._hold_place(keys=[key], args=[cap, match_id, now_ms(), ttl_s]))

    async def free_places(self, kind: str, client: str, *match_ids: str) -> None:
        """Stop counting these matches (ended, joined, gone, or never created)."""
        if match_ids:
            await self._conn.redis.zrem(_places_key(kind, client), *match_ids)

    async def free_stale_places(self, kind: str, client: str, taken_before_ms: int,
                                *match_ids: str) -> None:
        """Stop counting these matches if their places were taken before `taken_before_ms`
        (one taken anew since, by a create sent again, stays)."""
        if match_ids:
            await self._free_stale(keys=[_places_key(kind, client)],
                                   args=[taken_before_ms, *match_ids])
