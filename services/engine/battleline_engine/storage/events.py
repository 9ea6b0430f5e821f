"""Reading match event streams, and the announcements of which ones grew.

Reads the `bl:{id}:ev` streams the match store writes (see matches.py), and listens to
the pub/sub channel `bl:moved` on which every write that appends events announces its
match id (in the same script), so a process's event reader reads only the streams that
grew instead of naming every watched stream in each read.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import redis.asyncio as aioredis
from redis.crc import key_slot

from .connection import Connection, text
from .matches import MOVED_CHANNEL, match_id_of_key, match_key

if TYPE_CHECKING:
    from redis.asyncio.client import PubSub
    from redis.typing import KeyT, StreamIdT

DRAIN: Final = 1000  # announcements taken at most per `Announcements.moved` call


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


# KEYS: ev, m. ARGV: the exclusive start id, count. The events and the match's last event
# number, read together (a commit between the two would make the page look incomplete).
# A script that only reads, not a MULTI: a Redis at its `maxmemory` refuses a MULTI, and a
# resumed Watch or a record had to wait for room to be made (eighteenth audit).
_EVENTS_AFTER_LUA: Final = """
return {redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2]),
        redis.call('HGET', KEYS[2], 'seq')}
"""


class EventStreams:
    """Match events after a point, and one blocking read over many matches."""

    def __init__(self, connection: Connection) -> None:
        self._conn = connection
        self._redis = connection.redis
        self._events_after = connection.register(_EVENTS_AFTER_LUA)

    async def events_after(self, match_id: str, after: int, limit: int = 1000) -> EventPage:
        """Events numbered > `after`, oldest first; incomplete if some are gone."""
        entries, seq = await self._conn.script(
            self._events_after, [match_key(match_id, "ev"), match_key(match_id, "m")],
            [f"({after}-0", limit])
        events = [_event(i, dict(zip(f[::2], f[1::2], strict=True))) for i, f in entries]
        last = int(seq) if seq is not None else 0
        # Complete when nothing between `after` and the first kept event is missing.
        complete = events[0].number == after + 1 if events else last <= after
        return EventPage(events, complete, last)

    async def read_new_events(
        self, cursors: Mapping[str, int], count: int = 100
    ) -> dict[str, list[StoredEvent]]:
        """New events of many match streams in one XREAD (one per slot on Redis Cluster),
        without waiting: the event reader asks only for streams announced as grown.

        `cursors` maps match id -> last event number seen; at most `count` events per match.
        """
        if not cursors:
            return {}
        streams = {match_key(m, "ev"): f"{n}-0" for m, n in cursors.items()}
        if isinstance(self._redis, aioredis.RedisCluster):  # no cross-slot XREAD
            return await self._read_cluster_streams(streams, count)
        # redis-py types `streams` as an invariant dict[KeyT, StreamIdT], not a Mapping
        reply = await self._redis.xread(streams, count=count)  # type: ignore[arg-type]
        # typed for RESP3 too; this client speaks RESP2: [[key, entries], ...], None if none
        return _by_match(cast("list[list[Any]] | None", reply) or [])

    @contextlib.asynccontextmanager
    async def announcements(self) -> AsyncIterator[Announcements]:
        """A subscription to the match ids that writes announce (`bl:moved`), on a
        connection of its own for as long as the context lasts. On Redis Cluster any node
        will do: a PUBLISH reaches the subscribers of every node."""
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(MOVED_CHANNEL)
            yield Announcements(pubsub)
        finally:
            await pubsub.aclose()

    async def _read_cluster_streams(
        self, streams: Mapping[str, str], count: int
    ) -> dict[str, list[StoredEvent]]:
        """Cluster stand-in for one XREAD: streams of many matches live in many slots and
        one XREAD may not cross slots, so one XREAD per slot, pipelined (one round trip
        per node)."""
        by_slot: dict[int, dict[KeyT, StreamIdT]] = {}
        for key, cursor in streams.items():
            by_slot.setdefault(key_slot(key.encode()), {})[key] = cursor
        async with self._redis.pipeline(transaction=False) as pipe:
            for group in by_slot.values():
                pipe.xread(group, count=count)
            replies = await pipe.execute()
        return _by_match([item for reply in replies for item in reply or []])


class Announcements:
    """The match ids announced on `bl:moved` since the last call.

    Pub/sub keeps nothing for a subscriber that is away: after the subscription is
    confirmed, and again after each reconnection (redis-py subscribes again by itself),
    announcements made meanwhile are lost, so `moved` answers None then: any stream may
    have grown.
    """

    def __init__(self, pubsub: PubSub) -> None:
        self._pubsub = pubsub

    async def moved(self, timeout_s: float) -> set[str] | None:
        """Ids announced (waiting up to `timeout_s` for the first; empty if none), or
        None when the subscription (re)started and every stream must be read."""
        ids: set[str] = set()
        restarted = False
        message = await self._pubsub.get_message(timeout=timeout_s)
        while message is not None:
            if message["type"] == "message":
                ids.add(text(message["data"]))
            elif message["type"] == "subscribe":
                restarted = True
            if len(ids) >= DRAIN:
                break
            message = await self._pubsub.get_message(timeout=0)
        return None if restarted else ids


def _by_match(reply: Iterable[Sequence[Any]]) -> dict[str, list[StoredEvent]]:
    out: dict[str, list[StoredEvent]] = {}
    for key, entries in reply:
        if entries:
            out[match_id_of_key(key)] = [_event(i, f) for i, f in entries]
    return out


def _event(entry_id: bytes | str, fields: Mapping[bytes, bytes]) -> StoredEvent:
    number = int(text(entry_id).split("-", 1)[0])
    return StoredEvent(number, {text(k): text(v) for k, v in fields.items()})
