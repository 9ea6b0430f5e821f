"""The clock sweeper: ends matches whose deadline has passed, even if nobody calls (a
running clock that ran out, or an AI match no hosted AI took in time), and wakes a
parked hosted AI whose wake was lost.

Every replica runs one; the version check of the commit lets only one of them
record a given timeout. Reads also check the clock (matches.read), so the
sweeper only matters for matches nobody is looking at.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from .matches import Matches
from .model import Status
from .storage import Storage, log_failure, now_ms, raise_lost_cancellation

log = logging.getLogger(__name__)
# Parked AI matches looked at per sweep (two a second): a lost wake is made within
# (parked matches / 20) half-seconds, at 40 match reads a second.
PARKED_PER_SWEEP = 20
# Due clocks one sweep ends, and how many at once. Why so many: 100 a sweep, one after
# another, left 2,000 clocks that ran out together 10 s late, 17 s at worst (thirty-fifth
# audit); each replica takes them in its own order, so two share a crowd.
DUE_PER_SWEEP = 2_000
DUE_AT_ONCE = 32
EARLY_MOVE_MS = 5_000  # how far ahead an entry found early is moved at most


class Sweeper:
    """Polls the clock index every `interval_s`."""

    def __init__(self, storage: Storage, matches: Matches, interval_s: float) -> None:
        self.storage = storage
        self.matches = matches
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="clock-sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def sweep_once(self) -> int:
        """Time out every due match (up to DUE_PER_SWEEP), and look at a few parked AI
        matches; returns how many due entries were handled."""
        await self.matches.wake_parked(PARKED_PER_SWEEP)
        await self.storage.clocks.write_kept()
        due = await self.storage.clocks.due(now_ms(), limit=DUE_PER_SWEEP)
        random.shuffle(due)  # each replica starts on another part of a crowd
        for start in range(0, len(due), DUE_AT_ONCE):
            batch = due[start:start + DUE_AT_ONCE]
            ended = await asyncio.gather(*(self._end_if_due(*entry) for entry in batch),
                                         return_exceptions=True)
            failures = [failure for failure in ended if isinstance(failure, Exception)]
            if failures:  # one line for the batch: a store refusing writes fails them all
                log_failure(log, f"clock sweep ({len(failures)} of {len(batch)} matches)",
                            failures[0])
            raise_lost_cancellation()
        return len(due)

    async def _end_if_due(self, match_id: str, indexed_ms: int) -> None:
        record = await self.storage.matches.load(match_id)
        if record is None or record.status == Status.FINISHED or record.deadline_ms == 0:
            await self.storage.clocks.unindex(match_id)
        elif record.deadline_ms > now_ms():  # indexed early (`ClockIndex.index_no_later`)
            # No further than EARLY_MOVE_MS: a commit between this read and the move whose
            # own index write was lost may have set an earlier deadline (a per-game clock's
            # next mover); it then ends that much late at most (a re-test found 55 s).
            await self.storage.clocks.move_if_unchanged(
                match_id, indexed_ms, min(record.deadline_ms, now_ms() + EARLY_MOVE_MS))
        else:
            await self.matches.read(match_id)  # ends it

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep_once()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log_failure(log, "clock sweep", err)
            raise_lost_cancellation()
            await asyncio.sleep(self.interval_s)
