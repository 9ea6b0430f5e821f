"""Engine load benchmark: many concurrent bot-vs-bot LOCAL matches through a real
`battleline serve` process and an embedded Redis, next to the same load harness
against a trivial echo servicer (same server stack: start_server, interceptor,
health) in the same run.

    python benchmarks/engine.py            # 1000 concurrent matches
    python benchmarks/engine.py --quick    # 100 concurrent matches, shorter runs

Prints `name: value` lines. `engine_actions_per_s` counts game actions applied
(a troop play and its draw go in one request, as a real client sends a turn);
`engine_calls_per_s` counts RPCs (creates, views, submits). `engine_vs_echo_ratio`
is engine_actions_per_s / echo_calls_per_s; `engine_calls_vs_echo_ratio` compares
RPCs with RPCs. Client, server and Redis share this machine's cores.

The echo load is the same harness: as many concurrent clients, the same channels and
client library, a seat-token-sized authorization header and messages of about the
engine's mean sizes (printed as engine_request_bytes / engine_response_bytes). It
runs half before and half after the engine loads, so a change in what else loads the
machine during the run shifts both sides alike.

Three engine processes serve the same Redis, each with one way to send an action's
Redis commands: `engine` (the default: FastRedis, adaptive batching), `unbatched`
(FastRedis, each command leaves at the end of its event-loop turn:
--redis-batch-ms 0) and `redispy` (redis-py's pool with hiredis: --redis-client
redis-py). At low load (1, 4 and 16 concurrent matches from one client process)
`p50_ms_K` / `p99_ms_K` are the default engine's call latencies beside the unbatched
engine's and the echo's (`unbatched_p50_ms_K`, `echo_p50_ms_K`, ...). Under the full
load the default and the redis-py engine play the same matches in turn;
`fastredis_cpu_saving` is the share of engine CPU per call FastRedis saves against
redis-py, the CPU time read from each server process's own /proc stat. Each engine plays
the load twice, the second round in the reverse order.

Client, server and Redis share the cores, so the throughput ratio follows what each side
spends in all its processes: the clients' CPU (their process time) and Redis's (INFO cpu,
for each engine: `engine_redis_cpu_ms_per_call`, `unbatched_...`, `redispy_...`) are
printed per call too, with `engine_vs_echo_total_cpu_ratio` and
`ratio_bound_server_as_echo`, the ratio were the engine server as cheap as the echo's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import redis

from battleline.v1 import (
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    types_pb2,
)
from battleline_client import loadtest
from battleline_rules import is_compiled

BATTLELINE = str(Path(sys.executable).parent / "battleline")
ECHO_METHOD = "/bench.Echo/Echo"
# Echo message sizes, about the engine's means (GetView/SubmitAction requests; views).
ECHO_REQUEST_BYTES = 40
ECHO_RESPONSE_BYTES = 600
ECHO_PADDING = bytes(ECHO_RESPONSE_BYTES - ECHO_REQUEST_BYTES)
# A seat token's length (match id, '.', 43 characters), sent as the engine's clients do.
ECHO_METADATA = (("authorization", "Bearer " + "x" * 16 + "." + "y" * 43),)
SEATS = (types_pb2.SEAT_FIRST, types_pb2.SEAT_SECOND)
CHANNELS = 16
# Each channel gets its own connection (channels to one target otherwise share one, and
# one HTTP/2 connection carries at most the server's max_concurrent_streams calls).
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


@dataclass
class Stats:
    """What one harness run measured."""

    latencies: list[float] = field(default_factory=list)
    calls: int = 0
    actions: int = 0
    request_bytes: int = 0
    response_bytes: int = 0
    errors: int = 0
    completed: int = 0
    client_cpu_s: float = 0.0  # CPU the load-generating processes spent
    error_kinds: dict[str, int] = field(default_factory=dict)
    first_errors: list[str] = field(default_factory=list)

    def error(self, err: grpc.RpcError) -> None:
        self.errors += 1
        name = err.code().name if hasattr(err, "code") else type(err).__name__
        if name not in self.error_kinds:
            self.first_errors.append(f"{name}: {err.details() if hasattr(err, 'details') else err}")
        self.error_kinds[name] = self.error_kinds.get(name, 0) + 1

    def add(self, other: Stats) -> None:
        """Count `other`'s run into this one (one figure over several client processes)."""
        self.latencies += other.latencies
        self.calls += other.calls
        self.actions += other.actions
        self.request_bytes += other.request_bytes
        self.response_bytes += other.response_bytes
        self.errors += other.errors
        self.completed += other.completed
        self.client_cpu_s += other.client_cpu_s
        self.first_errors += other.first_errors
        for name, count in other.error_kinds.items():
            self.error_kinds[name] = self.error_kinds.get(name, 0) + count


