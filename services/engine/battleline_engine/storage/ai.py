"""The AI request stream: matches waiting for a hosted AI to take a seat.

    bl:ai:requests         stream  match, seat, level, owner; read by the consumer group below
    bl:ai:parked:<match>   string  a parked match's request (JSON), until its human moves
    bl:ai:parked           zset    parked match -> when the sweeper last looked at it (ms)

An engine appends a request when an AI match is created; AI workers read it
through one consumer group, keep the entries they serve pending (claiming them
again as a heartbeat), ack them when the match is done, and take over entries
whose worker has been silent too long (and delete such workers from the group once
they hold nothing). A worker whose match has waited long for
its human parks it (`park`, then ack) and holds nothing for it; the engine that
commits the human's move takes the parked request (`unpark`) and appends it again;
the sweeper looks at parked matches in turn, so a wake that engine never finished
(it died, the call was cancelled) is made anyway. Requests older than a week are
trimmed: a match is parked, and its request acked, after a minute without a move.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, cast

import redis.asyncio as aioredis

from .connection import PREFIX, Connection, check_id, now_ms, text

REQUESTS_KEY: Final = f"{PREFIX}:ai:requests"  # public for tests that inspect the stream
GROUP: Final = "ai-workers"
PARKED_KEY: Final = f"{PREFIX}:ai:parked"
# A parked match's human thinks at most a day (the longest clock), then loses on time.
PARKED_TTL_S: Final = 2 * 24 * 3600
KEEP_REQUESTS_MS: Final = 7 * 24 * 3600 * 1000  # then trimmed, acked or not

Request = tuple[str, dict[str, str]]  # (entry id, fields)

# The group's consumers that hold nothing and have been silent for ARGV[2] ms, deleted
# (all but ARGV[3], the caller): each worker process reads under a name of its own, so a
# dead one's name stays in the group for good otherwise. In one script: a consumer that
# read a request between a check and its deletion would lose that request with it.
_FORGET_GONE_LUA: Final = """
local gone = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local f = {}
  for i = 1, #consumer, 2 do f[consumer[i]] = consumer[i + 1] end
  if f['pending'] == 0 and f['idle'] >= tonumber(ARGV[2]) and f['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    gone = gone + 1
  end
end
return gone
"""


def _parked_key(match_id: str) -> str:
    return f"{PREFIX}:ai:parked:{check_id(match_id)}"


def _request(entry_id: bytes | str, fields: Mapping[bytes, bytes]) -> Request:
    return text(entry_id), {text(k): text(v) for k, v in fields.items()}


class AiRequests:
    """The request stream and its consumer group."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._redis = connection.redis
        self._forget_gone = connection.register(_FORGET_GONE_LUA)

    async def ensure_group(self) -> None:
        """Create the AI workers' consumer group (and stream) if missing."""
        try:
            await self._redis.xgroup_create(REQUESTS_KEY, GROUP, id="0", mkstream=True)
        except aioredis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    async def park(self, fields: Mapping[str, str]) -> None:
        """Leave a request's match until its human moves: the engine appends `fields`
        again then (`unpark`)."""
        match_id = fields["match"]
        async with self._redis.pipeline(transaction=False) as pipe:  # one round trip
            pipe.set(_parked_key(match_id), json.dumps(dict(fields)), ex=PARKED_TTL_S)
            pipe.zadd(PARKED_KEY, {match_id: now_ms()})
            await pipe.execute()

    async def unpark(self, match_id: str) -> dict[str, str] | None:
        """Take a parked match's request (None: not parked). One caller gets it: the
        engine waking the AI, the sweeper, or the parking worker finding the AI to act
        after all."""
        async with self._redis.pipeline(transaction=False) as pipe:  # one round trip
            pipe.getdel(_parked_key(match_id))
            pipe.zrem(PARKED_KEY, match_id)
            stored, _ = await pipe.execute()
        return None if stored is None else cast("dict[str, str]", json.loads(stored))

    async def parked_to_look_at(self, count: int) -> list[str]:
        """The `count` parked matches looked at least recently, now marked as looked at."""
        found = cast("list[bytes]", await self._redis.zrange(PARKED_KEY, 0, count - 1))
        ids = [text(m) for m in found]
        if ids:
            await self._redis.zadd(PARKED_KEY, dict.fromkeys(ids, now_ms()), xx=True)
        return ids

    async def request(self, match_id: str, seat: int, level: int, owner: str = "") -> str:
        """Ask an AI worker to play `seat` of a match; returns the request id. `owner`:
        the client who asked (its limiter key), whose matches share the workers' search
        processes fairly with other clients'.

        The entry holds no credential: the worker joins with the AI's own key.
        """
        entry = {"match": check_id(match_id), "seat": str(seat), "level": str(level),
                 "owner": owner}
        oldest = f"{now_ms() - KEEP_REQUESTS_MS}-0"
        return text(await self._redis.xadd(
            REQUESTS_KEY, entry, minid=oldest, approximate=True))  # type: ignore[arg-type]

    async def read(self, consumer: str, count: int = 10, block_ms: int = 5000,
                   ) -> list[Request]:
        """New requests for this consumer (XREADGROUP); ack each when handled."""
        reply = await self._redis.xreadgroup(
            GROUP, consumer, {REQUESTS_KEY: ">"}, count=count, block=block_ms
        )
        # typed for RESP3 too; this client speaks RESP2: [[key, entries], ...], None if none
        return [_request(i, f) for _key, entries in cast("list[list[Any]] | None", reply) or []
                for i, f in entries]

    async def ack(self, request_id: str) -> None:
        """Mark a request handled."""
        await self._redis.xack(REQUESTS_KEY, GROUP, request_id)

    async def claim(self, consumer: str, request_ids: list[str], idle_ms: int = 0) -> None:
        """Hold these requests for `consumer`, as idle for `idle_ms` (0: fresh, the
        heartbeat; a long idle hands them back for the next takeover pass)."""
        ids: list[Any] = list(request_ids)
        await self._redis.xclaim(REQUESTS_KEY, GROUP, consumer, 0, ids, idle=idle_ms,
                                 justid=True)

    async def take_over(self, consumer: str, min_idle_ms: int, count: int) -> list[Request]:
        """Requests whose holder has been silent for `min_idle_ms` (it died), now held by
        `consumer`. Entries trimmed from the stream meanwhile are acked: nothing to serve."""
        reply = await self._redis.xautoclaim(REQUESTS_KEY, GROUP, consumer, min_idle_ms,
                                             start_id="0-0", count=count)
        out = []
        for item in reply[1]:
            if not item:
                continue
            if item[1] is None:
                await self.ack(text(item[0]))
                continue
            out.append(_request(item[0], item[1]))
        return out

    async def forget_gone(self, consumer: str, min_idle_ms: int) -> int:
        """Delete the consumers (other than `consumer`) that hold no request and have
        been silent for `min_idle_ms` (their workers died); returns how many."""
        return int(await self._connection.script(
            self._forget_gone, [REQUESTS_KEY], [GROUP, min_idle_ms, consumer]))

    async def held_by(self, consumer: str) -> set[str]:
        """The ids of the requests `consumer` holds (pending for it)."""
        pending = await self._redis.xpending_range(REQUESTS_KEY, GROUP, min="-", max="+",
                                                   count=10_000, consumername=consumer)
        return {text(cast("bytes", p["message_id"])) for p in pending}
