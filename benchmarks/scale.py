"""Many watched matches on one engine process: 10,000 matches, each with two open Watch
streams (one per seat, with views) and one action every few seconds.

    python benchmarks/scale.py            # 10,000 matches, 20,000 streams
    python benchmarks/scale.py --quick    # 1,000 matches, 2,000 streams

One `battleline serve` process on an embedded Redis. Client processes (grpc channels
multiplex up to 800 streams each) create the LOCAL matches, open both seats' streams
and wait for each snapshot, then hold them for `--hold` seconds while each match acts
once every `--interval` seconds (jittered) from the view its current seat's stream
brought, and a sampler reads views with GetView. Prints `name: value` lines:

- `memory_per_match_kb`, `memory_per_stream_kb`: the engine process's RSS growth
  (/proc/PID/status) from creating the matches, then from opening the streams.
- `getview_p99_ms`, `submit_p99_ms`: while the streams are held.
- `errors`: failed calls and streams that ended with an error, CANCELLED included
  (must be 0); `streams_failed_before_snapshot` counts the streams among them that
  never got their snapshot.
- `engine_errors`: the statuses other than OK the engine itself counted (its /metrics,
  `battleline_rpc_errors_total`, read when the hold ends, before the clients close
  their streams): a stream CANCELLED there was ended from the client's
  side or by gRPC (the handler saw the cancellation), one missing there never reached
  the handler.
- `redis_bytes_per_live_match`: MEMORY USAGE of the keys of a sample of the held
  matches after the hold; `redis_bytes_per_record`: the same for matches played to the
  end, after they finished (what the retention period keeps).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import grpc
import redis
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from battleline.v1 import (
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    types_pb2,
    watch_pb2,
    watch_pb2_grpc,
)
from benchmarks.engine import SERVE, Stats, bot_match, choose, percentile, start_listening
from tests.processes import free_port

STREAMS_PER_CHANNEL = 500  # under the engine's 600 concurrent streams per connection
CREATE_CONCURRENCY = 32  # per client process
SAMPLERS = 2  # GetView loops per client process
CALL_CHANNELS = 2  # connections per client process for unary calls
# Streams per client process waiting for their snapshot at once. With 256 (1,024 from 4
# processes) about 70 of 20,000 ended CANCELLED within 50 ms of starting, never reaching
# the engine's handler (its interceptor counted nothing), in every 10,000-match run; with
# 32 none did, and the 20,000 opened no slower (16.8 s against 19.5 s).
OPEN_CONCURRENCY = 32
PHASE_TIMEOUT_S = 900  # longest wait at a barrier between two phases


@dataclass
class Held:
    """One match as a client holds it: both seats' tokens and their latest views."""

    match_id: str
    tokens: tuple[str, str]
    views: list[types_pb2.MatchView | None] = field(default_factory=lambda: [None, None])


@dataclass
class Result:
    """What one client process measured."""

    getview: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)
    events: int = 0
    actions: int = 0
    no_snapshot: int = 0  # streams that ended with an error before their snapshot
    match_ids: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(what)


def _meta(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def _create(lobby: lobby_pb2_grpc.LobbyServiceStub, ruleset: str) -> Held:
    created = await lobby.CreateMatch(lobby_pb2.CreateMatchRequest(
        options=types_pb2.MatchOptions(ruleset=ruleset, time_control=types_pb2.TimeControl(
            kind=types_pb2.TIME_CONTROL_KIND_NONE)),
        seat=types_pb2.SEAT_CHOICE_FIRST,
        opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL),
        seat_options=types_pb2.SeatOptions(auto_claim=True)), timeout=120)
    return Held(created.match_id, (created.seat_token, created.other_seat_token))


