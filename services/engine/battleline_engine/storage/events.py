"""Reading match event streams, and the wake-up streams of the per-process reader.

Reads the `bl:{id}:ev` streams the match store writes (see matches.py), plus::

    bl:{wake-...}:ev   stream  a process's private wake-up stream (read beside the matches')
    bl:{wake-...}:n    string  its last entry number
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import redis.asyncio as aioredis
from redis.crc import key_slot

from .connection import Connection, text
from .matches import match_id_of_key, match_key

if TYPE_CHECKING:
    from redis.typing import KeyT, StreamIdT

CLUSTER_POLL_S: Final = 0.02  # event poll interval on Redis Cluster (no cross-slot XREAD)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a match stream; `fields` are exactly what the caller committed."""

    number: int
    fields: dict[str, str]


@dataclass(frozen=True, slots=True)
class EventPage:
    """Events after a point; `complete` is False when some were trimmed or expired."""

    events: list[StoredEvent]
    complete: bool
    last_event: int


class EventStreams:
    """Match events after a point, and one blocking read over many matches."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self._redis = connection.redis

    async def events_after(self, match_id: str, after: int, limit: int = 1000) -> EventPage:
        """Events numbered > `after`, oldest first; incomplete if some are gone."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.xrange(match_key(match_id, "ev"), min=f"({after}-0", max="+", count=limit)
            pipe.hget(match_key(match_id, "m"), "seq")
            entries, seq = await pipe.execute()
        events = [_event(i, f) for i, f in entries]
        last = int(seq) if seq is not None else 0
        # Complete when nothing between `after` and the first kept event is missing.
        complete = events[0].number == after + 1 if events else last <= after
        return EventPage(events, complete, last)

    async def read_new_events(
        self, cursors: Mapping[str, int], block_ms: int = 5000, count: int = 100
    ) -> dict[str, list[StoredEvent]]:
        """One blocking XREAD over many match streams (the per-process fan-out reader).

        `cursors` maps match id -> last event number seen. Returns new events per
        match (possibly none after `block_ms`).
        """
        if not cursors:
            return {}
        streams = {match_key(m, "ev"): f"{n}-0" for m, n in cursors.items()}
        if isinstance(self._redis, aioredis.RedisCluster):  # no cross-slot XREAD
            return await self._poll_cluster_streams(streams, block_ms, count)
        # redis-py types `streams` as an invariant dict[KeyT, StreamIdT], not a Mapping
        reply = await self._redis.xread(streams, count=count, block=block_ms)  # type: ignore[arg-type]
        # typed for RESP3 too; this client speaks RESP2: [[key, entries], ...], None if none
        return _by_match(cast("list[list[Any]] | None", reply) or [])

    async def _poll_cluster_streams(
        self, streams: Mapping[str, str], block_ms: int, count: int
    ) -> dict[str, list[StoredEvent]]:
        """Cluster stand-in for one blocking XREAD: streams of many matches live in many
        slots and one XREAD may not cross slots, so poll one non-blocking XREAD per slot
        (pipelined: one round trip per node) until something arrives or `block_ms` ends."""
        by_slot: dict[int, dict[KeyT, StreamIdT]] = {}
        for key, cursor in streams.items():
            by_slot.setdefault(key_slot(key.encode()), {})[key] = cursor
        deadline = time.monotonic() + block_ms / 1000
        while True:
            async with self._redis.pipeline(transaction=False) as pipe:
                for group in by_slot.values():
                    pipe.xread(group, count=count)
                replies = await pipe.execute()
            out = _by_match([item for reply in replies for item in reply or []])
            if out or time.monotonic() >= deadline:
                return out
            await asyncio.sleep(min(CLUSTER_POLL_S, max(0.0, deadline - time.monotonic())))

    async def poke(self, name: str) -> int:
        """Append to a private wake-up stream (an id like a match id); returns its number.

        A process's blocking `read_new_events` includes its own wake-up stream, so
        adding a match to the read set can interrupt the wait without a new connection.
        """
        number = int(await self._redis.incr(match_key(name, "n")))
        try:
            await self._redis.xadd(match_key(name, "ev"), {"w": "1"}, id=f"{number}-0",
                                   maxlen=1)
        except aioredis.ResponseError as err:
            # redis-py re-sends a command whose reply was lost (a Redis node restarting):
            # the entry is there already, which is all a wake-up needs.
            if "equal or smaller" not in str(err):
                raise
        return number

    async def drop_stream(self, name: str) -> None:
        """Delete a wake-up stream made by `poke`."""
        await self._redis.delete(match_key(name, "ev"), match_key(name, "n"))


def _by_match(reply: Iterable[Sequence[Any]]) -> dict[str, list[StoredEvent]]:
    out: dict[str, list[StoredEvent]] = {}
    for key, entries in reply:
        if entries:
            out[match_id_of_key(key)] = [_event(i, f) for i, f in entries]
    return out


def _event(entry_id: bytes | str, fields: Mapping[bytes, bytes]) -> StoredEvent:
    number = int(text(entry_id).split("-", 1)[0])
    return StoredEvent(number, {text(k): text(v) for k, v in fields.items()})
