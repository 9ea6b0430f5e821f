"""Event fan-out: one stream reader per process, many subscribers in memory.

Every Watch stream of this process subscribes here instead of reading Redis
itself. A listener follows the match ids that writes announce (`bl:moved`, published
by the commit script itself) and marks the watched ones dirty; the reader reads only
the dirty streams, from their last events, and hands each batch to the subscribers'
queues. A round's cost follows the moves, not the number of watched matches (the
reader used to name every watched stream in each blocking XREAD: 10,000 keys a round
at 10,000 watched matches, which took the event loop from every call).

No event is lost: a newly watched match is dirty at once (events since its read are
read once), a stream that returned a full page stays dirty, and when the announcement
subscription (re)starts every watched stream is dirty (pub/sub keeps nothing for an
absent subscriber). A `Subscription` turns a queue into one viewer's events: resumed
from a known event, gaps filled from Redis, ended after the match's last event, or
with NOT_FOUND once the match is gone from Redis (an OPEN match nobody joined, an
abandoned one: they expire without an event, and their viewers would wait forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator

from battleline_client.backoff import backoff

from .errors import invalid, not_found
from .model import Match
from .storage import Storage, StoredEvent, log_failure, raise_lost_cancellation

log = logging.getLogger(__name__)

Batch = list[StoredEvent]
RESYNC: Batch = []  # queued instead of batches a slow subscriber could not keep up with
GONE: Batch = []  # queued when the watched match is gone from Redis (it expired)
MAX_QUEUED = 256
# Events read from Redis at once to fill a gap or resume: a stream its client does not
# read holds one such page (1,000 held about 1 MB).
PAGE = 100
STREAMS_PER_READ = 500  # dirty streams named in one XREAD (the rest wait for the next)
EVENTS_PER_STREAM = 100  # events of one stream per XREAD (a full page stays dirty)
IDLE_CHECK_S = 1.0  # how often the idle loops look whether anyone still watches


class Hub:
    """The per-process listener, reader and subscribers."""

    def __init__(self, storage: Storage, gone_check_s: float) -> None:
        """`gone_check_s`: how often to look whether the watched matches are still stored."""
        self.storage = storage
        self.gone_check_s = gone_check_s
        self._next_gone_check = 0.0
        self._subscribers: dict[str, set[asyncio.Queue[Batch]]] = {}
        self._cursors: dict[str, int] = {}
        self._dirty: set[str] = set()  # watched matches whose streams may have grown
        self._wake = asyncio.Event()  # set when something is dirty
        self._reader: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subscribers.values())

    async def subscribe(self, match_id: str, after: int) -> asyncio.Queue[Batch]:
        """A queue receiving the match's events numbered > `after` (maybe some earlier ones)."""
        queue: asyncio.Queue[Batch] = asyncio.Queue()
        self._subscribers.setdefault(match_id, set()).add(queue)
        if match_id not in self._cursors:
            self._cursors[match_id] = after
            self._mark({match_id})  # what it wrote since the caller's read is read once
        # A loop that found nobody watching cleared its own task with no await in
        # between, so a None here is the only way one is missing.
        if self._reader is None:
            self._reader = asyncio.create_task(self._read(), name="event-hub")
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen(), name="event-hub-listener")
        return queue

    def cursor(self, match_id: str) -> int:
        """The last event of the match the hub has read (-1: not watched here)."""
        return self._cursors.get(match_id, -1)

    def unsubscribe(self, match_id: str, queue: asyncio.Queue[Batch]) -> None:
        subscribers = self._subscribers.get(match_id)
        if subscribers is None:
            return
        subscribers.discard(queue)
        if not subscribers:
            del self._subscribers[match_id]
            self._cursors.pop(match_id, None)
            self._dirty.discard(match_id)

    async def stop(self) -> None:
        """Stop listening and reading."""
        for task in (self._listener, self._reader):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._listener = self._reader = None

    def _mark(self, match_ids: set[str]) -> None:
        self._dirty |= match_ids
        self._wake.set()

    async def _listen(self) -> None:
        """Mark the watched matches that writes announce; all of them when the
        subscription (re)starts. Ends (clearing `_listener`) once nobody watches."""
        delays = backoff(0.5)
        while True:
            try:
                async with self.storage.events.announcements() as announcements:
                    while self._subscribers:
                        moved = await announcements.moved(IDLE_CHECK_S)
                        raise_lost_cancellation()
                        if moved is None:
                            self._mark(set(self._cursors))
                            delays = backoff(0.5)
                        elif moved:  # (set.intersection(dict) would walk every watched id)
                            self._mark({m for m in moved if m in self._cursors})
                    self._listener = None  # no await since the check: a subscribe starts anew
                    return
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log_failure(log, "event listener (retrying)", err)
                await asyncio.sleep(next(delays))

    async def _read(self) -> None:
        """Read the dirty streams and queue their events. Ends (clearing `_reader`)
        once nobody watches."""
        delays = backoff(0.5)
        while True:
            if not self._dirty:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_CHECK_S)
                raise_lost_cancellation()
            if not self._subscribers:
                self._reader = None  # no await since the check: a subscribe starts anew
                return
            if time.monotonic() >= self._next_gone_check:
                await self._end_gone()
                continue  # (the await may have seen the last subscriber leave)
            batch: dict[str, int] = {}
            while self._dirty and len(batch) < STREAMS_PER_READ:
                match_id = self._dirty.pop()
                batch[match_id] = self._cursors[match_id]
            if not batch:
                continue
            try:
                got = await self.storage.events.read_new_events(batch, EVENTS_PER_STREAM)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log_failure(log, "event reader (retrying)", err)
                self._mark({m for m in batch if m in self._cursors})
                await asyncio.sleep(next(delays))
                continue
            delays = backoff(0.5)
            raise_lost_cancellation()
            for match_id, events in got.items():
                if match_id not in self._cursors:
                    continue  # nobody watches it any more
                if len(events) >= EVENTS_PER_STREAM:
                    self._mark({match_id})  # more to read
                self._cursors[match_id] = max(self._cursors[match_id], events[-1].number)
                for queue in self._subscribers.get(match_id, ()):
                    if queue.qsize() >= MAX_QUEUED:  # a slow reader: make it resync
                        gone = False  # (unless it has been told the match is gone)
                        while not queue.empty():
                            gone = queue.get_nowait() is GONE or gone
                        queue.put_nowait(GONE if gone else RESYNC)
                    else:
                        queue.put_nowait(events)

    async def _end_gone(self) -> None:
        """Queue GONE to the subscribers of the watched matches no longer stored, and let
        go of them: a stream whose client stops reading never reaches that GONE, and its
        cursor would starve the Watches of a later match under the same id."""
        self._next_gone_check = time.monotonic() + self.gone_check_s
        watched = list(self._cursors)
        try:
            stored = await self.storage.matches.existing(watched)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log_failure(log, "expiry check (next round)", err)
            return
        raise_lost_cancellation()
        for match_id in watched:
            if match_id not in stored:
                for queue in self._subscribers.pop(match_id, ()):
                    queue.put_nowait(GONE)
                self._cursors.pop(match_id, None)
                self._dirty.discard(match_id)