async def _watch(stub: watch_pb2_grpc.WatchServiceStub, held: Held, seat: int,
                 opening: asyncio.Semaphore, opened: asyncio.Event, result: Result) -> None:
    """One seat's stream: keep its latest view; an error ending it is counted (with the
    seconds since the call started). At most `opening` streams wait for their snapshot
    at once (see OPEN_CONCURRENCY)."""
    await opening.acquire()
    started = time.monotonic()
    call = stub.Watch(watch_pb2.WatchRequest(match_id=held.match_id, include_views=True),
                      metadata=_meta(held.tokens[seat]))
    try:
        async for item in call:
            if item.HasField("snapshot"):
                held.views[seat] = item.snapshot
                opening.release()
                opened.set()
            else:
                result.events += 1
                if item.HasField("view"):
                    held.views[seat] = item.view
    except grpc.aio.AioRpcError as err:  # this client's own cancel at the end is no error
        result.error(f"watch: {err.code().name} after {time.monotonic() - started:.1f} s"
                     f"{'' if held.views[seat] is None else ' (snapshot came)'}: {err.details()}")
        if held.views[seat] is None:
            result.no_snapshot += 1
    finally:
        if not opened.is_set():
            opening.release()
        opened.set()


async def _act(game: game_pb2_grpc.GameServiceStub, held: Held, interval: float,
               stop_at: float, rng: random.Random, result: Result) -> None:
    """One action every `interval` seconds, from the view the current seat's stream
    brought (skipped while that view is not there yet)."""
    await asyncio.sleep(rng.uniform(0, interval))
    n = 0
    while time.monotonic() < stop_at:
        for seat, view in enumerate(held.views):
            if (view is not None and view.viewer == view.current_seat
                    and view.phase == types_pb2.MATCH_PHASE_PLAYING):
                n += 1
                started = time.perf_counter()
                try:
                    await game.SubmitAction(game_pb2.SubmitActionRequest(
                        match_id=held.match_id, expected_version=view.version,
                        action_id=f"s{n}", actions=choose(view, rng)),
                        metadata=_meta(held.tokens[seat]), timeout=60)
                    result.submit.append(time.perf_counter() - started)
                    result.actions += 1
                except grpc.aio.AioRpcError as err:
                    result.error(f"submit: {err.code().name} after "
                                 f"{time.perf_counter() - started:.1f} s: {err.details()}")
                break
        await asyncio.sleep(interval)


async def _sample(game: game_pb2_grpc.GameServiceStub, held: list[Held], stop_at: float,
                  rng: random.Random, result: Result) -> None:
    while time.monotonic() < stop_at:
        match = rng.choice(held)
        started = time.perf_counter()
        try:
            await game.GetView(game_pb2.GetViewRequest(match_id=match.match_id),
                               metadata=_meta(match.tokens[0]), timeout=60)
            result.getview.append(time.perf_counter() - started)
        except grpc.aio.AioRpcError as err:
            result.error(f"getview: {err.code().name} after "
                         f"{time.perf_counter() - started:.1f} s: {err.details()}")
        await asyncio.sleep(0.01)


async def _client(address: str, matches: int, seed: int, hold_s: float, interval: float,
                  per_channel: int, open_concurrency: int, barrier: Barrier) -> Result:
    async def phase() -> None:  # parent measures between phases; streams keep flowing
        await asyncio.to_thread(barrier.wait)

    result = Result()
    count = max(1, math.ceil(2 * matches / per_channel))
    # Streams on `count` connections, calls on their own (a connection full of streams
    # would queue them behind its concurrent-stream limit).
    channels = [grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool",
                                                              1)])
                for _ in range(count + CALL_CHANNELS)]
    lobby = lobby_pb2_grpc.LobbyServiceStub(channels[-1])
    held: list[Held] = []
    rulesets = ["standard", "basic", "deck52"]
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def create(i: int) -> None:
        async with gate:
            try:
                held.append(await _create(lobby, rulesets[i % 3]))
            except grpc.aio.AioRpcError as err:
                result.error(f"create: {err.code().name}: {err.details()}")

    await asyncio.gather(*(create(i) for i in range(matches)))
    await phase()  # 1: matches created
    await phase()  # 2: measured
    streams: list[asyncio.Task[None]] = []
    opened: list[asyncio.Event] = []
    opening = asyncio.Semaphore(open_concurrency)
    for i, match in enumerate(held):
        for seat in (0, 1):
            stub = watch_pb2_grpc.WatchServiceStub(channels[(2 * i + seat) % count])
            opened.append(asyncio.Event())
            streams.append(asyncio.create_task(_watch(stub, match, seat, opening, opened[-1],
                                                      result)))
    for event in opened:
        await event.wait()
    await phase()  # 3: streams open, each with its snapshot
    await phase()  # 4: measured
    stop_at = time.monotonic() + hold_s
    games = [game_pb2_grpc.GameServiceStub(channel) for channel in channels[count:]]
    await asyncio.gather(*(_act(games[i % CALL_CHANNELS], m, interval, stop_at,
                                random.Random(seed * 7919 + i), result)
                           for i, m in enumerate(held)),
                         *(_sample(games[s % CALL_CHANNELS], held, stop_at,
                                   random.Random(seed + s), result)
                           for s in range(SAMPLERS)))
    await phase()  # 5: hold over
    await phase()  # 6: live matches measured in Redis
    for task in streams:
        task.cancel()
    await asyncio.gather(*streams, return_exceptions=True)
    for channel in channels:
        await channel.close()
    result.match_ids = [m.match_id for m in held]
    return result


