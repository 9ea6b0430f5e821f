"""The hosted-AI worker: takes seat requests from Redis and plays them through the
engine's public gRPC API, like any client.

One worker process serves up to ``concurrency`` matches at once on one event
loop; each search runs in a process pool (`decide.decide_by`), never in the
loop, and a move with nothing to search (a draw, a claim) is made in the loop. The
searches wait for a process in turn by the client who asked for each match, then
earliest deadline first (`processes.DeadlinePool`); one still waiting when its
deadline is near is dropped and the move answered in the loop by the fallback
(`decide.decide_at_once`, milliseconds), so a short clock never waits out other
matches' searches, and no client's matches take every turn. A request's life:

1. taken from ``bl:ai:requests`` through the consumer group (XREADGROUP), or
   reclaimed (XAUTOCLAIM) after its holder stayed silent ``claim_idle_s``;
2. the seat: JoinMatch with the AI's key (``BATTLELINE_AI_KEY``, the one
   credential of the hosted AI; the engine lets it act for the seats reserved for
   the AI). Joining a match the AI joined already answers the same seat, so a
   worker taking over, or one started after a restart, needs nothing stored;
3. the match is watched (the client resumes across reconnects) and every view
   that asks this seat to act is answered from that view's position text only;
4. when the match is over the request is acknowledged (XACK).

Liveness: while it plays, a worker re-claims its own pending entries every
``claim_idle_s / 3`` (XCLAIM JUSTID resets their idle time), so only a dead or
stuck worker's entries ever become old enough for XAUTOCLAIM. A worker that finds
an entry no longer its own (another worker reclaimed it) stops playing that match.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import random
import signal
import socket
import time
import uuid
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from battleline.v1 import types_pb2
from battleline_client.aio import AsyncClient, AsyncSeat
from battleline_client.backoff import backoff
from battleline_client.common import SeatHandle, is_finished, is_my_turn
from battleline_client.errors import (
    BattleLineError,
    IllegalAction,
    InvalidRequest,
    NotFound,
    NotYourTurn,
    PermissionDenied,
    StaleVersion,
    Unavailable,
)
from battleline_client.port_owner import UNTRUSTED, AsyncOwnerCheck
from battleline_engine import logs
from battleline_engine.logs import LogFormat, LogLevel
from battleline_engine.storage import STORE_CLOCK, Storage, log_failure, now_ms

from .budget import move_deadline
from .decide import (
    MIN_SECONDS,
    Decision,
    concealing,
    decide,
    decide_at_once,
    decide_by,
    is_play,
    level_spec,
    needs_search,
)
from .processes import DeadlinePool
from .searchers import search_processes

log = logging.getLogger("battleline.ai")

_SEATS = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND)
JOIN_ATTEMPTS = 20
KEY_ENV = "BATTLELINE_AI_KEY"


# The request cannot be served and never will be: acknowledge it and move on.
_HOPELESS = (NotFound, PermissionDenied, InvalidRequest, IllegalAction)


@dataclass(frozen=True)
class WorkerConfig:
    """Where to play and how much at once."""

    engine: str
    redis_url: str = field(repr=False)  # may carry the Redis password
    key: str = field(repr=False)  # the AI's key: acts for the AI's seats
    # Matches held by this process at once. A match waiting for its human costs a
    # watch stream and no CPU (searches queue for `search_processes`), and for at most
    # `park_after_s`, so this is high. Its streams share one connection, which an
    # engine lets carry 600.
    concurrency: int = 512
    search_processes: int = 1  # the decision pool
    claim_idle_s: float = 30.0  # a request idle this long is taken from its silent holder
    move_cap_s: float = 5.0  # longest think per move (also without a clock)
    # Every play is sent this long after its view came (never sooner, and its search
    # stops by then), sooner only when the clock leaves less: a level that sees one
    # clear best answers in milliseconds and searches otherwise, so the time it took
    # would tell the other seat something of its hand (the sixteenth audit). 0: off.
    think_s: float = 1.0
    redis_owner: int | None = None  # the uid Redis's password may go to (ListenerPin)
    # A match whose human has not moved for this long is parked: the worker lets go of
    # it (its place and its watch stream) and the engine asks again once the human moves,
    # so idle matches cannot fill the workers (sixth audit).
    park_after_s: float = 60.0
    name: str = ""  # consumer name; unique per process by default


def _seed() -> int:
    return random.SystemRandom().getrandbits(63)


class AiWorker:
    """One worker process: the request loop, the per-match players and the heartbeat."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.name = config.name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.active: dict[str, asyncio.Task[None]] = {}  # request id -> its player
        self.stopping = asyncio.Event()

    async def run(self) -> None:
        """Serve requests until `stop()`; unfinished matches stay pending for others."""
        self.storage = Storage.from_url(self.config.redis_url,
                                        redis_owner=self.config.redis_owner)
        self._start_searchers()
        # Its key acts for every AI seat: none of it to another user's process that took
        # the engine's port while the engine was down (twenty-ninth audit).
        self.client = AsyncClient(self.config.engine,
                                  interceptors=(AsyncOwnerCheck(self.config.engine,
                                                                strict=True),))
        await self.storage.ai.ensure_group()
        log.info("ai worker %s: engine %s", self.name, self.config.engine)
        heartbeat = asyncio.create_task(self._heartbeat())
        # The executor starts a process on first use (~0.5 s: an interpreter, imports).
        # Started now, the first moves wait for it in our queue, from which a short clock
        # still falls back in time, not inside the executor, from which nothing does.
        warm_up = [asyncio.create_task(self.searches.run(math.inf, os.getpid))
                   for _ in range(self.config.search_processes)]
        keeping_time = await self.storage.keeping_time()
        try:
            await self._take_requests()
        finally:
            heartbeat.cancel()
            keeping_time.cancel()
            await self._hand_back()
            for task in (*warm_up, *self.active.values()):
                task.cancel()
            await asyncio.gather(heartbeat, keeping_time, *warm_up, *self.active.values(),
                                 return_exceptions=True)
            await self.client.close()
            self.pool.shutdown(cancel_futures=True)
            await self.storage.close()

    def _start_searchers(self) -> None:
        self.pool = search_processes(self.config.search_processes)
        self.searches = DeadlinePool(self.pool, self.config.search_processes)

    async def _hand_back(self) -> None:
        """On a clean stop, mark the matches in hand as idle for `claim_idle_s` already,
        so the next reclaim pass of any worker takes them over without waiting."""
        ids = list(self.active)
        if not ids:
            return
        try:
            await self.storage.ai.claim(self.name, ids,
                                        idle_ms=int(self.config.claim_idle_s * 1000) + 1)
            log.info("ai worker %s: handed back %d match(es)", self.name, len(ids))
        except Exception:  # they are taken over after claim_idle_s anyway
            log.exception("ai worker %s: could not hand back matches", self.name)

    def stop(self) -> None:
        self.stopping.set()

    async def _take_requests(self) -> None:
        next_reclaim = 0.0
        loop = asyncio.get_running_loop()
        delays = backoff(1.0)
        while not self.stopping.is_set():
            free = self.config.concurrency - len(self.active)
            # No request before the store's time, which a clock's deadline is on (on a
            # host clock 5 s ahead, whole games were played by the fallback).
            if not STORE_CLOCK.synced or free <= 0:
                await asyncio.sleep(0.2)
                continue
            entries: list[tuple[str, dict[str, str]]] = []
            try:
                if loop.time() >= next_reclaim:
                    entries = await self._reclaim(free)
                    next_reclaim = loop.time() + self.config.claim_idle_s / 3
                if not entries:
                    entries = await self.storage.ai.read(self.name, count=free, block_ms=500)
            except (RedisConnectionError, RedisTimeoutError) as err:
                # Redis restarting: the matches in hand play on; ask again shortly.
                log.warning("ai worker %s: Redis unavailable (%s)", self.name, err)
                await asyncio.sleep(next(delays))
                continue
            delays = backoff(1.0)
            for entry_id, fields in entries:
                if entry_id not in self.active:
                    self._start(entry_id, fields)

    async def _reclaim(self, count: int) -> list[tuple[str, dict[str, str]]]:
        """Requests whose holder has been silent for `claim_idle_s` (it died); then such
        holders, left with nothing, leave the group."""
        idle_ms = int(self.config.claim_idle_s * 1000)
        out = await self.storage.ai.take_over(self.name, idle_ms, count)
        for entry_id, fields in out:
            log.info("ai worker %s: reclaimed request %s (match %s)", self.name, entry_id,
                     fields.get("match"))
        try:
            await self.storage.ai.forget_gone(self.name, idle_ms)
        except Exception as err:  # a full store refuses it: the requests taken play on
            log_failure(log, f"ai worker {self.name}: forgetting silent workers", err)
        return out

    def _start(self, entry_id: str, fields: dict[str, str]) -> None:
        task = asyncio.create_task(self._serve(entry_id, fields))
        self.active[entry_id] = task
        task.add_done_callback(lambda _t: self.active.pop(entry_id, None))

    async def _heartbeat(self) -> None:
        """Keep our pending entries fresh; give up matches another worker took over."""
        while True:
            await asyncio.sleep(self.config.claim_idle_s / 3)
            if not self.active:
                continue
            try:
                mine = await self.storage.ai.held_by(self.name)
                for entry_id, task in list(self.active.items()):
                    if entry_id not in mine:
                        log.warning("ai worker %s: request %s taken over, leaving it",
                                    self.name, entry_id)
                        task.cancel()
                ids = [i for i in self.active if i in mine]
                if ids:
                    await self.storage.ai.claim(self.name, ids)
            except Exception as err:  # Redis away for a moment: try again next beat
                log_failure(log, f"ai worker {self.name}: heartbeat", err)

    async def _serve(self, entry_id: str, fields: dict[str, str]) -> None:
        match_id = fields.get("match", "")
        outcome = "done"
        try:
            handle = await self._seat(fields)
            seat = AsyncSeat(self.client, handle)
            # Ours now: a park left by a worker that died before its ack would have the
            # engine ask for a second player at the human's next move.
            await self.storage.ai.unpark(match_id)
            while not await self._play(seat, fields):
                if await self._park(seat, fields):
                    outcome = "parked until its human moves"
                    break
        except _HOPELESS as err:
            if err.reason == "seat-reserved":  # our key is not the engine's: not hopeless,
                log.error("ai worker %s: the engine refused this worker's AI key for match "
                          "%s: set the same BATTLELINE_AI_KEY on engines and AI; left for "
                          "reclaim", self.name, match_id)
                return  # a worker with the right key takes it over after claim_idle_s
            # A match the engine cancelled while every worker was busy is routine.
            level = logging.INFO if err.reason == "cancelled" else logging.WARNING
            log.log(level, "ai worker %s: request %s for match %s dropped: %s", self.name,
                    entry_id, match_id, err)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            # Left pending and no longer kept fresh: reclaimed (by anyone) after claim_idle_s.
            if isinstance(err, Unavailable) and err.reason == UNTRUSTED:
                log.error("ai worker %s: match %s: %s; left for reclaim", self.name,
                          match_id, err.message)
            else:
                log.exception("ai worker %s: match %s failed; left for reclaim", self.name,
                              match_id)
            return
        await self.storage.ai.ack(entry_id)
        log.info("ai worker %s: match %s %s", self.name, match_id, outcome)

    async def _seat(self, fields: dict[str, str]) -> SeatHandle:
        """The AI's seat, joined with the AI's key (again, after a takeover: the same seat).
        The key is the seat's token: the engine issues none for it."""
        match_id = fields["match"]
        for attempt in range(JOIN_ATTEMPTS):
            try:
                handle = await self.client.join(match_id=match_id, token=self.config.key)
                break
            except StaleVersion:  # the match changed while joining (a clock, a resign)
                if attempt == JOIN_ATTEMPTS - 1:
                    raise
        if handle.seat != _SEATS[int(fields["seat"])]:
            raise PermissionDenied(f"match {match_id}: the AI holds another seat than asked")
        return SeatHandle(match_id, self.config.key, handle.seat)

    async def _play(self, seat: AsyncSeat, fields: dict[str, str]) -> bool:
        """Answer every view that asks this seat to act, until the match is over (True)
        or its human has not moved for `park_after_s` (False)."""
        spec = level_spec(int(fields.get("level", "5") or 5))
        owner = fields.get("owner") or seat.match_id
        acted = -1
        clock = asyncio.get_running_loop().time
        try:
            async with asyncio.timeout(None) as idle:
                async for _message in seat.watch(include_views=True):
                    idle.reschedule(None)  # a search of ours is not the human's idleness
                    view, acted = await self._answer(seat, spec, owner, acted)
                    if view is not None and is_finished(view):
                        return True
                    idle.reschedule(clock() + self.config.park_after_s)
        except TimeoutError:
            return False
        view = await seat.view()
        if not is_finished(view):
            raise BattleLineError(f"watch of match {seat.match_id} ended before the match")
        return True

    async def _answer(self, seat: AsyncSeat, spec: str, owner: str, acted: int,
                      ) -> tuple[types_pb2.MatchView | None, int]:
        """Act on the newest view while it asks this seat to, once per version; the last
        view and the last version acted on."""
        view = seat.last_view
        while view is not None and is_my_turn(view) and view.version > acted:
            acted = view.version
            if not view.position:  # an engine that fills positions only on request
                view = await seat.view()
            now = time.monotonic()
            move_spec, deadline, even = evened(
                spec, view.position,
                move_deadline(view, self.config.move_cap_s, now, now_ms() / 1000),
                now, self.config.think_s)
            decision = await self._decide(view.position, move_spec, deadline, owner)
            if even:
                await asyncio.sleep(deadline - time.monotonic())
            log.debug("match %s v%d: %s (%d iterations, %.2f s, win %.2f)", seat.match_id,
                      view.version, decision.action, decision.iterations, decision.seconds,
                      decision.value)
            try:
                view = seat.remember((await seat.act(decision.action)).view)
            except (StaleVersion, NotYourTurn, IllegalAction):
                view = await seat.view()  # the match moved on (a timeout, a resign)
        return view, acted

    async def _park(self, seat: AsyncSeat, fields: dict[str, str]) -> bool:
        """Leave the match to the engine until its human moves; False if the AI is to act
        after all (the human moved meanwhile), so this worker plays on.

        Parked first, looked at second: a move committed before the park is seen in the
        view, one after it wakes the AI. Whichever of this worker and the engine takes
        the parked request (`unpark`) serves the match."""
        await self.storage.ai.park(fields)
        view = await seat.view()
        if is_finished(view):
            await self.storage.ai.unpark(seat.match_id)  # nothing left to wake it for
            return True
        return not is_my_turn(view) or await self.storage.ai.unpark(seat.match_id) is None

    async def _decide(self, position: str, spec: str, deadline: float, owner: str) -> Decision:
        """The level's search in a search process if one is ours before `deadline` is
        near (`decide_by` would only answer with the fallback after that), else the
        fallback here and now: late is a loss on time, a weaker move is not. A move with
        nothing to search (a draw, a claim) is made here at once, not queued."""
        seed, pool = _seed(), self.pool
        if not needs_search(position, spec):
            return decide(position, spec, None, seed)
        try:
            searched = await self.searches.run(deadline - MIN_SECONDS, decide_by, position,
                                               spec, deadline, seed, owner=owner)
        except BrokenProcessPool:
            # A search process died (the OOM killer, a crash in compiled code): the pool
            # is broken for good, and every later move would fail and lose on time.
            if self.pool is pool:
                log.error("a search process died: starting new search processes")
                pool.shutdown(wait=False, cancel_futures=True)
                self._start_searchers()
            searched = None
        if searched is not None:
            return searched
        log.debug("no search process free before the deadline: the fallback answers")
        return decide_at_once(position, spec, seed)


