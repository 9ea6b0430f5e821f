"""`battleline serve --workers N` on one port: engine CPU per call with N = 1 and 2, and
the share of calls each engine process served.

    python benchmarks/workers.py            # 3 rounds of 400 concurrent matches per N
    python benchmarks/workers.py --quick    # 1 round of 100

The load is engine.py's (bot-vs-bot LOCAL matches, each client process on 16
connections); the kernel spreads connections over the processes that share the port
(SO_REUSEPORT), so the shares follow the connections, not the calls. On a machine whose
cores the clients and Redis share, throughput shows little; CPU per call (from each
engine process's own /proc stat) and the shares show what the second process takes.
Prints `name: value` lines; settings alternate round by round, medians reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from battleline_engine.redis_server import EmbeddedRedis
from benchmarks.engine import SERVE, _engine_worker, cpu_seconds, in_processes, start_listening
from tests.processes import calls_served, children, command_line, free_port


def measure(url: str, workers: int, matches: int, clients: int, seed: int,
            ) -> tuple[float, float, list[float], int]:
    """Calls/s, engine CPU seconds per call (all processes), each process's share of the
    calls, and errors."""
    metrics = free_port()
    serve, address = start_listening(
        [*SERVE, "--workers", str(workers), "--metrics-port", str(metrics)], {"REDIS_URL": url})
    try:
        pids = [serve.pid] + [child for child in children(serve.pid)
                              if "serve" in " ".join(command_line(child))]
        assert len(pids) == workers, pids
        ports = [metrics + i for i in range(workers)]
        cpu = [cpu_seconds(pid) for pid in pids]
        served = [calls_served(port) for port in ports]
        shares = [matches // clients + (i < matches % clients) for i in range(clients)]
        stats, seconds = in_processes(_engine_worker, clients,
                                      [(address, k, seed + 100_000 * i)
                                       for i, k in enumerate(shares)])
        cpu_used = sum(cpu_seconds(pid) for pid in pids) - sum(cpu)
        served = [calls_served(port) - before for port, before in zip(ports, served, strict=True)]
    finally:
        serve.terminate()
        serve.wait(30)
    total = max(1, sum(served))
    return (stats.calls / seconds, cpu_used / max(1, stats.calls),
            sorted((n / total for n in served), reverse=True), stats.errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 100 matches")
    parser.add_argument("--matches", type=int, help="concurrent matches (default 400)")
    parser.add_argument("--rounds", type=int, help="rounds (N = 1 then 2 in each)")
    parser.add_argument("--clients", type=int, default=2, help="load-generating processes")
    args = parser.parse_args()
    matches = args.matches or (100 if args.quick else 400)
    rounds = args.rounds or (1 if args.quick else 3)
    runs: dict[int, list[tuple[float, float, list[float], int]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        redis = EmbeddedRedis(Path(tmp) / "redis")
        url = redis.start()
        try:
            for r in range(rounds):
                for workers in runs:
                    runs[workers].append(measure(url, workers, matches, args.clients, 1 + r))
        finally:
            redis.stop()
    print(f"cpus: {os.cpu_count()}")
    print(f"concurrent_matches: {matches}")
    print(f"rounds: {rounds}")
    for workers, results in runs.items():
        print(f"calls_per_s_workers_{workers}: "
              f"{statistics.median(r[0] for r in results):.1f}")
        print(f"engine_cpu_ms_per_call_workers_{workers}: "
              f"{statistics.median(r[1] for r in results) * 1000:.3f}")
    for r in runs[2]:
        print(f"call_shares_workers_2: {' '.join(f'{share:.2f}' for share in r[2])}")
    print(f"errors: {sum(r[3] for results in runs.values() for r in results)}")
    # Other work on the machine skews the figures; the load average says how much.
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
