"""The hosted AI's moves arrive within their clocks however many matches share the search
process: decisions wait for it earliest deadline first, and one that no process takes in
time is answered at once by the fallback (audit F2: a 1 s clock lost on time behind other
matches' searches)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from battleline.v1 import types_pb2
from battleline_ai.bots import LEVELS
from battleline_ai.decide import FALLBACK, at_once_spec
from battleline_ai.processes import DeadlinePool
from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import answer_times, is_finished, is_my_turn
from battleline_host.local import LocalService
from tests.ai.service_harness import WITH_AI, start_worker, stop
from tests.processes import children, command_line

BUSY = 6  # level-5 matches on a long clock: their searches (~0.5 s each) fill the process
SHORT_CLOCK_S = 1.0  # the least per-move clock the engine allows
TURNS = 10  # the short-clock match's human turns, each answered by the AI
MOVE_CAP_S = 5.0  # the worker's longest think (the long clocks' budget)


def _note(ran: list[str], name: str) -> str:
    ran.append(name)
    return name


async def _hold(pool: DeadlinePool, gate: threading.Event) -> None:
    """Keep the pool's one process busy until `gate` is set."""
    await pool.run(time.monotonic() + 60, gate.wait)


@contextlib.asynccontextmanager
async def _busy_pool() -> AsyncIterator[tuple[DeadlinePool, Callable[[], Awaitable[None]]]]:
    """A pool of one thread, kept busy until the second value is awaited (which frees it)."""
    with ThreadPoolExecutor(1) as executor:
        pool = DeadlinePool(executor, 1)
        gate = threading.Event()
        holder = asyncio.create_task(_hold(pool, gate))
        await asyncio.sleep(0.05)

        async def free() -> None:
            gate.set()
            await holder

        try:
            yield pool, free
        finally:
            await free()


async def _started(*tasks: asyncio.Task[object]) -> None:
    """Let `tasks` reach the pool's queue."""
    await asyncio.sleep(0.05)
    assert not any(task.done() for task in tasks)


def test_waiting_jobs_start_earliest_deadline_first() -> None:
    async def scenario() -> list[str]:
        started: list[str] = []
        async with _busy_pool() as (pool, free):
            now = time.monotonic()
            waiting = [asyncio.create_task(pool.run(now + delay, _note, started, name))
                       for name, delay in (("late", 30), ("soon", 10), ("sooner", 5),
                                           ("soon-too", 10))]
            await _started(*waiting)
            await free()
            await asyncio.gather(*waiting)
        return started

    assert asyncio.run(scenario()) == ["sooner", "soon", "soon-too", "late"]


def test_a_process_goes_to_the_owner_served_least_recently() -> None:
    """Sixth audit: one client's matches on 1 s clocks always had the earliest deadlines
    and took every turn; honest moves waited out their own and got the fallback. Owners
    now take turns; within one owner, the earliest deadline first."""
    async def scenario() -> list[str]:
        started: list[str] = []
        async with _busy_pool() as (pool, free):
            now = time.monotonic()
            waiting = [asyncio.create_task(pool.run(now + delay, _note, started, name,
                                                    owner=owner))
                       for name, owner, delay in (("a3", "a", 7), ("a1", "a", 5), ("a2", "a", 6),
                                                  ("b1", "b", 30), ("b2", "b", 40))]
            await _started(*waiting)
            await free()
            await asyncio.gather(*waiting)
        return started

    assert asyncio.run(scenario()) == ["a1", "b1", "a2", "b2", "a3"]


def test_a_job_still_waiting_at_its_start_by_is_dropped() -> None:
    async def scenario() -> None:
        ran: list[str] = []
        async with _busy_pool() as (pool, free):
            begun = time.monotonic()
            assert await pool.run(time.monotonic() + 0.2, _note, ran, "dropped") is None
            assert time.monotonic() - begun < 1.0, "dropped only when the process came free"
            await free()
            assert await pool.run(time.monotonic() - 1, _note, ran, "too late") is None
            assert await pool.run(time.monotonic() + 1, _note, ran, "next") == "next"
            assert ran == ["next"]

    asyncio.run(scenario())


def test_a_cancelled_caller_frees_the_process_only_when_its_job_ends() -> None:
    async def scenario() -> None:
        ran: list[str] = []
        with ThreadPoolExecutor(1) as executor:
            pool = DeadlinePool(executor, 1)
            gate = threading.Event()
            holder = asyncio.create_task(_hold(pool, gate))
            waiter = asyncio.create_task(pool.run(time.monotonic() + 30, _note, ran, "cancelled"))
            await _started(holder, waiter)
            holder.cancel()  # its job still runs: the process is not free
            waiter.cancel()  # gives up its place in the queue
            assert await pool.run(time.monotonic() + 0.2, _note, ran, "dropped") is None
            gate.set()
            assert await pool.run(time.monotonic() + 5, _note, ran, "after") == "after"
            assert ran == ["after"]

    asyncio.run(scenario())


@pytest.fixture
def engine(redis_url: str) -> Iterator[LocalService]:
    with LocalService(redis_url, config=WITH_AI) as running:
        yield running