def evened(spec: str, position: str, deadline: float, now: float,
           think_s: float) -> tuple[str, float, bool]:
    """The spec and deadline a move is decided with, and whether its answer waits for the
    deadline: with `think_s` > 0 a play takes `think_s` (sooner only if its clock leaves
    less) and a search's CPU (`concealing`), searched or not, so neither its timing nor
    the load it puts on the machine tells whether its hand gave it a choice."""
    if think_s <= 0 or not is_play(position):
        return spec, deadline, False
    return concealing(spec), min(deadline, now + think_s), True


async def _main(config: WorkerConfig) -> None:
    worker = AiWorker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stop)
    await worker.run()


def main(argv: list[str] | None = None) -> None:
    """`python -m battleline_ai.worker`: one worker process (what `battleline ai` starts).

    Its secrets come from the environment, never the command line (which every local
    user can read): the Redis URL from REDIS_URL, the AI's key from BATTLELINE_AI_KEY.
    """
    parser = argparse.ArgumentParser(description="a Battle Line hosted-AI worker process")
    parser.add_argument("--engine", required=True, help="engine HOST:PORT")
    parser.add_argument("--concurrency", type=int, default=WorkerConfig.concurrency)
    parser.add_argument("--search-processes", type=int, default=1)
    parser.add_argument("--claim-idle", type=float, default=30.0)
    parser.add_argument("--move-cap", type=float, default=5.0)
    parser.add_argument("--think", type=float, default=WorkerConfig.think_s,
                        help="seconds every play takes (0: as soon as chosen)")
    parser.add_argument("--park-after", type=float, default=WorkerConfig.park_after_s,
                        help="seconds a human may think before the match is parked")
    parser.add_argument("--name", default="")
    parser.add_argument("--redis-owner", type=int, default=None,
                        help="uid of the user Redis runs as (default: the first met)")
    parser.add_argument("--log-level", type=LogLevel, choices=list(LogLevel),
                        default=LogLevel.INFO)
    parser.add_argument("--log-format", type=LogFormat, choices=list(LogFormat),
                        default=LogFormat.JSON)
    args = parser.parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    redis_url, key = os.environ.get("REDIS_URL", ""), os.environ.get(KEY_ENV, "")
    if not redis_url or not key:
        parser.error(f"set REDIS_URL and {KEY_ENV} in the environment")
    config = WorkerConfig(args.engine, redis_url, key, concurrency=args.concurrency,
                          search_processes=args.search_processes, claim_idle_s=args.claim_idle,
                          move_cap_s=args.move_cap, think_s=args.think,
                          park_after_s=args.park_after, name=args.name,
                          redis_owner=args.redis_owner)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_main(config))
    except (RedisConnectionError, RedisTimeoutError) as err:
        # One line, not a traceback per restart: `battleline ai` restarts the worker.
        log.error("ai worker %s cannot reach Redis: %s", args.name or os.getpid(), err)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