@dataclass
class Load:
    """One server's runs added up: the clients' stats, the wall seconds, and the CPU
    seconds the server's own process and Redis spent on them."""

    stats: Stats = field(default_factory=Stats)
    seconds: float = 0.0
    server_cpu: float = 0.0
    redis_cpu: float = 0.0

    def add(self, other: Load) -> None:
        self.stats.add(other.stats)
        self.seconds += other.seconds
        self.server_cpu += other.server_cpu
        self.redis_cpu += other.redis_cpu

    def per_call(self, seconds: float) -> float:
        """CPU ``seconds`` of these runs per call served."""
        return seconds / max(1, self.stats.calls)


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0-1) of unsorted values, nearest rank, as `battleline loadtest`
    reports it (0 for none)."""
    return loadtest.percentile(sorted(values), q * 100)


# -- the echo server (a subprocess of this script) -------------------------------------


async def _echo_server(redis_url: str) -> None:
    from battleline_engine.server import ServerConfig, start_server
    from battleline_engine.storage import Storage

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request + ECHO_PADDING  # about a view's size

    class Echo:
        service_name = "bench.Echo"

        def register(self, server: grpc.aio.Server) -> None:
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
                "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}),))

    storage = Storage.from_url(redis_url)
    engine = await start_server(ServerConfig(port=0, drain_s=0), storage, [Echo()])
    print(f"echo listening on {engine.address}", flush=True)
    await engine.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_listening(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={**os.environ, **env})
    assert process.stdout is not None
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        raise SystemExit(f"could not start {args}: {line!r}")
    return process, line.rsplit(" ", 1)[1].strip()


# -- load harnesses ------------------------------------------------------------------------


def choose(view: types_pb2.MatchView, rng: random.Random) -> list[str]:
    """A random legal action; a troop play goes with a draw, as one turn."""
    action = rng.choice(list(view.legal_actions))
    if not action.startswith("play ") or "@" not in action:
        return [action]  # Scout, guile tactics, claims, draws: one step at a time
    decks = [d.deck for d in view.decks if d.count > 0]
    return [action, f"draw {rng.choice(decks)}"] if decks else [action, "end"]


async def _call(stats: Stats, coro_fn, *args, **kw):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = await coro_fn(*args, **kw)
    stats.latencies.append(time.perf_counter() - started)
    stats.calls += 1
    if not isinstance(result, bytes):  # engine calls: protobuf messages
        stats.request_bytes += args[0].ByteSize()
        stats.response_bytes += result.ByteSize()
    return result


async def bot_match(channel: grpc.aio.Channel, rng: random.Random, stats: Stats,
                    ruleset: str) -> None:
    """Create a LOCAL match and play it to the end with random legal actions."""
    lobby = lobby_pb2_grpc.LobbyServiceStub(channel)
    game = game_pb2_grpc.GameServiceStub(channel)
    try:
        created = await _call(stats, lobby.CreateMatch, lobby_pb2.CreateMatchRequest(
            options=types_pb2.MatchOptions(ruleset=ruleset, time_control=types_pb2.TimeControl(
                kind=types_pb2.TIME_CONTROL_KIND_NONE)),
            seat=types_pb2.SEAT_CHOICE_FIRST,
            opponent=types_pb2.Opponent(kind=types_pb2.OPPONENT_KIND_LOCAL),
            seat_options=types_pb2.SeatOptions(auto_claim=True)), timeout=60)
        tokens = (created.seat_token, created.other_seat_token)
        meta = [[("authorization", f"Bearer {t}")] for t in tokens]
        view = (await _call(stats, game.GetView, game_pb2.GetViewRequest(
            match_id=created.match_id), metadata=meta[0], timeout=60)).view
        seat = 0
        n = 0
        while view.phase != types_pb2.MATCH_PHASE_FINISHED:
            seat = SEATS.index(view.current_seat)
            if view.viewer != view.current_seat:
                view = (await _call(stats, game.GetView, game_pb2.GetViewRequest(
                    match_id=created.match_id), metadata=meta[seat], timeout=60)).view
            actions = choose(view, rng)
            n += 1
            response = await _call(stats, game.SubmitAction, game_pb2.SubmitActionRequest(
                match_id=created.match_id, expected_version=view.version,
                action_id=f"b{n}", actions=actions), metadata=meta[seat], timeout=60)
            stats.actions += len(actions)
            view = response.view
        stats.completed += 1
    except grpc.RpcError as err:
        stats.error(err)


def open_channels(address: str) -> list[grpc.aio.Channel]:
    return [grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) for _ in range(CHANNELS)]


async def run_engine_for(address: str, concurrency: int, seconds: float, seed: int,
                         ) -> Stats:
    """`concurrency` matches at a time, each task playing matches back to back until
    `seconds` have passed (low-load latency)."""
    channels = [grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
                for _ in range(min(concurrency, CHANNELS))]
    stats = Stats()
    rulesets = ["standard", "basic", "deck52"]
    stop_at = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        rng = random.Random(seed + i)
        n = 0
        while time.perf_counter() < stop_at:
            await bot_match(channels[i % len(channels)], rng, stats, rulesets[n % 3])
            n += 1

    await asyncio.gather(*(loop(i) for i in range(concurrency)))
    for channel in channels:
        await channel.close()
    return stats


async def run_engine(address: str, matches: int, seed: int) -> tuple[Stats, float]:
    channels = open_channels(address)
    stats = Stats()
    rulesets = ["standard", "basic", "deck52"]
    started = time.perf_counter()
    await asyncio.gather(*(
        bot_match(channels[i % CHANNELS], random.Random(seed + i), stats, rulesets[i % 3])
        for i in range(matches)))
    elapsed = time.perf_counter() - started
    for channel in channels:
        await channel.close()
    return stats, elapsed


async def run_echo(address: str, concurrency: int, seconds: float) -> tuple[Stats, float]:
    channels = [grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
                for _ in range(min(concurrency, CHANNELS))]
    stats = Stats()
    payload = os.urandom(ECHO_REQUEST_BYTES)
    stop_at = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        call = channels[i % len(channels)].unary_unary(ECHO_METHOD)
        while time.perf_counter() < stop_at:
            try:
                await _call(stats, call, payload, metadata=ECHO_METADATA, timeout=60)
            except grpc.RpcError as err:
                stats.error(err)

    started = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(concurrency)))
    elapsed = time.perf_counter() - started
    for channel in channels:
        await channel.close()
    return stats, elapsed


def _measured(load: Coroutine[Any, Any, tuple[Stats, float]]) -> tuple[Stats, float, float]:
    """Run one client process's load: its stats (with the process's CPU), start and end."""
    started, cpu = time.time(), time.process_time()
    stats, _ = asyncio.run(load)
    stats.client_cpu_s = time.process_time() - cpu
    return stats, started, time.time()


def _engine_worker(address: str, matches: int, seed: int) -> tuple[Stats, float, float]:
    return _measured(run_engine(address, matches, seed))


def _echo_worker(address: str, concurrency: int, seconds: float) -> tuple[Stats, float, float]:
    return _measured(run_echo(address, concurrency, seconds))


def redis_cpu_seconds(url: str) -> float:
    """User + system CPU the Redis server has spent so far (its INFO cpu section)."""
    client = redis.Redis.from_url(url)
    try:
        info = client.info("cpu")
    finally:
        client.close()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def in_processes(worker: Callable[..., tuple[Stats, float, float]], clients: int,
                 jobs: list[tuple[object, ...]]) -> tuple[Stats, float]:
    """Run the harness in `clients` processes (one Python process cannot load the server
    alone); merge their stats over the wall time from the first start to the last end."""
    with ProcessPoolExecutor(clients) as pool:
        results = list(pool.map(worker, *zip(*jobs, strict=True)))
    merged = Stats()
    for stats, _, _ in results:
        merged.add(stats)
    elapsed = max(r[2] for r in results) - min(r[1] for r in results)
    return merged, elapsed


def low_load(engines: dict[str, str], echo_address: str, levels: tuple[int, ...],
             seconds: float, seed: int) -> tuple[dict[tuple[str, int], Stats], Stats]:
    """Latencies at each level of concurrency for each engine and the echo: the servers
    take turns level by level, half the time in one order and half in the reverse, so a
    change in the machine's load weighs on all alike."""
    results: dict[tuple[str, int], Stats] = {}
    errors = Stats()
    servers = [*engines, "echo"]
    for k in levels:
        for order in (servers, servers[::-1]):
            for name in order:
                if name == "echo":
                    stats = asyncio.run(run_echo(echo_address, k, seconds / 2))[0]
                else:
                    stats = asyncio.run(run_engine_for(engines[name], k, seconds / 2, seed))
                results.setdefault((name, k), Stats()).add(stats)
    for stats in results.values():
        errors.add(Stats(errors=stats.errors, error_kinds=stats.error_kinds,
                         first_errors=stats.first_errors))
    return results, errors