def test_a_short_clock_is_kept_while_other_matches_fill_the_search_process(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """One search process, BUSY level-5 matches on a 300 s clock (a search may take the
    5 s cap) and one on a 1 s clock. Before every human move in the short-clock match the
    human moves in the others, so their AI decisions queue just ahead of its AI's."""
    worker = start_worker(engine.address, redis_url, tmp_path / "worker.log",
                          move_cap=MOVE_CAP_S, concurrency=BUSY + 1)
    rng = random.Random(11)
    try:
        with Client(engine.address) as client:
            busy = [client.seat(client.create(opponent="ai", ai_level=5, clock="per-move",
                                              clock_seconds=300, seat="second").seat)
                    for _ in range(BUSY)]
            created = client.create(opponent="ai", ai_level=5, clock="per-move",
                                    clock_seconds=SHORT_CLOCK_S, seat="second")
            short = client.seat(created.seat)
            turns, give_up = 0, time.monotonic() + 50
            while turns < TURNS and time.monotonic() < give_up:
                view = short.view()
                if is_finished(view):
                    break
                if is_my_turn(view):
                    for seat in busy:
                        busy_view = seat.view()
                        if is_my_turn(busy_view):
                            seat.act(*choose(busy_view, rng))
                    short.act(*choose(view, rng))
                    turns += 1
                time.sleep(0.01)
            view = short.view()
            record = client.record(created.match_id, created.seat.token)
            busy_records = [client.record(s.match_id, s.handle.token) for s in busy]
    finally:
        stop(worker)
    ai = types_pb2.SEAT_FIRST
    # The engine's verdict, not the commit times: a stalled machine may delay a commit.
    assert not (view.end_reason == types_pb2.END_REASON_TIMEOUT and view.winner != ai), \
        "the AI lost on time"
    gaps = answer_times(record, ai)
    # It answered every turn of the human's (but the last). Counted from the record: a
    # turn the loop saw twice (a Scout's returns, a Mud discard) is one turn there.
    human_turns = len(answer_times(record, types_pb2.SEAT_SECOND))
    assert len(gaps) >= human_turns - 1 >= 5, (turns, human_turns, gaps)
    for busy_record in busy_records:  # queued behind, but answered within their own budget
        busy_gaps = answer_times(busy_record, ai)
        assert busy_gaps and max(busy_gaps) < MOVE_CAP_S + 1, busy_gaps


@pytest.mark.parametrize(("spec", "at_once"), [
    ("ismcts:level=1", LEVELS[1]),  # a beginner's level stays a beginner's under load
    ("ismcts:level=3", LEVELS[3]),
    ("ismcts:level=5", FALLBACK),
    ("ismcts:level=5,seconds=2", FALLBACK),
    ("ismcts:iterations=50", FALLBACK),
    ("heuristic:noise=0.2", "heuristic:noise=0.2"),
])
def test_a_level_that_does_not_search_answers_as_itself_when_no_process_is_free(
        spec: str, at_once: str) -> None:
    assert at_once_spec(spec) == at_once


def _searchers(pid: int) -> list[int]:
    """The search processes of `pid` (not multiprocessing's resource tracker)."""
    return [child for child in children(pid) if "spawn_main" in " ".join(command_line(child))]


def test_the_worker_replaces_a_search_process_that_died(
        engine: LocalService, redis_url: str, tmp_path: Path) -> None:
    """Sixth audit: a search process killed once (the OOM killer, a crash in compiled
    code) broke the worker's pool for good, and the AI lost every later match on time
    while the worker itself lived on. Now the move is answered by the fallback and the
    worker starts new search processes, which play the moves after it."""
    log = tmp_path / "worker.log"
    worker = start_worker(engine.address, redis_url, log, move_cap=MOVE_CAP_S)
    rng = random.Random(12)
    try:
        deadline = time.monotonic() + 30
        while not (searchers := _searchers(worker.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)  # the warm-up starts the search process
        assert searchers, "no search process started"
        for pid in searchers:
            os.kill(pid, signal.SIGKILL)
        with Client(engine.address) as client:
            created = client.create(opponent="ai", ai_level=5, clock="per-move",
                                    clock_seconds=10, seat="second")
            seat = client.seat(created.seat)
            turns, give_up = 0, time.monotonic() + 60
            while turns < 4 and time.monotonic() < give_up:
                view = seat.view()
                if is_finished(view):
                    break
                if is_my_turn(view):
                    seat.act(*choose(view, rng))
                    turns += 1
                time.sleep(0.05)
            view = seat.view()
            record = client.record(created.match_id, created.seat.token)
        new_searchers = _searchers(worker.pid)
    finally:
        stop(worker)
    assert view.end_reason != types_pb2.END_REASON_TIMEOUT, "the AI lost on time"
    assert len(answer_times(record, types_pb2.SEAT_FIRST)) >= 3
    assert new_searchers and not set(new_searchers) & set(searchers)
    assert "starting new search processes" in log.read_text()


def test_a_worker_holds_many_waiting_matches_on_one_connection() -> None:
    """Sixth audit: 16 clients holding 4 idle AI matches each filled a worker's 64 places,
    and nobody else got an AI opponent. A waiting match costs a watch stream, so a worker
    holds 512, as many as its one connection to an engine may carry."""
    from typer.main import get_command

    from battleline_ai.worker import WorkerConfig
    from battleline_client.cli import app
    from battleline_engine.server import ServerConfig

    ai = get_command(app).commands["ai"]  # type: ignore[attr-defined]
    default = next(p.default for p in ai.params if p.name == "concurrency")
    assert default == WorkerConfig.concurrency >= 512
    assert WorkerConfig.concurrency < ServerConfig().max_concurrent_streams