class Subscription:
    """One viewer's events of one match, in order and without gaps, after `last`.

    Opened at a read of the match: after its last event, or (`resume_after`) after
    an event the viewer already has, when the stream still holds everything since
    (`backlog`); else the viewer needs a fresh snapshot first (`needs_snapshot`).
    `batches` ends after the event that finishes the match, and raises NOT_FOUND once
    the match is gone from Redis.
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
            # The hub queues what it reads from now on, past its cursor; what it read
            # before for other viewers of this match is filled from Redis. Nothing else
            # is: a read per new stream took the pool from everything else (issue #17).
            fill = self.hub.cursor(self.match_id) > self.last
            batch = self.backlog or []
            while True:
                if batch is GONE:
                    raise not_found(self.match_id)
                if fill or batch is RESYNC or (batch and batch[0].number > self.last + 1):
                    batch = (await self.hub.storage.events.events_after(
                        self.match_id, self.last, PAGE)).events
                    fill = False
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
                # The hub read past us before we subscribed (another viewer's cursor):
                # those events never reach this queue, so read them, page by page, as
                # long as a page brings some (events gone from Redis, an expired match,
                # would have this loop read Redis without end: wait for the queue).
                fill = (bool(batch) and queue.empty()
                        and self.hub.cursor(self.match_id) > self.last)
                batch = [] if fill else await queue.get()
        finally:
            self.hub.unsubscribe(self.match_id, queue)