def _client_process(address: str, matches: int, seed: int, hold_s: float, interval: float,
                    per_channel: int, open_concurrency: int, barrier: Barrier,
                    out: Any) -> None:
    out.put(asyncio.run(_client(address, matches, seed, hold_s, interval, per_channel,
                                open_concurrency, barrier)))


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def engine_errors(metrics_port: int) -> dict[str, int]:
    """The engine's own count of RPCs that ended other than OK, by method and code."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {f"{s.labels['method']}/{s.labels['code']}": int(s.value)
            for family in text_string_to_metric_families(text)
            if family.name == "battleline_rpc_errors"
            for s in family.samples if s.name.endswith("_total")}


def match_bytes(client: redis.Redis, match_id: str) -> int:
    """MEMORY USAGE of every key of one match (its hash tag names them all)."""
    keys = client.keys(f"bl:{{{match_id}}}:*")
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)


async def _finish(address: str, count: int) -> None:
    """Play `count` matches to the end (records to measure; the warm-up)."""
    stats = Stats()
    channel = grpc.aio.insecure_channel(address)
    for i in range(count):
        await bot_match(channel, random.Random(i), stats, ["standard", "basic", "deck52"][i % 3])
    await channel.close()
    if stats.errors:
        raise SystemExit(f"finishing matches failed: {stats.first_errors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 matches, 20 s hold")
    parser.add_argument("--matches", type=int, help="watched matches (default 10,000)")
    parser.add_argument("--hold", type=float, help="seconds the streams are held")
    parser.add_argument("--interval", type=float, default=5.0,
                        help="seconds between two actions of one match")
    parser.add_argument("--clients", type=int, help="client processes")
    parser.add_argument("--streams-per-channel", type=int, default=STREAMS_PER_CHANNEL,
                        help="Watch streams per client connection")
    parser.add_argument("--open-concurrency", type=int, default=OPEN_CONCURRENCY,
                        help="streams per client process waiting for their snapshot at once")
    parser.add_argument("--sample", type=int, default=50, help="live matches measured in Redis")
    args = parser.parse_args()
    matches = args.matches or (1000 if args.quick else 10_000)
    hold_s = args.hold or (20.0 if args.quick else 60.0)
    clients = args.clients or (2 if args.quick else 4)
    shares = [matches // clients + (i < matches % clients) for i in range(clients)]

    from battleline_engine.redis_server import EmbeddedRedis

    spawn = mp.get_context("spawn")  # no fork of a process that may hold gRPC threads
    with tempfile.TemporaryDirectory() as tmp:
        embedded = EmbeddedRedis(Path(tmp) / "redis")
        url = embedded.start()
        store = redis.Redis.from_url(url)
        metrics_port = free_port()
        engine, address = start_listening(
            # Every stream comes from this machine's one address: the per-address cap
            # (256 by default) would refuse all but the first few.
            [*SERVE, "--streams-per-seat", "4", "--streams-per-client", "1000000",
             "--metrics-port", str(metrics_port)],
            {"REDIS_URL": url})
        procs: list[Any] = []
        try:
            asyncio.run(_finish(address, 3))  # warm-up: imports, caches, connections
            rss = [rss_bytes(engine.pid)]
            # A client process that dies breaks the barrier instead of leaving the rest
            # waiting for ever (it happened once: four clients vanished mid-hold).
            barrier = spawn.Barrier(clients + 1, timeout=PHASE_TIMEOUT_S)
            out = spawn.Queue()
            procs = [spawn.Process(target=_client_process,
                                   args=(address, k, 1 + i, hold_s, args.interval,
                                         args.streams_per_channel, args.open_concurrency,
                                         barrier, out))
                     for i, k in enumerate(shares)]
            for proc in procs:
                proc.start()
            barrier.wait()  # 1: created
            rss.append(rss_bytes(engine.pid))
            barrier.wait()  # 2
            opening = time.monotonic()
            barrier.wait()  # 3: streams open
            open_s = time.monotonic() - opening
            rss.append(rss_bytes(engine.pid))
            barrier.wait()  # 4: hold
            barrier.wait()  # 5: hold over
            rss.append(rss_bytes(engine.pid))
            errors_seen = engine_errors(metrics_port)  # before the clients close their streams
            live = [match_bytes(store, match_id.decode())
                    for match_id in store.zrange("bl:live", 0, args.sample - 1)]
            barrier.wait()  # 6
            results = [out.get(timeout=600) for _ in procs]
            for proc in procs:
                proc.join(60)
            asyncio.run(_finish(address, 12))
            records = [match_bytes(store, key.decode().split("{", 1)[1].split("}", 1)[0])
                       for key in store.keys("bl:{*}:m")
                       if store.hget(key, "status") == b"finished"]
        finally:
            for proc in procs:
                if proc.is_alive():
                    proc.kill()
            engine.terminate()
            engine.wait(30)
            store.close()
            embedded.stop()
    merged = Result()
    for r in results:
        merged.getview += r.getview
        merged.submit += r.submit
        merged.errors += r.errors
        merged.first_errors += r.first_errors
        merged.events += r.events
        merged.actions += r.actions
        merged.no_snapshot += r.no_snapshot
    created = sum(len(r.match_ids) for r in results)
    kb = 1024.0
    print(f"matches: {created}")
    print(f"streams: {2 * created}")
    print(f"client_processes: {clients}")
    print(f"hold_seconds: {hold_s:.0f}")
    print(f"action_interval_s: {args.interval:.1f}")
    print(f"actions: {merged.actions}")
    print(f"actions_per_s: {merged.actions / hold_s:.1f}")
    print(f"stream_events: {merged.events}")
    print(f"open_seconds: {open_s:.1f}")
    print(f"engine_rss_mb: {' '.join(f'{r / kb / kb:.0f}' for r in rss)}")
    print(f"memory_per_match_kb: {(rss[1] - rss[0]) / max(1, created) / kb:.1f}")
    print(f"memory_per_stream_kb: {(rss[2] - rss[1]) / max(1, 2 * created) / kb:.1f}")
    print(f"memory_growth_during_hold_mb: {(rss[3] - rss[2]) / kb / kb:.1f}")
    print(f"getview_calls: {len(merged.getview)}")
    print(f"getview_p50_ms: {percentile(merged.getview, 0.5) * 1000:.2f}")
    print(f"getview_p99_ms: {percentile(merged.getview, 0.99) * 1000:.2f}")
    print(f"submit_p50_ms: {percentile(merged.submit, 0.5) * 1000:.2f}")
    print(f"submit_p99_ms: {percentile(merged.submit, 0.99) * 1000:.2f}")
    print(f"redis_bytes_per_live_match: {sum(live) / max(1, len(live)):.0f}")
    print(f"redis_bytes_per_record: {sum(records) / max(1, len(records)):.0f}")
    print(f"records_measured: {len(records)}")
    print(f"streams_failed_before_snapshot: {merged.no_snapshot}")
    print(f"errors: {merged.errors}")
    print(f"engine_errors: {' '.join(f'{k}={v}' for k, v in sorted(errors_seen.items()))}")
    for line in merged.first_errors:
        print(f"first_error: {line}")
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
