"""Event fan-out: one blocking stream reader per process, many subscribers in memory.

Every Watch stream of this process subscribes here instead of reading Redis
itself. The reader runs one XREAD over the streams of every watched match
(plus a private wake-up stream, poked when a new match is added so the
blocking read restarts at once) and hands each batch to the subscribers'
queues. A `Subscription` turns a queue into one viewer's events: resumed from
a known event, gaps filled from Redis, ended after the match's last event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator

from battleline_client.backoff import backoff

from .errors import invalid
from .model import Match
from .storage import Storage, StoredEvent, raise_lost_cancellation

log = logging.getLogger(__name__)

Batch = list[StoredEvent]
RESYNC: Batch = []  # queued instead of batches a slow subscriber could not keep up with
MAX_QUEUED = 256
PAGE = 1000  # events read from Redis at once to fill a gap or resume


class Hub:
    """The per-process reader and its subscribers."""

    def __init__(self, storage: Storage, block_ms: int = 2000) -> None:
        self.storage = storage
        self.block_ms = block_ms
        self.wake_name = f"wake-{secrets.token_hex(8)}"
        self._wake_cursor = 0
        self._subscribers: dict[str, set[asyncio.Queue[Batch]]] = {}
        self._cursors: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subscribers.values())

    async def subscribe(self, match_id: str, after: int) -> asyncio.Queue[Batch]:
        """A queue receiving the match's events numbered > `after` (maybe some earlier ones)."""
        queue: asyncio.Queue[Batch] = asyncio.Queue()
        self._subscribers.setdefault(match_id, set()).add(queue)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="event-hub")
        if match_id not in self._cursors:
            self._cursors[match_id] = after
            try:
                await self.storage.events.poke(self.wake_name)
            except BaseException:  # cancelled (a stream closed at once): not subscribed
                self.unsubscribe(match_id, queue)
                raise
        return queue

    def unsubscribe(self, match_id: str, queue: asyncio.Queue[Batch]) -> None:
        subscribers = self._subscribers.get(match_id)
        if subscribers is None:
            return
        subscribers.discard(queue)
        if not subscribers:
            del self._subscribers[match_id]
            self._cursors.pop(match_id, None)

    async def stop(self) -> None:
        """Stop reading and delete the wake-up stream."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        with contextlib.suppress(Exception):
            await self.storage.events.drop_stream(self.wake_name)

    async def _run(self) -> None:
        delays = backoff(0.5)
        while self._subscribers:
            cursors = {**self._cursors, self.wake_name: self._wake_cursor}
            try:
                got = await self.storage.events.read_new_events(cursors, block_ms=self.block_ms)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event reader failed; retrying")
                await asyncio.sleep(next(delays))
                continue
            delays = backoff(0.5)
            raise_lost_cancellation()
            for match_id, events in got.items():
                if not events:
                    continue
                if match_id == self.wake_name:
                    self._wake_cursor = max(self._wake_cursor, events[-1].number)
                    continue
                if match_id not in self._cursors:
                    continue
                self._cursors[match_id] = max(self._cursors[match_id], events[-1].number)
                for queue in self._subscribers.get(match_id, ()):
                    if queue.qsize() >= MAX_QUEUED:  # a slow reader: make it resync
                        while not queue.empty():
                            queue.get_nowait()
                        queue.put_nowait(RESYNC)
                    else:
                        queue.put_nowait(events)


class Subscription:
    """One viewer's events of one match, in order and without gaps, after `last`.

    Opened at a read of the match: after its last event, or (`resume_after`) after
    an event the viewer already has, when the stream still holds everything since
    (`backlog`); else the viewer needs a fresh snapshot first (`needs_snapshot`).
    `batches` ends after the event that finishes the match.
    """

    def __init__(self, hub: Hub, match: Match) -> None:
        self.hub = hub
        self.match_id = match.match_id
        self.last = match.record.last_event
        self.finished_at = match.record.last_event if match.finished else None
        self.backlog: Batch | None = None

    @classmethod
    async def open(cls, hub: Hub, match: Match, resume_after: int | None) -> Subscription:
        """A subscription resumed after `resume_after` when the events since are kept."""
        subscription = cls(hub, match)
        if resume_after is not None:
            if resume_after > subscription.last:
                raise invalid("bad-resume", f"resume_after {resume_after} is after the "
                              f"last event ({subscription.last})")
            page = await hub.storage.events.events_after(subscription.match_id, resume_after,
                                                         PAGE)
            if page.complete:
                subscription.backlog, subscription.last = page.events, resume_after
        return subscription

    @property
    def needs_snapshot(self) -> bool:
        """Whether the viewer starts from a snapshot (no resume, or history trimmed)."""
        return self.backlog is None

    async def batches(self) -> AsyncGenerator[Batch]:
        """Batches of new events, the first one being the resumed backlog if any."""
        queue = await self.hub.subscribe(self.match_id, self.last)
        try:
            batch = self.backlog or []
            while True:
                if not batch or batch[0].number > self.last + 1:  # a gap: fill it from Redis
                    batch = (await self.hub.storage.events.events_after(
                        self.match_id, self.last, PAGE)).events
                batch = [e for e in batch if e.number > self.last]
                if not batch and self.finished_at is not None and self.last >= self.finished_at:
                    return  # resumed at (or after) the event that finished the match
                end = next((i for i, e in enumerate(batch) if e.fields.get("end") == "1"), None)
                if end is not None:
                    batch = batch[:end + 1]
                if batch:
                    self.last = batch[-1].number
                    yield batch
                if end is not None:
                    return
                raise_lost_cancellation()  # a cancelled stream waits no more
                batch = await queue.get()
        finally:
            self.hub.unsubscribe(self.match_id, queue)
