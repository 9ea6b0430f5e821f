"""Worker processes for searches and tournaments."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import multiprocessing
import multiprocessing.pool
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

T = TypeVar("T")


def spawned_pool(processes: int) -> multiprocessing.pool.Pool:
    """A pool of fresh interpreters. Not forked: a fork copies the state of the caller's
    threads (a gRPC client or server in the same process), and a forked child that then
    collected an object whose finalizer joins such a thread hung (seen in the tests)."""
    return multiprocessing.get_context("spawn").Pool(processes)


class DeadlinePool:
    """An executor of `processes` processes fed earliest deadline first, for one event loop.

    Why: an executor runs what it is given in arrival order, so a move on a 1 s clock
    waited behind other matches' searches of up to 5 s and lost on time. Here at most
    `processes` jobs are in the executor at once (it never queues), the rest wait in a
    heap keyed by the time they must start by, and a job still waiting at that time is
    dropped: its caller gets None and answers some cheaper way.
    """

    def __init__(self, executor: Executor, processes: int) -> None:
        self._executor = executor
        self._free = processes  # > 0 only while nothing waits
        self._waiting: list[tuple[float, int, asyncio.Future[bool]]] = []
        self._arrival = itertools.count()  # ties in start_by: first come, first served

    async def run(self, start_by: float, fn: Callable[..., T], *args: object) -> T | None:
        """`fn(*args)` in a process, or None if no process came free by `start_by` (epoch s)."""
        if not await self._turn(start_by):
            return None
        try:
            job = self._executor.submit(fn, *args)
        except Exception:  # a broken or shut-down executor: the process was not used
            self._release()
            raise
        loop = asyncio.get_running_loop()
        # Freed when the process is done, not when our caller is: a cancelled caller's
        # job may still be running.
        job.add_done_callback(lambda _job: loop.call_soon_threadsafe(self._release))
        return await asyncio.wrap_future(job)

    async def _turn(self, start_by: float) -> bool:
        """Whether a process is ours before `start_by`; waits for it in deadline order."""
        if time.time() >= start_by:
            return False
        if self._free:
            self._free -= 1
            return True
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[bool] = loop.create_future()
        heapq.heappush(self._waiting, (start_by, next(self._arrival), turn))
        expiry = loop.call_later(start_by - time.time(), _drop, turn)
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled() and turn.result():
                self._release()  # given a process as we were cancelled: pass it on
            raise
        finally:
            expiry.cancel()

    def _release(self) -> None:
        """A process is free: to the earliest waiter still waiting, else to the next caller."""
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():  # not dropped or cancelled meanwhile
                turn.set_result(True)
                return
        self._free += 1


def _drop(turn: asyncio.Future[bool]) -> None:
    if not turn.done():
        turn.set_result(False)