SERVE = [BATTLELINE, "serve", "--port", "0", "--log-level", "warning", "--no-ai", "--no-web",
         "--create-rate", "1000000", "--action-rate", "1000000", "--call-rate", "1000000"]
# The engines of one run: each sends an action's Redis commands its own way.
ENGINES = {"engine": [], "unbatched": ["--redis-batch-ms", "0"],
           "redispy": ["--redis-client", "redis-py"]}
LATENCY_LEVELS = (1, 4, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="100 matches, 5 s of echo, 4 s per latency level")
    parser.add_argument("--matches", type=int, help="concurrent matches (default 1000)")
    parser.add_argument("--echo-seconds", type=float)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=2, help="load-generating processes")
    parser.add_argument("--echo-server", metavar="REDIS_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server:
        asyncio.run(_echo_server(args.echo_server))
        return
    matches = args.matches or (100 if args.quick else 1000)
    echo_seconds = args.echo_seconds or (5.0 if args.quick else 15.0)
    latency_seconds = 4.0 if args.quick else 10.0

    from battleline_engine.redis_server import EmbeddedRedis

    n = args.clients
    shares = [matches // n + (i < matches % n) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        redis = EmbeddedRedis(Path(tmp) / "redis")
        url = redis.start()
        servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
        try:
            for name, extra in ENGINES.items():
                servers[name] = start_listening([*SERVE, *extra], {"REDIS_URL": url})
            servers["echo"] = start_listening([sys.executable, __file__, "--echo-server", url],
                                              {})
            echo, echo_address = servers["echo"]
            latencies, latency_errors = low_load(
                {name: servers[name][1] for name in ("engine", "unbatched")}, echo_address,
                LATENCY_LEVELS, latency_seconds, args.seed)

            def echo_run() -> Load:
                cpu = cpu_seconds(echo.pid)
                stats, seconds = in_processes(
                    _echo_worker, n, [(echo_address, k, echo_seconds / 2) for k in shares])
                return Load(stats, seconds, cpu_seconds(echo.pid) - cpu)

            loads = {name: Load() for name in ENGINES}

            def engine_run(name: str, seed: int) -> None:
                process, address = servers[name]
                cpu, redis_before = cpu_seconds(process.pid), redis_cpu_seconds(url)
                stats, seconds = in_processes(
                    _engine_worker, n,
                    [(address, k, seed + 100_000 * i) for i, k in enumerate(shares)])
                loads[name].add(Load(stats, seconds, cpu_seconds(process.pid) - cpu,
                                     redis_cpu_seconds(url) - redis_before))

            echo_before = echo_run()
            # Each engine plays twice, the second round in the reverse order (the same
            # deals in a round), so a drift in the machine's load weighs on all alike.
            for round_seed, order in ((args.seed, [*ENGINES]), (args.seed + 1, [*ENGINES][::-1])):
                for name in order:
                    engine_run(name, round_seed)
            echo_after = echo_run()
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(15)
            redis.stop()
    echo_load = Load()
    for part in (echo_before, echo_after):
        echo_load.add(part)
    echo_stats, echo_s, echo_cpu = echo_load.stats, echo_load.seconds, echo_load.server_cpu
    echo_rate = echo_stats.calls / echo_s
    engine = loads["engine"]
    engine_stats, engine_s, engine_cpu = engine.stats, engine.seconds, engine.server_cpu
    actions_rate = engine_stats.actions / engine_s
    calls_rate = engine_stats.calls / engine_s
    ms = 1000.0
    print(f"rules_core_compiled: {int(is_compiled())}")
    print(f"concurrent_matches: {matches}")
    print(f"client_processes: {args.clients}")
    print(f"matches_completed: {engine_stats.completed}")
    print(f"engine_seconds: {engine_s:.2f}")
    print(f"engine_actions: {engine_stats.actions}")
    print(f"engine_calls: {engine_stats.calls}")
    print(f"engine_actions_per_s: {actions_rate:.1f}")
    print(f"engine_calls_per_s: {calls_rate:.1f}")
    print(f"echo_calls_per_s: {echo_rate:.1f}")
    print(f"echo_calls_per_s_before_after: {echo_before.stats.calls / echo_before.seconds:.1f} "
          f"{echo_after.stats.calls / echo_after.seconds:.1f}")
    print(f"engine_vs_echo_ratio: {actions_rate / echo_rate:.3f}")
    print(f"engine_calls_vs_echo_ratio: {calls_rate / echo_rate:.3f}")
    print(f"p50_ms: {percentile(engine_stats.latencies, 0.5) * ms:.2f}")
    print(f"p99_ms: {percentile(engine_stats.latencies, 0.99) * ms:.2f}")
    print(f"mean_ms: {statistics.fmean(engine_stats.latencies or [0]) * ms:.2f}")
    print(f"echo_p50_ms: {percentile(echo_stats.latencies, 0.5) * ms:.2f}")
    print(f"echo_p99_ms: {percentile(echo_stats.latencies, 0.99) * ms:.2f}")
    for k in LATENCY_LEVELS:
        for name, prefix in (("engine", ""), ("unbatched", "unbatched_"), ("echo", "echo_")):
            values = latencies[(name, k)].latencies
            print(f"{prefix}p50_ms_{k}: {percentile(values, 0.5) * ms:.2f}")
            print(f"{prefix}p99_ms_{k}: {percentile(values, 0.99) * ms:.2f}")
        for q in (0.5, 0.99):
            ratio = (percentile(latencies[("engine", k)].latencies, q)
                     / max(1e-9, percentile(latencies[("unbatched", k)].latencies, q)))
            print(f"p{int(q * 100)}_vs_unbatched_{k}: {ratio:.2f}")
    # Server CPU per call: independent of what else loads this (shared) machine.
    cpu_per_call = {name: load.per_call(load.server_cpu) for name, load in loads.items()}
    print(f"engine_server_cpu_ms_per_call: {cpu_per_call['engine'] * ms:.3f}")
    print(f"unbatched_server_cpu_ms_per_call: {cpu_per_call['unbatched'] * ms:.3f}")
    print(f"redispy_server_cpu_ms_per_call: {cpu_per_call['redispy'] * ms:.3f}")
    print(f"fastredis_cpu_saving: {1 - cpu_per_call['engine'] / cpu_per_call['redispy']:.3f}")
    print(f"batching_cpu_saving: {1 - cpu_per_call['engine'] / cpu_per_call['unbatched']:.3f}")
    for name in ("unbatched", "redispy"):
        load = loads[name]
        print(f"{name}_vs_echo_ratio: {load.stats.actions / load.seconds / echo_rate:.3f}")
    echo_per_call = echo_load.per_call(echo_cpu)
    print(f"echo_server_cpu_ms_per_call: {echo_per_call * ms:.3f}")
    print(f"engine_server_cpu_share: {engine_cpu / engine_s:.2f}")
    print(f"engine_server_cpu_ms_per_action: {engine_cpu * ms / max(1, engine_stats.actions):.3f}")
    engine_per_action = engine_cpu / max(1, engine_stats.actions)
    print(f"engine_vs_echo_cpu_ratio: {echo_per_call / max(1e-9, engine_per_action):.3f}")
    # Client, server and Redis share the cores, so the throughput ratio is bounded by the
    # CPU each side of the comparison spends in all its processes per call.
    calls = max(1, engine_stats.calls)
    engine_client = engine.per_call(engine_stats.client_cpu_s)
    echo_client = echo_load.per_call(echo_stats.client_cpu_s)
    redis_per_call = {name: load.per_call(load.redis_cpu) for name, load in loads.items()}
    engine_redis = redis_per_call["engine"]
    print(f"engine_client_cpu_ms_per_call: {engine_client * ms:.3f}")
    print(f"echo_client_cpu_ms_per_call: {echo_client * ms:.3f}")
    for name, per_call in redis_per_call.items():
        print(f"{name}_redis_cpu_ms_per_call: {per_call * ms:.3f}")
    engine_total = engine_client + cpu_per_call["engine"] + engine_redis
    echo_total = echo_client + echo_per_call
    print(f"engine_total_cpu_ms_per_call: {engine_total * ms:.3f}")
    print(f"echo_total_cpu_ms_per_call: {echo_total * ms:.3f}")
    # What the ratio would be were every process of both runs bound by CPU alone.
    actions_per_call = engine_stats.actions / calls
    print(f"engine_vs_echo_total_cpu_ratio: {echo_total / engine_total * actions_per_call:.3f}")
    # The same, were the engine server no dearer per call than the echo server: the most
    # any work on the engine's own code can bring in this harness.
    bound = echo_total / (engine_client + echo_per_call + engine_redis) * actions_per_call
    print(f"ratio_bound_server_as_echo: {bound:.3f}")
    print(f"engine_request_bytes: {engine_stats.request_bytes / calls:.0f}")
    print(f"engine_response_bytes: {engine_stats.response_bytes / calls:.0f}")
    print(f"echo_request_bytes: {ECHO_REQUEST_BYTES}")
    print(f"echo_response_bytes: {ECHO_RESPONSE_BYTES}")
    every = [echo_stats, latency_errors, *(load.stats for load in loads.values())]
    print(f"errors: {sum(stats.errors for stats in every)}")
    for stats in every:
        if stats.error_kinds:
            print(f"error_kinds: {stats.error_kinds}")
            for line in stats.first_errors:
                print(f"first_error: {line}")
    # Other work on the machine skews the figures; the load average says how much.
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")

if __name__ == "__main__":
    main()
