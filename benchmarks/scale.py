"""Scale-out benchmark: matches per second with 1 vs 2 `battleline serve` processes on one
Redis, the same load both times.

    python benchmarks/scale.py            # 3 rounds of 100 matches per setting
    python benchmarks/scale.py --quick    # 2 rounds of 40 matches per setting

Bot-vs-bot LOCAL matches (basic ruleset, a troop play and its draw in one request)
are played through the public gRPC API by client processes that alternate engines per
call, with the fault tests' driver (tests/deploy/load.py). Redis is one redis-server
with the deployment's durability (append-only, fsync always) unless --fsync says
otherwise. Prints `name: value` lines. Every process shares this machine's cores, so
the ratio shows what a second engine buys when the engines are the bottleneck and
nothing else is added.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.deploy.load import Driver
from tests.deploy.procs import EngineProcess, RedisNode

FAST_ENV = {"BATTLELINE_CREATE_RATE": "100000", "BATTLELINE_ACTION_RATE": "100000",
            "BATTLELINE_LOG_LEVEL": "warning"}


def _client(addresses: list[str], matches: int, concurrency: int, seed: int) -> tuple[int, int]:
    """One client process: play `matches` matches; returns (matches, actions)."""

    async def main() -> tuple[int, int]:
        driver = Driver(addresses, seed=seed)
        try:
            await driver.run(matches, concurrency)
        finally:
            await driver.close()
        return driver.stats.matches, driver.stats.actions

    return asyncio.run(main())


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(redis_url: str, redis_pid: int, engines: int, matches: int, clients: int,
            concurrency: int) -> tuple[float, float, float, float]:
    """Matches/s, actions/s, and engine and Redis CPU seconds per match, with `engines`
    engine processes (after a short warm-up)."""
    procs = [EngineProcess(redis_url, extra_env=FAST_ENV) for _ in range(engines)]
    try:
        for proc in procs:
            proc.start()
        addresses = [p.address for p in procs]
        with ProcessPoolExecutor(clients) as pool:
            list(pool.map(_client, [addresses] * clients, [2] * clients, [2] * clients,
                          range(clients)))  # warm-up: imports, connections, caches
            pids = [p.process.pid for p in procs if p.process is not None]
            cpu_before = sum(cpu_s(pid) for pid in pids), cpu_s(redis_pid)
            start = time.monotonic()
            results = list(pool.map(_client, [addresses] * clients,
                                    [matches // clients] * clients, [concurrency] * clients,
                                    range(100, 100 + clients)))
            seconds = time.monotonic() - start
            engine_cpu = sum(cpu_s(pid) for pid in pids) - cpu_before[0]
            redis_cpu = cpu_s(redis_pid) - cpu_before[1]
    finally:
        for proc in procs:
            proc.stop()
    played = sum(r[0] for r in results)
    actions = sum(r[1] for r in results)
    return played / seconds, actions / seconds, engine_cpu / played, redis_cpu / played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 40 matches")
    parser.add_argument("--matches", type=int, default=0, help="matches per setting and round")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (1 then 2 engines each)")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--concurrency", type=int, default=16, help="matches per client")
    parser.add_argument("--fsync", choices=["always", "everysec", "no"], default="always")
    args = parser.parse_args()
    matches = args.matches or (40 if args.quick else 100)
    rounds = args.rounds or (2 if args.quick else 3)
    # Settings alternate round by round and the median is reported, so other work on
    # the machine weighs on both settings alike.
    runs: dict[int, list[tuple[float, float, float, float]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        node = RedisNode(Path(tmp) / "redis", durable=True)
        node.start()
        try:
            client = redis.Redis(port=node.port)
            client.config_set("appendfsync", args.fsync)
            assert node.process is not None
            for _ in range(rounds):
                for engines in (1, 2):
                    client.flushall()
                    runs[engines].append(measure(node.url, node.process.pid, engines, matches,
                                                 args.clients, args.concurrency))
            client.close()
        finally:
            node.stop()
    figures = {n: tuple(statistics.median(r[i] for r in rs) for i in range(4))
               for n, rs in runs.items()}
    print(f"cpus: {os.cpu_count()}")
    print(f"matches_per_round: {matches}")
    print(f"rounds: {rounds}")
    print(f"client_processes: {args.clients}")
    print(f"concurrent_matches: {args.clients * args.concurrency}")
    print(f"redis_appendfsync: {args.fsync}")
    for engines, (mps, aps, engine_cpu, redis_cpu) in figures.items():
        tag = f"{engines}_engine{'s' if engines > 1 else ''}"
        print(f"matches_per_s_{tag}: {mps:.2f}")
        print(f"actions_per_s_{tag}: {aps:.0f}")
        print(f"engine_cpu_ms_per_match_{tag}: {engine_cpu * 1000:.0f}")
        print(f"redis_cpu_ms_per_match_{tag}: {redis_cpu * 1000:.0f}")
    for engines, rs in runs.items():
        print(f"matches_per_s_{engines}_runs: {' '.join(f'{r[0]:.2f}' for r in rs)}")
    print(f"ratio_2_vs_1: {figures[2][0] / figures[1][0]:.2f}")
    # Other work on the machine skews the figures; the load average says how much.
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
