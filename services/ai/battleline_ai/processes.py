"""Worker processes for searches and tournaments."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import multiprocessing.pool
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def spawned_pool(processes: int) -> multiprocessing.pool.Pool:
    """A pool of fresh interpreters. Not forked: a fork copies the state of the caller's
    threads (a gRPC client or server in the same process), and a forked child that then
    collected an object whose finalizer joins such a thread hung (seen in the tests).
    Its workers leave Ctrl-C to the caller, which stops them: the terminal's SIGINT
    reached them too, and each printed a traceback (an audit of signals). They are
    started with SIGINT ignored where the caller can set it (its main thread), so that
    one that lands while they still import is ignored too, and ignore it after."""
    with _ctrl_c_ignored_while_starting():
        return multiprocessing.get_context("spawn").Pool(processes, initializer=_ignore_ctrl_c)


@contextlib.contextmanager
def _ctrl_c_ignored_while_starting() -> Iterator[None]:
    """SIGINT ignored in this process (from its main thread; elsewhere unchanged) while
    the block runs: children started then inherit that through exec."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass
class _Waiter:
    start_by: float
    arrival: int
    owner: str
    turn: asyncio.Future[bool]


class DeadlinePool:
    """An executor of `processes` processes fed fairly between owners, then earliest
    deadline first, for one event loop.

    Why: an executor runs what it is given in arrival order, so a move on a 1 s clock
    waited behind other matches' searches of up to 5 s and lost on time; and earliest
    deadline first alone let one client's matches on 1 s clocks take every turn, so
    everyone else's moves waited out their deadlines (sixth audit). Here at most
    `processes` jobs are in the executor at once (it never queues); a process that
    comes free goes to the waiting job whose owner was served least recently, the
    earliest deadline among them; and a job still waiting when it must start is
    dropped: its caller gets None and answers some cheaper way.
    """

    def __init__(self, executor: Executor, processes: int) -> None:
        self._executor = executor
        self._free = processes  # > 0 only while nothing waits
        self._waiting: list[_Waiter] = []
        self._arrival = itertools.count()  # ties in start_by: first come, first served
        self._starts = itertools.count()
        self._served: dict[str, int] = {}  # owner -> when (in starts) it last got a process

    async def run(self, start_by: float, fn: Callable[..., T], *args: object, owner: str = "",
                  started: Callable[[Future[T]], None] | None = None) -> T | None:
        """`fn(*args)` in a process, or None if no process came free by `start_by`
        (`time.monotonic()`).
        `owner`: whose job it is (a client), for a fair share of the processes; `started`
        is given the job once it is handed to the executor: a cancelled caller leaves it
        running (one not yet begun is cancelled with the caller)."""
        if not await self._turn(start_by, owner):
            return None
        try:
            job = self._executor.submit(fn, *args)
        except Exception:  # a broken or shut-down executor: the process was not used
            self._release()
            raise
        loop = asyncio.get_running_loop()
        # Freed when the process is done, not when our caller is: a cancelled caller's
        # job may still be running.
        job.add_done_callback(on_loop(loop, self._release))
        if started is not None:
            started(job)
        return await asyncio.wrap_future(job)

    async def _turn(self, start_by: float, owner: str) -> bool:
        """Whether a process is ours before `start_by`; waits for it in turn."""
        if time.monotonic() >= start_by:
            return False
        if self._free:
            self._free -= 1
            self._serve(owner)
            return True
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[bool] = loop.create_future()
        self._waiting.append(_Waiter(start_by, next(self._arrival), owner, turn))
        expiry = loop.call_later(start_by - time.monotonic(), _drop, turn)
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled() and turn.result():
                self._release()  # given a process as we were cancelled: pass it on
            raise
        finally:
            expiry.cancel()

    def give_way(self, owner: str) -> bool:
        """Drop `owner`'s newest waiting job (its caller gets None) to make room for
        another client's; False when none of its jobs is waiting."""
        waiting = [w for w in self._waiting if w.owner == owner and not w.turn.done()]
        if not waiting:
            return False
        max(waiting, key=lambda w: w.arrival).turn.set_result(False)
        return True

    def _release(self) -> None:
        """A process is free: to the next waiter still waiting, else to the next caller."""
        self._waiting = [w for w in self._waiting if not w.turn.done()]  # dropped, cancelled
        if not self._waiting:
            self._free += 1
            return
        chosen = min(self._waiting, key=lambda w: (self._served.get(w.owner, -1), w.start_by,
                                                   w.arrival))
        self._waiting.remove(chosen)
        self._serve(chosen.owner)
        chosen.turn.set_result(True)

    def _serve(self, owner: str) -> None:
        if len(self._served) >= 4096:  # forget owners with nothing waiting
            waiting = {w.owner for w in self._waiting}
            self._served = {o: n for o, n in self._served.items() if o in waiting}
        self._served[owner] = next(self._starts)


def on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], None]) -> Callable[[object], None]:
    """A done-callback for an executor's job (run in the executor's thread) that runs `fn`
    on `loop`; none once the loop is closed (a stop that did not wait for the pool), when
    nothing is left to free."""
    def callback(_job: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(fn)
    return callback


def _drop(turn: asyncio.Future[bool]) -> None:
    if not turn.done():
        turn.set_result(False)
